// Reference kernels of the linear-attention (Gated DeltaNet) layers: the causal conv1d with
// its per-sequence state and the gated delta rule, as ggml's ssm_conv and gated_delta_net
// compute them on the CPU. Plain loops, f32 storage, f64 sums rounded once.
import type { DeltaRuleShape } from './index.js';

function silu(x: number): number {
  return Math.fround(x / (1 + Math.exp(-x)));
}

export function convSilu(
  out: Float32Array,
  x: Float32Array,
  weight: Float32Array,
  state: Float32Array,
  slots: Int32Array,
  seqStarts: Int32Array,
  channels: number,
  kernel: number,
): void {
  const keep = kernel - 1;
  for (let s = 0; s + 1 < seqStarts.length; s++) {
    const t0 = seqStarts[s]!;
    const n = seqStarts[s + 1]! - t0;
    const st = slots[s]! * keep * channels;
    // input row r of this sequence: state row r (r < keep), else token t0 + r - keep
    const row = (r: number): Float32Array =>
      r < keep ? state.subarray(st + r * channels, st + (r + 1) * channels) : x.subarray((t0 + r - keep) * channels, (t0 + r - keep + 1) * channels);
    const conv = new Float32Array(n * channels);
    for (let t = 0; t < n; t++) {
      for (let c = 0; c < channels; c++) {
        let sum = 0;
        for (let i = 0; i < kernel; i++) sum = Math.fround(sum + Math.fround(row(t + i)[c]! * weight[c * kernel + i]!));
        conv[t * channels + c] = sum;
      }
    }
    // the new state is the last `keep` input rows (older state rows when n < keep)
    const next = new Float32Array(keep * channels);
    for (let r = 0; r < keep; r++) next.set(row(n + r), r * channels);
    state.set(next, st);
    for (let i = 0; i < n * channels; i++) out[t0 * channels + i] = silu(conv[i]!);
  }
}

export function gatedDeltaRule(
  out: Float32Array,
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  g: Float32Array,
  beta: Float32Array,
  state: Float32Array,
  slots: Int32Array,
  seqStarts: Int32Array,
  shape: DeltaRuleShape,
): void {
  const { numKHeads: hk, numVHeads: hv, headDim: S } = shape;
  const scale = Math.fround(1 / Math.sqrt(S));
  const delta = new Float64Array(S);
  for (let s = 0; s + 1 < seqStarts.length; s++) {
    for (let h = 0; h < hv; h++) {
      const m = state.subarray((slots[s]! * hv + h) * S * S, (slots[s]! * hv + h + 1) * S * S); // m[j*S + i] = S[i][j]
      for (let t = seqStarts[s]!; t < seqStarts[s + 1]!; t++) {
        const qo = (t * hk + (h % hk)) * S;
        const vo = (t * hv + h) * S;
        const decay = Math.fround(Math.exp(g[t * hv + h]!));
        const b = beta[t * hv + h]!;
        for (let i = 0; i < S * S; i++) m[i] = m[i]! * decay;
        for (let j = 0; j < S; j++) {
          let sum = 0;
          for (let i = 0; i < S; i++) sum += m[j * S + i]! * k[qo + i]!;
          delta[j] = Math.fround(Math.fround(v[vo + j]! - Math.fround(sum)) * b);
        }
        for (let j = 0; j < S; j++) for (let i = 0; i < S; i++) m[j * S + i] = m[j * S + i]! + k[qo + i]! * delta[j]!;
        for (let j = 0; j < S; j++) {
          let sum = 0;
          for (let i = 0; i < S; i++) sum += m[j * S + i]! * q[qo + i]!;
          out[vo + j] = Math.fround(sum) * scale;
        }
      }
    }
  }
}
