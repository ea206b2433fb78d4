// The routed experts of a mixture of experts, as a composition of other kernels: for each
// expert with tokens, gather their rows (in token order), gate/up as one matmulSet (or one
// matmul of a fused gate_up matrix), addBias, the gated activation, down, its bias and scale,
// then each token's k outputs weighted and added in f32 best first (llama.cpp's chain of
// ggml_add). With the reference kernels it is the reference moeExperts; with the native ones
// it is what the native moeExperts must equal bit for bit (test/kernels/moe-experts.test.ts).
import type { ExpertRouting, ExpertWeights, Kernels } from './index.js';

/** ggml_swiglu_oai's constants as llama.cpp's openai-moe graph passes them */
export const SWIGLU_OAI_ALPHA = 1.702;
export const SWIGLU_OAI_LIMIT = 7.0;

/**
 * out[i] = x / (1 + e^(−α·x)) · (y + 1) with x = min(gate[i], limit), y = clamp(up[i], −limit,
 * limit), in f32 step by step as ggml_compute_forward_swiglu_oai_f32. out may alias gate.
 */
export function swigluOai(out: Float32Array, gate: Float32Array, up: Float32Array, n: number, alpha = SWIGLU_OAI_ALPHA, limit = SWIGLU_OAI_LIMIT): void {
  const fr = Math.fround;
  const a = fr(alpha), l = fr(limit);
  for (let i = 0; i < n; i++) {
    const x = Math.min(gate[i]!, l);
    const y = Math.min(Math.max(up[i]!, -l), l);
    const glu = fr(x / fr(1 + fr(Math.exp(fr(a * -x)))));
    out[i] = glu * fr(y + 1);
  }
}

/** moeExperts through k's matmulSet, matmul, addBias, siluMul / geluMul, add (and swigluOai above) */
export function moeExpertsComposed(k: Kernels, out: Float32Array, x: Float32Array, T: number, K: number, routing: ExpertRouting, w: ExpertWeights): void {
  const E = w.down.length;
  const D = w.down[0]!.dims[1]!;
  const F = w.down[0]!.dims[0]!;
  // counting sort of the T·K (token, slot) pairs by expert, in pair order within an expert
  const starts = new Int32Array(E + 1);
  for (let p = 0; p < T * K; p++) starts[routing.experts[p]! + 1]!++;
  for (let e = 0; e < E; e++) starts[e + 1]! += starts[e]!;
  const pairs = new Int32Array(T * K);
  const fill = starts.slice(0, E);
  for (let p = 0; p < T * K; p++) pairs[fill[routing.experts[p]!]!++] = p;

  const slots = new Float32Array(K * T * D); // [K, T, hidden]: slot s of every token, weighted
  for (let e = 0; e < E; e++) {
    const n = starts[e + 1]! - starts[e]!;
    if (n === 0) continue;
    const mine = pairs.subarray(starts[e]!, starts[e + 1]!);
    const xe = new Float32Array(n * D);
    mine.forEach((pair, i) => {
      const t = (pair / K) | 0;
      xe.set(x.subarray(t * D, (t + 1) * D), i * D);
    });
    const g = new Float32Array(n * F);
    const u = new Float32Array(n * F);
    if (w.up) {
      k.matmulSet(xe, n, [{ out: g, w: w.gate[e]! }, { out: u, w: w.up[e]! }]);
    } else {
      const gu = new Float32Array(n * 2 * F);
      k.matmul(gu, xe, w.gate[e]!, n);
      for (let i = 0; i < n; i++) {
        g.set(gu.subarray(2 * i * F, (2 * i + 1) * F), i * F);
        u.set(gu.subarray((2 * i + 1) * F, (2 * i + 2) * F), i * F);
      }
    }
    if (w.gateBias) k.addBias(g, w.gateBias.subarray(e * F, (e + 1) * F), n);
    if (w.upBias) k.addBias(u, w.upBias.subarray(e * F, (e + 1) * F), n);
    if (w.activation === 'silu') k.siluMul(g, g, u, n * F);
    else if (w.activation === 'gelu') k.geluMul(g, g, u, n * F);
    else swigluOai(g, g, u, n * F);
    const y = new Float32Array(n * D);
    k.matmul(y, g, w.down[e]!, n);
    if (w.downBias) k.addBias(y, w.downBias.subarray(e * D, (e + 1) * D), n);
    const ds = w.downScale?.[e];
    if (ds !== undefined) for (let j = 0; j < n * D; j++) y[j] = y[j]! * ds;
    mine.forEach((pair, i) => {
      const wt = routing.weights[pair]!;
      const at = ((pair % K) * T + ((pair / K) | 0)) * D;
      // f32 products (a Float32Array store rounds the f64 product of two f32 values exactly as f32 multiplication)
      for (let j = 0; j < D; j++) slots[at + j] = y[i * D + j]! * wt;
    });
  }

  if (K === 1) out.set(slots.subarray(0, T * D));
  else k.add(out, slots.subarray(0, T * D), slots.subarray(T * D, 2 * T * D), T * D);
  for (let s = 2; s < K; s++) k.add(out, out, slots.subarray(s * T * D, (s + 1) * T * D), T * D);
}
