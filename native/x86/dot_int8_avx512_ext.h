// 512-bit dot kernels for Q3_K, Q2_K and IQ4_XS (included by matmul_avx512.cc after
// dot_int8_avx512.h, whose helpers they share). Q3_K, Q2_K: one 256-value block per step, 64
// values per vector. Both store value 128n + 32j + l (l < 32) in bits 2j..2j+1 of qs[32n + l]
// (Q3_K: its third bit is bit 4n + j of hmask[l]), sub-blocks of 16 values: the two 32-value
// rows j, j+1 of a half n make one vector (sub-blocks 8n + 2j .. 8n + 2j + 3), multiplied
// by maddubs, scaled by dpwssd with q6_k_quad_scales.

// Q3_K's 16 six-bit scales minus 32 as int16, from the 12 bytes at blk + 96 (read as bytes
// 2..13 of the 16 at blk + 94, inside the block): low nibble of byte k (k < 8) or high nibble
// of byte k − 8, and bits 2·(k / 4) of byte 8 + k % 4 above them
inline __m256i q3_k_scales16(const uint8_t* blk) {
  const __m128i v = loadu128(blk + 94);
  const __m128i t = _mm_shuffle_epi8(v, _mm_setr_epi8(2, 3, 4, 5, 6, 7, 8, 9, 2, 3, 4, 5, 6, 7, 8, 9));
  const __m128i lo = _mm_and_si128(_mm_mask_blend_epi8(0xFF00, t, _mm_srli_epi16(t, 4)), _mm_set1_epi8(15));
  const __m128i h = _mm_shuffle_epi8(v, _mm_setr_epi8(10, 11, 12, 13, 10, 11, 12, 13, 10, 11, 12, 13, 10, 11, 12, 13));
  const __m128i hi = _mm_and_si128(_mm_srlv_epi16(h, _mm_setr_epi16(0, 0, 2, 2, 4, 4, 6, 6)), _mm_set1_epi8(3));
  const __m128i sc = _mm_sub_epi8(_mm_or_si128(lo, _mm_slli_epi16(hi, 4)), _mm_set1_epi8(32));
  return _mm256_cvtepi8_epi16(sc);
}

// Q2_K / Q3_K: the 2-bit values of quarter c (rows j = 2(c % 2) and j + 1 of half c / 2),
// from that half's 32 bytes
template <int c>
inline __m512i two_bit_quarter(const uint8_t* half) {
  constexpr int s = 4 * (c % 2);  // row j at bits 2j..2j+1
  const __m512i qs = _mm512_broadcast_i64x4(loadu256(half));
  return _mm512_and_si512(_mm512_srlv_epi64(qs, _mm512_setr_epi64(s, s, s, s, s + 2, s + 2, s + 2, s + 2)), _mm512_set1_epi8(3));
}

