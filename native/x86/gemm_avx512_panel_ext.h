// Panel preparation for the weight types that reuse another type's GEMM micro-kernels
// (included by gemm_avx512.h before prepare_panel, after Q4KTab/Q6KTab and panel_q4_k's helpers):
// Q5_K fills Q4_K's table (scales and mins of sub-blocks of 32, q in 0..31); Q3_K and IQ4_XS
// fill Q6_K's (a scale per 16 values; IQ4_XS's scale of 32 serves both halves).

// Q5_K block → s8 q (0..31, in order) and its Q4_K-style table (C summed as panel_q4_k does)
inline void panel_q5_k(const uint8_t* blk, int8_t* q, Q4KTab& t) {
  uint8_t sm[16];
  q4_k_scales(blk + 4, sm);
  const __m128i smv = loadu128(sm);
  const __m512i smb = _mm512_broadcast_i32x4(smv);
  const __m256i m4 = _mm256_set1_epi8(15), m16 = _mm256_set1_epi8(16), qh = loadu256(blk + 16);
  __m512i csum = _mm512_setzero_si512();
  LOOM_UNROLL for (int c = 0; c < 4; c++) {
    const __m256i qs = loadu256(blk + 48 + 32 * c);
    const __m256i lo = _mm256_or_si256(_mm256_and_si256(qs, m4), _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh, 2 * c), 4), m16));
    const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qs, 4), m4),
                                       _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh, 2 * c + 1), 4), m16));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 64 * c), lo);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 64 * c + 32), hi);
    csum = _mm512_dpbusd_epi32(csum, _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1), q4k_chunk_scales(smb, c));
  }
  q4k_tab(blk, smv, csum, t);
}

// Σ of 16 int8 at p
inline int32_t sum_i8_16(const int8_t* p) {
  return hsum256_epi32(_mm256_madd_epi16(_mm256_cvtepi8_epi16(loadu128(p)), _mm256_set1_epi16(1)));
}

// Q6_K-style table from 16 sub-block scales of 16 s8 values
inline void q6k_tab(const int8_t* q, const int16_t* sc, float d, Q6KTab& t) {
  t.d = d;
  int32_t C = 0;
  for (int j = 0; j < 16; j++) {
    t.sc[j] = sc[j];
    C += sc[j] * sum_i8_16(q + 16 * j);
  }
  t.C = -128 * C;
}

// Q3_K block → s8 q − 4 (−4..3, in order)
inline void panel_q3_k(const uint8_t* blk, int8_t* q, Q6KTab& t) {
  alignas(32) int16_t sc[16];
  q3_k_scales(blk + 96, sc);
  const __m256i m3 = _mm256_set1_epi8(3), m4 = _mm256_set1_epi8(4), hm = loadu256(blk);
  for (int n = 0; n < 2; n++) {
    const __m256i qs = loadu256(blk + 32 + 32 * n);
    for (int j = 0; j < 4; j++) {
      const __m256i hi = _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(hm, 4 * n + j), 2), m4);
      const __m256i v = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qs, 2 * j), m3), hi);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 128 * n + 32 * j), _mm256_sub_epi8(v, m4));
    }
  }
  q6k_tab(q, sc, f16_scalar(blk + 108), t);
}

// IQ4_XS block → s8 levels; each 32-value scale serves both of its 16-value halves
inline void panel_iq4_xs(const uint8_t* blk, int8_t* q, Q6KTab& t) {
  int16_t sc[16];
  const int h = blk[2] | (blk[3] << 8);
  for (int j = 0; j < 8; j++) {
    sc[2 * j] = sc[2 * j + 1] = static_cast<int16_t>((((blk[4 + (j >> 1)] >> (4 * (j & 1))) & 15) | (((h >> (2 * j)) & 3) << 4)) - 32);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * j), _mm256_shuffle_epi8(iq4nl_table(), q4_0_unpack(blk + 8 + 16 * j)));
  }
  q6k_tab(q, sc, f16_scalar(blk), t);
}
