// AVX-512 kernel for Q4_0 interleaved by 16 rows (../q4_0-r16.h), every row count (included by
// matmul_avx512.cc inside its anonymous namespace). Per block, the group's 4 × 64 bytes unpack
// into 8 vectors of 16 rows × 4 inputs (u8 0..15), kept in registers while up to 8 activation
// rows each take 8 dpbusd against broadcast words of x (s8); the int32 sum starts at −8·Σx
// (the −8 of every weight), and one fma per block applies d_w (16 lanes) · d_x.

// R activation rows × the 16 output rows of group `g` (K/32 blocks), into out[r·N + 0..15]
template <int R>
inline void q4_0_r16_group(const uint8_t* g, int nb, const XQ8_0* x, float* out, int N) {
  __m512 acc[R];
  LOOM_UNROLL for (int r = 0; r < R; r++) acc[r] = _mm512_setzero_ps();
  const __m512i m4 = _mm512_set1_epi8(15);
  for (int b = 0; b < nb; b++, g += kR16BlockBytes) {
    const __m512 dw = _mm512_cvtph_ps(loadu256(g));
    __m512i q[8];
    LOOM_UNROLL for (int i = 0; i < 4; i++) {
      const __m512i p = _mm512_loadu_si512(g + 32 + 64 * i);
      q[i] = _mm512_and_si512(p, m4);
      q[i + 4] = _mm512_and_si512(_mm512_srli_epi16(p, 4), m4);
    }
    LOOM_UNROLL for (int r = 0; r < R; r++) {
      const uint8_t* xq = reinterpret_cast<const uint8_t*>(x[r].q + kQK * b);
      __m512i sum = _mm512_set1_epi32(-8 * x[r].s[b]);
      LOOM_UNROLL for (int j = 0; j < 8; j++) sum = _mm512_dpbusd_epi32(sum, q[j], bcast32(xq + 4 * j));
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(dw, _mm512_set1_ps(x[r].d[b])), acc[r]);
    }
  }
  LOOM_UNROLL for (int r = 0; r < R; r++) _mm512_storeu_ps(out + static_cast<size_t>(N) * r, acc[r]);
}

// Rows are taken in chunks whose prepared activations (~256 KB) stay in L2 while every group
// of [o0, o1) sweeps them, 8 rows at a time.
void dot_q4_0_r16(const uint8_t* xa, size_t xstride, int rows, const uint8_t* w, size_t wstride, int K, int o0,
                  int o1, float* out, int N) {
  const int nb = K / kQK;
  const int chunk = std::max(8, static_cast<int>((256u << 10) / xstride) & ~7);
  for (int r0 = 0; r0 < rows; r0 += chunk) {
    const int r1 = std::min(rows, r0 + chunk);
    for (int o = o0; o < o1; o += kR16Rows) {
      const uint8_t* g = w + wstride * o;
      for (int r = r0; r < r1; r += 8) {
        XQ8_0 x[8];
        const int n = std::min(8, r1 - r);
        for (int i = 0; i < n; i++) x[i] = xq8_0_view(xa + xstride * (r + i), K);
        float* dst = out + static_cast<size_t>(N) * r + o;
        switch (n) {
          case 1: q4_0_r16_group<1>(g, nb, x, dst, N); break;
          case 2: q4_0_r16_group<2>(g, nb, x, dst, N); break;
          case 3: q4_0_r16_group<3>(g, nb, x, dst, N); break;
          case 4: q4_0_r16_group<4>(g, nb, x, dst, N); break;
          case 5: q4_0_r16_group<5>(g, nb, x, dst, N); break;
          case 6: q4_0_r16_group<6>(g, nb, x, dst, N); break;
          case 7: q4_0_r16_group<7>(g, nb, x, dst, N); break;
          default: q4_0_r16_group<8>(g, nb, x, dst, N); break;
        }
      }
    }
  }
}