// Q3_K: d·dx·Σ_j sc_j·(Σ q·x − 4·Σx_j), q = 2 low bits | hmask bit << 2 in 0..7.
// NW weight rows (ws apart) against R prepared rows, res[n·R + r]: one weight row against a few
// activation rows (dot_rows_driver), or four weight rows against one (one_row_in_stretches).
template <int NW, int R>
void dot_q3_k_512(const uint8_t* w, size_t ws, const loom::XQ8_K* x, int K, float* res) {
  __m512 acc[NW][R];
  LOOM_UNROLL for (int n = 0; n < NW; n++) LOOM_UNROLL for (int r = 0; r < R; r++) acc[n][r] = _mm512_setzero_ps();
  for (int b = 0; b < K / 256; b++) {
    if (NW == 1) {  // one weight stream (see LOOM_PREFETCH_AHEAD): 110 bytes, two lines mostly
      LOOM_PREFETCH(w + 110 * b);
      LOOM_PREFETCH(w + 110 * b + 64);
    }
    __m512i sc[NW], hm[NW], isum[NW][R];
    __m256i corr[NW][R];
    float d[NW];
    LOOM_UNROLL for (int n = 0; n < NW; n++) {
      const uint8_t* blk = w + ws * n + 110 * b;
      const __m256i sc16 = q3_k_scales16(blk);
      sc[n] = _mm512_castsi256_si512(sc16);
      d[n] = f16_scalar(blk + 108);
      hm[n] = _mm512_broadcast_i64x4(loadu256(blk));
      LOOM_UNROLL for (int r = 0; r < R; r++) {
        isum[n][r] = _mm512_setzero_si512();
        corr[n][r] = _mm256_madd_epi16(sc16, loadu256(x[r].s16 + 16 * b));  // Σ sc_j·Σx_j, 8 int32
      }
    }
    const auto quarter = [&](auto qc) {  // half h = c / 2, rows j = 2(c % 2), +1
      constexpr int c = decltype(qc)::value, h = c / 2, j = 2 * (c % 2);
      __m512i xc[R];
      LOOM_UNROLL for (int r = 0; r < R; r++) xc[r] = _mm512_loadu_si512(x[r].q + 256 * b + 64 * c);
      LOOM_UNROLL for (int n = 0; n < NW; n++) {
        const __m512i lo = two_bit_quarter<c>(w + ws * n + 110 * b + 32 + 32 * h);
        // + 4 where the third bit is set: bit 4h + j of the hmask bytes for row j, the next for row j + 1
        const __m512i q = add_where_bit<4 * h + j, 4 * h + j + 1, 4>(lo, hm[n]);
        const __m512i s = q6_k_quad_scales<c>(sc[n]);
        LOOM_UNROLL for (int r = 0; r < R; r++) isum[n][r] = _mm512_dpwssd_epi32(isum[n][r], _mm512_maddubs_epi16(q, xc[r]), s);
      }
    };
    unrolled<4>(quarter);
    LOOM_UNROLL for (int n = 0; n < NW; n++) LOOM_UNROLL for (int r = 0; r < R; r++) {
      const __m512i t = _mm512_sub_epi32(isum[n][r], _mm512_zextsi256_si512(_mm256_slli_epi32(corr[n][r], 2)));
      acc[n][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(t), _mm512_set1_ps(d[n] * x[r].d[b]), acc[n][r]);
    }
  }
  LOOM_UNROLL for (int n = 0; n < NW; n++) LOOM_UNROLL for (int r = 0; r < R; r++) res[n * R + r] = hsum512(acc[n][r]);
}

// Q2_K: dx·(d·Σ_j sc_j·Σ q·x − dmin·Σ_j m_j·Σx_j), q in 0..3, scales[j] = sc | m << 4; NW
// weight rows against R prepared rows as dot_q3_k_512
template <int NW, int R>
void dot_q2_k_512(const uint8_t* w, size_t ws, const loom::XQ8_K* x, int K, float* res) {
  __m512 acc[NW][R];
  __m256 mins_acc[NW][R];
  LOOM_UNROLL for (int n = 0; n < NW; n++) LOOM_UNROLL for (int r = 0; r < R; r++) {
    acc[n][r] = _mm512_setzero_ps();
    mins_acc[n][r] = _mm256_setzero_ps();
  }
  for (int b = 0; b < K / 256; b++) {
    if (NW == 1) {  // one weight stream: 84 bytes, two lines at most
      LOOM_PREFETCH(w + 84 * b);
      LOOM_PREFETCH(w + 84 * b + 64);
    }
    __m512i sc[NW], isum[NW][R];
    __m256i mins16[NW];
    float d[NW], dmin[NW];
    LOOM_UNROLL for (int n = 0; n < NW; n++) {
      const uint8_t* blk = w + ws * n + 84 * b;
      const __m128i sm = loadu128(blk);
      sc[n] = _mm512_castsi256_si512(_mm256_cvtepu8_epi16(_mm_and_si128(sm, _mm_set1_epi8(15))));
      mins16[n] = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sm, 4), _mm_set1_epi8(15)));
      d[n] = f16_scalar(blk + 80);
      dmin[n] = f16_scalar(blk + 82);
      LOOM_UNROLL for (int r = 0; r < R; r++) isum[n][r] = _mm512_setzero_si512();
    }
    const auto quarter = [&](auto qc) {
      constexpr int c = decltype(qc)::value, h = c / 2;
      __m512i xc[R];
      LOOM_UNROLL for (int r = 0; r < R; r++) xc[r] = _mm512_loadu_si512(x[r].q + 256 * b + 64 * c);
      LOOM_UNROLL for (int n = 0; n < NW; n++) {
        const __m512i q = two_bit_quarter<c>(w + ws * n + 84 * b + 16 + 32 * h);
        const __m512i s = q6_k_quad_scales<c>(sc[n]);
        LOOM_UNROLL for (int r = 0; r < R; r++) isum[n][r] = _mm512_dpwssd_epi32(isum[n][r], _mm512_maddubs_epi16(q, xc[r]), s);
      }
    };
    unrolled<4>(quarter);
    LOOM_UNROLL for (int n = 0; n < NW; n++) LOOM_UNROLL for (int r = 0; r < R; r++) {
      const float dx = x[r].d[b];
      acc[n][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[n][r]), _mm512_set1_ps(d[n] * dx), acc[n][r]);
      const __m256i mm = _mm256_madd_epi16(mins16[n], loadu256(x[r].s16 + 16 * b));
      mins_acc[n][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(mm), _mm256_set1_ps(dmin[n] * dx), mins_acc[n][r]);
    }
  }
  LOOM_UNROLL for (int n = 0; n < NW; n++) LOOM_UNROLL for (int r = 0; r < R; r++)
    res[n * R + r] = hsum512(acc[n][r]) - hsum256(mins_acc[n][r]);
}

