// 256-bit integer dot kernels for the weight types beyond Q8_0/Q4_0/Q4_K/Q6_K: Q4_1, Q5_0,
// Q5_1, IQ4_NL (with Q8_0 activation rows) and Q2_K, Q3_K, Q5_K, IQ4_XS (Q8_K rows).
// Included by dot_int8.h (same namespace, same helpers, same rules: integer sums exact,
// scaling in f32, one weight row read once for R ≤ 4 activation rows).

// byte i = 0xFF where bit i of the 32 bits at p is set, else 0
inline __m256i bits_to_bytes32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(v)),
      _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0x0000000000000000));
  return _mm256_cmpeq_epi8(_mm256_or_si256(spread, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe)), _mm256_set1_epi64x(-1));
}

// the 16 IQ4_NL levels, in both 128-bit lanes (for a byte shuffle)
inline __m256i iq4nl_table() {
  return _mm256_setr_epi8(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113, -127, -104, -83, -65,
                          -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);
}

// Σ of 4 s8·s8 products per int32 lane (|w| ≤ 127; x never −128 from a finite row)
inline __m256i dot_s8(__m256i w, __m256i x) {
  return dpbusd(_mm256_setzero_si256(), _mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
}

// ---- blocks of 32 with Q8_0 rows ----
// Kind: the u8 (or s8) values of one block in order, its d, and what the dot adds:
//   Q5_0: u = q (0..31), Σ (q−16)·x = dpbusd(u, x) − 16·Σx
//   Q4_1 / Q5_1: u = q, value d·q + m = d·(q − c) + (m + c·d), c = 8 / 16:
//                d·dx·(Σ q·x − c·Σx) + (m + c·d)·dx·Σx
//   IQ4_NL: s8 levels, sign trick
enum class Q32 { kQ4_1, kQ5_0, kQ5_1, kIQ4_NL };

template <Q32 T>
constexpr int q32_bytes() {
  return T == Q32::kQ4_1 ? 20 : T == Q32::kQ5_0 ? 22 : T == Q32::kQ5_1 ? 24 : 18;
}

template <int R, Q32 T>
void dot_q32_rows(const uint8_t* w, const loom::XQ8_0* x, int K, float* res) {
  constexpr int kB = q32_bytes<T>();
  // q taken as q − centre, plus (m + centre·d) for Q4_1/Q5_1: centred sums lose no digits to cancellation
  constexpr int kCentre = T == Q32::kQ4_1 ? 8 : 16;
  __m256 acc[2][R];
  float bias[R];
  LOOM_UNROLL for (int r = 0; r < R; r++) {
    acc[0][r] = acc[1][r] = _mm256_setzero_ps();
    bias[r] = 0;
  }
  const __m256i table = iq4nl_table(), m16 = _mm256_set1_epi8(16);
  const int nb = K / 32;
  for (int b = 0; b < nb; b++) {
    const uint8_t* blk = w + kB * b;
    if ((b & 1) == 0) LOOM_PREFETCH(blk);
    const float dw = f16_scalar(blk);
    __m256i q;
    if (T == Q32::kQ4_1) q = q4_0_unpack(blk + 4);
    if (T == Q32::kQ5_0) q = _mm256_or_si256(q4_0_unpack(blk + 6), _mm256_and_si256(bits_to_bytes32(blk + 2), m16));
    if (T == Q32::kQ5_1) q = _mm256_or_si256(q4_0_unpack(blk + 8), _mm256_and_si256(bits_to_bytes32(blk + 4), m16));
    if (T == Q32::kIQ4_NL) q = _mm256_shuffle_epi8(table, q4_0_unpack(blk + 2));
    const int u = b & 1;
    LOOM_UNROLL for (int r = 0; r < R; r++) {
      const __m256i xv = loadu256(x[r].q + 32 * b);
      __m256i p;
      if (T == Q32::kIQ4_NL) p = dot_s8(q, xv);
      else p = dpbusd(_mm256_castsi128_si256(_mm_cvtsi32_si128(-kCentre * x[r].s[b])), q, xv);
      acc[u][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(dw * x[r].d[b]), acc[u][r]);
      if (T == Q32::kQ4_1 || T == Q32::kQ5_1) bias[r] += (f16_scalar(blk + 2) + kCentre * dw) * x[r].d[b] * static_cast<float>(x[r].s[b]);
    }
  }
  LOOM_UNROLL for (int r = 0; r < R; r++) res[r] = hsum256(_mm256_add_ps(acc[0][r], acc[1][r])) + bias[r];
}

// ---- super-blocks of 256 with Q8_K rows ----

// int16 lanes 0..7 ← a, lanes 8..15 ← b
inline __m256i scale_pair16(int a, int b) { return _mm256_set_m128i(_mm_set1_epi16(static_cast<short>(b)), _mm_set1_epi16(static_cast<short>(a))); }

// Q2_K: dx·(d·Σ_j sc_j·Σ q·x − dmin·Σ_j m_j·Σx_j), sub-blocks of 16, q in 0..3
template <int R>
void dot_q2_k_rows(const uint8_t* w, const loom::XQ8_K* x, int K, float* res) {
  __m256 acc[R];
  float mins_acc[R];
  LOOM_UNROLL for (int r = 0; r < R; r++) {
    acc[r] = _mm256_setzero_ps();
    mins_acc[r] = 0;
  }
  const __m256i m3 = _mm256_set1_epi8(3);
  for (int b = 0; b < K / 256; b++) {
    const uint8_t* blk = w + 84 * b;
    LOOM_PREFETCH(blk);
    LOOM_PREFETCH(blk + 64);
    const __m128i sm = loadu128(blk);
    const __m256i mins16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sm, 4), _mm_set1_epi8(15)));
    const float d = f16_scalar(blk + 80), dmin = f16_scalar(blk + 82);
    __m256i isum[R];
    LOOM_UNROLL for (int r = 0; r < R; r++) isum[r] = _mm256_setzero_si256();
    LOOM_UNROLL for (int n = 0; n < 2; n++) {
      const __m256i qs = loadu256(blk + 16 + 32 * n);
      LOOM_UNROLL for (int j = 0; j < 4; j++) {
        const int sb = 8 * n + 2 * j;
        const __m256i q = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * j), m3);
        const __m256i sc = scale_pair16(blk[sb] & 15, blk[sb + 1] & 15);
        LOOM_UNROLL for (int r = 0; r < R; r++)
          isum[r] = _mm256_add_epi32(isum[r], scaled_dot(q, loadu256(x[r].q + 256 * b + 16 * sb), sc));
      }
    }
    LOOM_UNROLL for (int r = 0; r < R; r++) {
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r]), _mm256_set1_ps(d * x[r].d[b]), acc[r]);
      const int32_t msum = hsum256_epi32(_mm256_madd_epi16(mins16, loadu256(x[r].s16 + 16 * b)));
      mins_acc[r] += dmin * x[r].d[b] * static_cast<float>(msum);
    }
  }
  LOOM_UNROLL for (int r = 0; r < R; r++) res[r] = hsum256(acc[r]) - mins_acc[r];
}

