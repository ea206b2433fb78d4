// 512-bit one-row kernels for Q3_K and Q2_K (included by matmul_avx512.cc after
// dot_int8_avx512.h, whose Q6_K helpers they share): one 256-value block per step, 64
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

// Q3_K: d·dx·Σ_j sc_j·(Σ q·x − 4·Σx_j), q = 2 low bits | hmask bit << 2 in 0..7
template <int R>
void dot_q3_k_rows512(const uint8_t* w, const loom::XQ8_K* x, int K, float* res) {
  __m512 acc[R];
  LOOM_UNROLL for (int r = 0; r < R; r++) acc[r] = _mm512_setzero_ps();
  const __m512i m3 = _mm512_set1_epi8(3), m4 = _mm512_set1_epi8(4);
  const __m512i pair = _mm512_setr_epi64(0, 0, 0, 0, 2, 2, 2, 2);
  for (int b = 0; b < K / 256; b++) {
    const uint8_t* blk = w + 110 * b;
    LOOM_PREFETCH(blk);  // 110 bytes: two lines, mostly
    LOOM_PREFETCH(blk + 64);
    const __m256i sc16 = q3_k_scales16(blk);
    const __m512i sc = _mm512_castsi256_si512(sc16);
    const float d = f16_scalar(blk + 108);
    const __m512i hm = _mm512_broadcast_i64x4(loadu256(blk));
    __m512i isum[R];
    __m256i corr[R];
    LOOM_UNROLL for (int r = 0; r < R; r++) {
      isum[r] = _mm512_setzero_si512();
      corr[r] = _mm256_madd_epi16(sc16, loadu256(x[r].s16 + 16 * b));  // Σ sc_j·Σx_j, 8 int32
    }
    const auto quarter = [&](auto qc) {  // half n = c / 2, rows j = 2(c % 2), +1
      constexpr int c = decltype(qc)::value, n = c / 2, j = 2 * (c % 2);
      const __m512i qs = _mm512_broadcast_i64x4(loadu256(blk + 32 + 32 * n));
      const __m512i lo = _mm512_and_si512(_mm512_srlv_epi64(qs, _mm512_add_epi64(pair, _mm512_set1_epi64(2 * j))), m3);
      const __m512i hi = _mm512_and_si512(
          _mm512_slli_epi64(_mm512_srlv_epi64(hm, _mm512_add_epi64(_mm512_srli_epi64(pair, 1), _mm512_set1_epi64(4 * n + j))), 2), m4);
      const __m512i q = _mm512_or_si512(lo, hi);
      const __m512i s = q6_k_quad_scales<c>(sc);
      LOOM_UNROLL for (int r = 0; r < R; r++)
        isum[r] = _mm512_dpwssd_epi32(isum[r], _mm512_maddubs_epi16(q, _mm512_loadu_si512(x[r].q + 256 * b + 64 * c)), s);
    };
    quarter(std::integral_constant<int, 0>());
    quarter(std::integral_constant<int, 1>());
    quarter(std::integral_constant<int, 2>());
    quarter(std::integral_constant<int, 3>());
    LOOM_UNROLL for (int r = 0; r < R; r++) {
      const __m512i t = _mm512_sub_epi32(isum[r], _mm512_zextsi256_si512(_mm256_slli_epi32(corr[r], 2)));
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(t), _mm512_set1_ps(d * x[r].d[b]), acc[r]);
    }
  }
  LOOM_UNROLL for (int r = 0; r < R; r++) res[r] = hsum512(acc[r]);
}

// Q2_K: dx·(d·Σ_j sc_j·Σ q·x − dmin·Σ_j m_j·Σx_j), q in 0..3, scales[j] = sc | m << 4
template <int R>
void dot_q2_k_rows512(const uint8_t* w, const loom::XQ8_K* x, int K, float* res) {
  __m512 acc[R];
  __m256 mins_acc[R];
  LOOM_UNROLL for (int r = 0; r < R; r++) {
    acc[r] = _mm512_setzero_ps();
    mins_acc[r] = _mm256_setzero_ps();
  }
  const __m512i m3 = _mm512_set1_epi8(3);
  const __m512i pair = _mm512_setr_epi64(0, 0, 0, 0, 2, 2, 2, 2);
  for (int b = 0; b < K / 256; b++) {
    const uint8_t* blk = w + 84 * b;
    LOOM_PREFETCH(blk);  // 84 bytes: two lines at most
    LOOM_PREFETCH(blk + 64);
    const __m128i sm = loadu128(blk);
    const __m256i sc16 = _mm256_cvtepu8_epi16(_mm_and_si128(sm, _mm_set1_epi8(15)));
    const __m256i mins16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sm, 4), _mm_set1_epi8(15)));
    const __m512i sc = _mm512_castsi256_si512(sc16);
    const float d = f16_scalar(blk + 80), dmin = f16_scalar(blk + 82);
    __m512i isum[R];
    LOOM_UNROLL for (int r = 0; r < R; r++) isum[r] = _mm512_setzero_si512();
    const auto quarter = [&](auto qc) {
      constexpr int c = decltype(qc)::value, n = c / 2, j = 2 * (c % 2);
      const __m512i qs = _mm512_broadcast_i64x4(loadu256(blk + 16 + 32 * n));
      const __m512i q = _mm512_and_si512(_mm512_srlv_epi64(qs, _mm512_add_epi64(pair, _mm512_set1_epi64(2 * j))), m3);
      const __m512i s = q6_k_quad_scales<c>(sc);
      LOOM_UNROLL for (int r = 0; r < R; r++)
        isum[r] = _mm512_dpwssd_epi32(isum[r], _mm512_maddubs_epi16(q, _mm512_loadu_si512(x[r].q + 256 * b + 64 * c)), s);
    };
    quarter(std::integral_constant<int, 0>());
    quarter(std::integral_constant<int, 1>());
    quarter(std::integral_constant<int, 2>());
    quarter(std::integral_constant<int, 3>());
    LOOM_UNROLL for (int r = 0; r < R; r++) {
      const float dx = x[r].d[b];
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[r]), _mm512_set1_ps(d * dx), acc[r]);
      const __m256i mm = _mm256_madd_epi16(mins16, loadu256(x[r].s16 + 16 * b));
      mins_acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(mm), _mm256_set1_ps(dmin * dx), mins_acc[r]);
    }
  }
  LOOM_UNROLL for (int r = 0; r < R; r++) res[r] = hsum512(acc[r]) - hsum256(mins_acc[r]);
}