// The two drivers' kernel shapes over a <NW, R> kernel: R activation rows against one weight
// row; NW weight rows against one activation row
template <void (*F)(const uint8_t*, size_t, const loom::XQ8_K*, int, float*)>
void xrows_of(const uint8_t* w, const loom::XQ8_K* x, int K, float* res) {
  F(w, 0, x, K, res);
}
template <void (*F)(const uint8_t*, size_t, const loom::XQ8_K*, int, float*)>
void wrows_of(const uint8_t* w, size_t ws, const loom::XQ8_K& x, int K, float* res) {
  F(w, ws, &x, K, res);
}

using QkKernel = void (*)(const uint8_t*, size_t, const loom::XQ8_K*, int, float*);

// One activation row: W4 (four weight rows) over stretches, W1 for the last rows; a few rows:
// W1, R2, R3, R4 (one weight row against 1..4 activation rows)
template <QkKernel W4, QkKernel W1, QkKernel R2, QkKernel R3, QkKernel R4>
void dot_nw_r(const uint8_t* xa, size_t xstride, int rows, const uint8_t* w, size_t wstride, int K, int o0, int o1,
              float* out, int N) {
  if (rows == 1) {
    one_row_in_stretches(loom::xq8_k_view(xa, K), w, wstride, K, o0, o1, out, wrows_of<W4>, wrows_of<W1>);
    return;
  }
  dot_rows_driver(xa, xstride, rows, w, wstride, K, o0, o1, out, N, loom::xq8_k_view, xrows_of<W1>, xrows_of<R2>,
                  xrows_of<R3>, xrows_of<R4>);
}

// ---- IQ4_XS · Q8_K: one 256-value block per step, two sub-blocks of 32 per vector ----
//
// A block is f16 d, u16 scales_h, u8 scales_l[4], then 16 bytes per sub-block j of 32
// values: value l (l < 16) in the low nibble of byte l, value 16 + l in its high nibble, a
// nibble indexing the IQ4_NL levels; sub-block j's scale is d·(ls_j − 32), ls_j 6 bits (low 4
// in nibble j of scales_l, high 2 in bits 2j..2j+1 of scales_h). The 32 bytes of sub-blocks
// 2c, 2c+1 broadcast to both halves and shifted by 0 / 4 give 128-bit lanes (2c low, 2c+1 low,
// 2c high, 2c+1 high); the activations' middle lanes are swapped to match (one lane shuffle,
// shared by all weight rows). Levels + 128 as u8 (iq4nl_table_u8) go into dpbusd; the bias
// comes back out as 128·Σ_j scale_j·Σx_j per block.