// Q3_K's 16 six-bit scales minus 32, as int16 (ggml's kmask unpacking)
inline void q3_k_scales(const uint8_t* s, int16_t out[16]) {
  uint32_t a[3], u[4];
  std::memcpy(a, s, 12);
  const uint32_t k1 = 0x03030303, k2 = 0x0f0f0f0f;
  u[0] = (a[0] & k2) | ((a[2] & k1) << 4);
  u[1] = (a[1] & k2) | (((a[2] >> 2) & k1) << 4);
  u[2] = ((a[0] >> 4) & k2) | (((a[2] >> 4) & k1) << 4);
  u[3] = ((a[1] >> 4) & k2) | (((a[2] >> 6) & k1) << 4);
  uint8_t b[16];
  std::memcpy(b, u, 16);
  for (int i = 0; i < 16; i++) out[i] = static_cast<int16_t>(b[i] - 32);
}

// Q3_K: d·dx·Σ_j sc_j·(Σ q·x − 4·Σx_j), q = 2 low bits | hmask bit << 2 (0..7, the weight q − 4)
template <int R>
void dot_q3_k_rows(const uint8_t* w, const loom::XQ8_K* x, int K, float* res) {
  __m256 acc[R];
  LOOM_UNROLL for (int r = 0; r < R; r++) acc[r] = _mm256_setzero_ps();
  const __m256i m3 = _mm256_set1_epi8(3), m4 = _mm256_set1_epi8(4);
  for (int b = 0; b < K / 256; b++) {
    const uint8_t* blk = w + 110 * b;
    LOOM_PREFETCH(blk);
    LOOM_PREFETCH(blk + 64);
    alignas(32) int16_t sc[16];
    q3_k_scales(blk + 96, sc);
    const __m256i sc16 = _mm256_load_si256(reinterpret_cast<const __m256i*>(sc));
    const float d = f16_scalar(blk + 108);
    const __m256i hm = loadu256(blk);
    __m256i isum[R], corr[R];
    LOOM_UNROLL for (int r = 0; r < R; r++) {
      isum[r] = _mm256_setzero_si256();
      corr[r] = _mm256_madd_epi16(sc16, loadu256(x[r].s16 + 16 * b));
    }
    LOOM_UNROLL for (int n = 0; n < 2; n++) {
      const __m256i qs = loadu256(blk + 32 + 32 * n);
      LOOM_UNROLL for (int j = 0; j < 4; j++) {
        const int sb = 8 * n + 2 * j;
        const __m256i hi = _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(hm, 4 * n + j), 2), m4);
        const __m256i q = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qs, 2 * j), m3), hi);
        const __m256i s = scale_pair16(sc[sb], sc[sb + 1]);
        LOOM_UNROLL for (int r = 0; r < R; r++)
          isum[r] = _mm256_add_epi32(isum[r], scaled_dot(q, loadu256(x[r].q + 256 * b + 16 * sb), s));
      }
    }
    LOOM_UNROLL for (int r = 0; r < R; r++) {
      const __m256i t = _mm256_sub_epi32(isum[r], _mm256_slli_epi32(corr[r], 2));
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(t), _mm256_set1_ps(d * x[r].d[b]), acc[r]);
    }
  }
  LOOM_UNROLL for (int r = 0; r < R; r++) res[r] = hsum256(acc[r]);
}