// The 8 sub-block scales (ls_j − 32) of the block at blk, as f32
inline __m256 iq4_xs_scales(const uint8_t* blk) {
  const __m128i v = loadu128(blk);
  const __m128i l = _mm_shuffle_epi8(v, _mm_setr_epi8(4, -1, 4, -1, 5, -1, 5, -1, 6, -1, 6, -1, 7, -1, 7, -1));
  const __m128i lo = _mm_and_si128(_mm_srlv_epi16(l, _mm_setr_epi16(0, 4, 0, 4, 0, 4, 0, 4)), _mm_set1_epi16(15));
  const __m128i h = _mm_shuffle_epi8(v, _mm_setr_epi8(2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3));
  const __m128i hi = _mm_and_si128(_mm_srlv_epi16(h, _mm_setr_epi16(0, 2, 4, 6, 8, 10, 12, 14)), _mm_set1_epi16(3));
  const __m128i ls = _mm_sub_epi16(_mm_or_si128(lo, _mm_slli_epi16(hi, 4)), _mm_set1_epi16(32));
  return _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(ls));
}

// NW weight rows (ws apart) against one prepared row (see one_row_in_stretches). (For a few
// activation rows the 256-bit kernel of dot_int8 is as fast: 9.4 against 10.5 cycles a
// block of 32 for 4 rows, where this one-weight-row form re-permutes the scales per row.)
template <int NW>
void dot_iq4_xs_wrows512(const uint8_t* w, size_t ws, const loom::XQ8_K& x, int K, float* res) {
  __m512 acc[NW];
  __m256 bias[NW];
  LOOM_UNROLL for (int n = 0; n < NW; n++) {
    acc[n] = _mm512_setzero_ps();
    bias[n] = _mm256_setzero_ps();
  }
  const __m512i table = iq4nl_table_u8();
  for (int b = 0; b < K / 256; b++) {
    const __m256 sx = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(loadu128(x.s32 + 8 * b))), _mm256_set1_ps(128.f));
    __m512 scale[NW];  // sub-block j's d·dx·(ls_j − 32) in lane j
    LOOM_UNROLL for (int n = 0; n < NW; n++) {
      const uint8_t* blk = w + ws * n + 136 * b;
      const __m256 s = _mm256_mul_ps(iq4_xs_scales(blk), _mm256_set1_ps(f16_scalar(blk) * x.d[b]));
      scale[n] = _mm512_castps256_ps512(s);
      bias[n] = _mm256_fmadd_ps(s, sx, bias[n]);
    }
    const auto chunk = [&](auto cc) {  // sub-blocks 2c, 2c+1
      constexpr int c = decltype(cc)::value;
      const __m512i xv = _mm512_loadu_si512(x.q + 256 * b + 64 * c);
      const __m512i xc = _mm512_shuffle_i32x4(xv, xv, 0xD8);  // lanes 0, 2, 1, 3
      const __m512i idx = _mm512_setr_epi32(2 * c, 2 * c, 2 * c, 2 * c, 2 * c + 1, 2 * c + 1, 2 * c + 1, 2 * c + 1,  //
                                            2 * c, 2 * c, 2 * c, 2 * c, 2 * c + 1, 2 * c + 1, 2 * c + 1, 2 * c + 1);
      LOOM_UNROLL for (int n = 0; n < NW; n++) {
        const __m512i raw = _mm512_broadcast_i64x4(loadu256(w + ws * n + 136 * b + 8 + 32 * c));
        const __m512i nib = _mm512_and_si512(_mm512_srlv_epi64(raw, _mm512_setr_epi64(0, 0, 0, 0, 4, 4, 4, 4)), _mm512_set1_epi8(15));
        const __m512 p = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_shuffle_epi8(table, nib), xc));
        acc[n] = _mm512_fmadd_ps(p, _mm512_permutexvar_ps(idx, scale[n]), acc[n]);
      }
    };
    unrolled<4>(chunk);
  }
  __m512 total[NW];
  LOOM_UNROLL for (int n = 0; n < NW; n++)
    total[n] = _mm512_sub_ps(acc[n], _mm512_zextps256_ps512(bias[n]));
  hsum512_rows<NW>(total, res);
}