// Q5_K: as Q4_K, q += 16 where bit 2c (low nibbles) / 2c+1 (high) of qh[l] is set
template <int R>
void dot_q5_k_rows(const uint8_t* w, const loom::XQ8_K* x, int K, float* res) {
  __m256 acc[R];
  float mins_acc[R];
  LOOM_UNROLL for (int r = 0; r < R; r++) {
    acc[r] = _mm256_setzero_ps();
    mins_acc[r] = 0;
  }
  const __m256i m4 = _mm256_set1_epi8(15), m16 = _mm256_set1_epi8(16);
  for (int b = 0; b < K / 256; b++) {
    const uint8_t* blk = w + 176 * b;
    LOOM_PREFETCH(blk);
    LOOM_PREFETCH(blk + 64);
    LOOM_PREFETCH(blk + 128);
    uint8_t sm[16];
    q4_k_scales(blk + 4, sm);
    const float d = f16_scalar(blk), dmin = f16_scalar(blk + 2);
    const __m128i mins16 = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sm + 8)));
    const __m256i qh = loadu256(blk + 16);
    __m256i isum[R];
    LOOM_UNROLL for (int r = 0; r < R; r++) isum[r] = _mm256_setzero_si256();
    LOOM_UNROLL for (int c = 0; c < 4; c++) {
      const __m256i qs = loadu256(blk + 48 + 32 * c);
      const __m256i lo = _mm256_or_si256(_mm256_and_si256(qs, m4), _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh, 2 * c), 4), m16));
      const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qs, 4), m4),
                                         _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh, 2 * c + 1), 4), m16));
      const __m256i s_lo = _mm256_set1_epi16(sm[2 * c]), s_hi = _mm256_set1_epi16(sm[2 * c + 1]);
      LOOM_UNROLL for (int r = 0; r < R; r++) {
        const int8_t* q8 = x[r].q + 256 * b + 64 * c;
        isum[r] = _mm256_add_epi32(isum[r], scaled_dot(lo, loadu256(q8), s_lo));
        isum[r] = _mm256_add_epi32(isum[r], scaled_dot(hi, loadu256(q8 + 32), s_hi));
      }
    }
    LOOM_UNROLL for (int r = 0; r < R; r++) {
      const float dx = x[r].d[b];
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r]), _mm256_set1_ps(d * dx), acc[r]);
      const __m128i mm = _mm_madd_epi16(mins16, loadu128(x[r].s32 + 8 * b));
      const __m128i t = _mm_add_epi32(mm, _mm_shuffle_epi32(mm, 0x4e));
      mins_acc[r] += dmin * dx * static_cast<float>(_mm_cvtsi128_si32(_mm_add_epi32(t, _mm_shuffle_epi32(t, 0xb1))));
    }
  }
  LOOM_UNROLL for (int r = 0; r < R; r++) res[r] = hsum256(acc[r]) - mins_acc[r];
}

// IQ4_XS: d·dx·Σ_j (ls_j − 32)·Σ level·x over sub-blocks of 32
template <int R>
void dot_iq4_xs_rows(const uint8_t* w, const loom::XQ8_K* x, int K, float* res) {
  __m256 acc[R];
  LOOM_UNROLL for (int r = 0; r < R; r++) acc[r] = _mm256_setzero_ps();
  const __m256i table = iq4nl_table();
  for (int b = 0; b < K / 256; b++) {
    const uint8_t* blk = w + 136 * b;
    LOOM_PREFETCH(blk);
    LOOM_PREFETCH(blk + 64);
    LOOM_PREFETCH(blk + 128);
    const float d = f16_scalar(blk);
    const int h = blk[2] | (blk[3] << 8);
    __m256i isum[R];
    LOOM_UNROLL for (int r = 0; r < R; r++) isum[r] = _mm256_setzero_si256();
    LOOM_UNROLL for (int j = 0; j < 8; j++) {
      const int ls = (((blk[4 + (j >> 1)] >> (4 * (j & 1))) & 15) | (((h >> (2 * j)) & 3) << 4)) - 32;
      const __m256i v = _mm256_shuffle_epi8(table, q4_0_unpack(blk + 8 + 16 * j));
      const __m256i av = _mm256_sign_epi8(v, v);
      const __m256i s = _mm256_set1_epi16(static_cast<short>(ls));
      LOOM_UNROLL for (int r = 0; r < R; r++) {
        const __m256i sx = _mm256_sign_epi8(loadu256(x[r].q + 256 * b + 32 * j), v);
        isum[r] = _mm256_add_epi32(isum[r], _mm256_madd_epi16(_mm256_maddubs_epi16(av, sx), s));
      }
    }
    LOOM_UNROLL for (int r = 0; r < R; r++)
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r]), _mm256_set1_ps(d * x[r].d[b]), acc[r]);
  }
  LOOM_UNROLL for (int r = 0; r < R; r++) res[r] = hsum256(acc[r]);
}
