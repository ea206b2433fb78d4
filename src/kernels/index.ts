// The kernel interface. Two implementations share it with identical signatures:
// `reference` (plain TypeScript, the test oracle) and, later, `native` (the C++ core).
// All activations are row-major f32; weights stay in their file type (WeightTensor).
import type { WeightTensor, RopeStyle } from '../tensor/weight-tensor.js';
import type { RopeScaling } from '../tensor/rope-scaling.js';

/** ggml_rope_multi's modes: 'mrope' (Qwen2-VL: consecutive sections), 'imrope' (Qwen3-VL and
 *  Qwen3.5: sections interleaved t, h, w), 'vision' (the Qwen-VL encoders' 2-D rotary) */
export type MropeMode = 'mrope' | 'imrope' | 'vision';
/** rotary pairs given to each position component (t, h, w, e): rope.dimension_sections */
export type RopeSections = readonly [number, number, number, number];

/** A KV cache's element type: f16 (IEEE half bits in a Uint16Array), f32, q8_0 (ggml's
 *  block_q8_0, as llama.cpp's `-ctk/-ctv q8_0` cache: per 32 values of a row an f16 scale d and
 *  32 int8 q, value d·q, 34 bytes in a Uint8Array) or q4_0 (block_q4_0: f16 d and 16 bytes of
 *  nibbles, value j = d·(nibble − 8), low nibbles values 0..15, high 16..31, 18 bytes). The
 *  quantized ones need head dims that are a multiple of 32. */
export type KvDtype = 'f16' | 'f32' | 'q8_0' | 'q4_0';

export const KV_DTYPES: readonly KvDtype[] = ['f16', 'f32', 'q8_0', 'q4_0'];

/** bytes of a block of 32 values of a quantized cache type */
export const KV_BLOCK_BYTES: Partial<Record<KvDtype, number>> = { q8_0: 34, q4_0: 18 };

/** bytes of n values of a cache of `dtype` (n a multiple of 32 for q8_0 and q4_0) */
export function kvBytes(dtype: KvDtype, n: number): number {
  const block = KV_BLOCK_BYTES[dtype];
  return block !== undefined ? (n / 32) * block : dtype === 'f16' ? 2 * n : 4 * n;
}

/** values a q8_0 or q4_0 block holds: those caches need head dims that are a multiple of it */
export const KV_Q8_BLOCK = 32;

/** One layer of the paged KV cache: [numBlocks, numKvHeads, blockSize, headDim] each (a block
 *  keeps each KV head's rows together, as vLLM's paged-attention cache puts the KV head before
 *  a block's rows). f16 data is stored as IEEE half bits in a Uint16Array, q8_0 and q4_0 as
 *  their blocks' bytes in a Uint8Array (value e of the layer in block e / 32). Slot s = block * blockSize +
 *  offset. */
export interface KvLayer {
  readonly k: Float32Array | Uint16Array | Uint8Array;
  readonly v: Float32Array | Uint16Array | Uint8Array;
}

export interface KvCacheShape {
  readonly dtype: KvDtype;
  readonly numBlocks: number;
  readonly blockSize: number;
  readonly numKvHeads: number;
  readonly headDim: number;
}

/**
 * The sequence structure of a flat batch of tokens, as attention needs it. Tokens of
 * sequence s are tokens seqStarts[s] .. seqStarts[s+1]-1; a token at position p attends
 * causally to positions 0..p of its own sequence, found through that sequence's row of
 * blockTables. Decode tokens and prefill chunks (after cached context or not) are the
 * same case.
 */
export interface AttentionBatch {
  /** [numSeqs + 1] token offsets */
  readonly seqStarts: Int32Array;
  /** [numTokens] position of each token in its sequence */
  readonly positions: Int32Array;
  /** [numSeqs, maxBlocksPerSeq] block ids, -1 where unused */
  readonly blockTables: Int32Array;
  readonly maxBlocksPerSeq: number;
  /** [numTokens] the first position each token attends to, when later than the window's (0..position;
   *  a symmetric window: EmbeddingGemma's sliding layers); absent = 0, or as the window says */
  readonly firstPositions?: Int32Array;
  /** [numTokens] where a sliding window reaches back from, when not `positions` (a non-causal image
   *  span attends up to its last position, but its window is measured from each token's own, as
   *  llama.cpp masks: keys k with p − k < window); absent: positions */
  readonly windowPositions?: Int32Array;
}

export interface AttentionShape {
  readonly numHeads: number;
  readonly numKvHeads: number;
  readonly headDim: number;
  /** multiplies q·k before softmax (1/sqrt(headDim) for most families; Gemma scales q instead and passes 1) */
  readonly scale: number;
  /** sliding window: a token at position p attends to p - window + 1 .. p only; 0 or absent = all of 0..p */
  readonly window?: number;
  /** attention logit soft-cap (Gemma 2): scores s = scale·q·k become cap·tanh(s / cap) before softmax; 0 or absent = off */
  readonly softcap?: number;
  /** [numHeads] a learned logit per query head that joins its softmax's denominator only (gpt-oss's
   *  attention sinks, ggml_soft_max_ext's sinks: max over the scores and the sink, sum + e^(sink − max)); absent = none */
  readonly sinks?: Float32Array;
}

/** Head layout of a gated delta rule: q/k [numTokens, numKHeads, headDim], v/out [numTokens, numVHeads, headDim]. */
export interface DeltaRuleShape {
  readonly numKHeads: number;
  /** a multiple of numKHeads; value head h reads key head h % numKHeads */
  readonly numVHeads: number;
  readonly headDim: number;
}

/** One weight of a matmulSet and where its product goes ([rows, w.dims[1]]). */
export interface MatmulTarget {
  readonly out: Float32Array;
  readonly w: WeightTensor;
}

/** The experts' gated activation: SiLU (SwiGLU, the Qwen families), GELU-tanh (GeGLU, Gemma 4) or
 *  OpenAI's clamped SwiGLU (gpt-oss: reference-moe.ts swigluOai). */
export type ExpertActivation = 'silu' | 'gelu' | 'swiglu-oai';

/** One layer's routed experts as moeExperts reads them. Expert e's matrices are gate[e] ([hidden,
 *  F], or without `up`, [hidden, 2F]: gate rows then up rows), up[e] ([hidden, F]) and down[e]
 *  ([F, hidden]); all experts of a kind share a type. */
export interface ExpertWeights {
  readonly gate: readonly WeightTensor[];
  readonly up?: readonly WeightTensor[];
  readonly down: readonly WeightTensor[];
  /** [E, F], [E, F], [E, hidden]: added to each expert's gate, up and down outputs (gpt-oss) */
  readonly gateBias?: Float32Array;
  readonly upBias?: Float32Array;
  readonly downBias?: Float32Array;
  /** [E]: multiplies each expert's down output, after its bias (Gemma 4's per_expert_scale) */
  readonly downScale?: Float32Array;
  readonly activation: ExpertActivation;
  /** when each kind's experts are the consecutive slices of one tensor (a GGUF file's 3-D
   *  [.., .., E] tensor): those bytes, which the native core reads as one */
  readonly stacked?: { readonly gate: Uint8Array; readonly up?: Uint8Array; readonly down: Uint8Array };
}

/** A step's routing: per token its k experts, best first, and their weights ([T, k] each). */
export interface ExpertRouting {
  readonly experts: Int32Array;
  readonly weights: Float32Array;
}

export interface Kernels {
  readonly name: string;

  /** out[r, o] = Σ_i x[r, i] · W[o, i]. x: [rows, dims[0]], out: [rows, dims[1]].
   *  Activations are rounded to the weight's dot-product type first, as llama.cpp does. */
  matmul(out: Float32Array, x: Float32Array, w: WeightTensor, rows: number): void;

  /** matmul of several weights against the same x (q/k/v, gate/up): each out exactly as matmul
   *  gives it; the native core prepares x once and runs the few-row products in one parallel region.
   *  Every weight has x's row width as its dims[0]. */
  matmulSet(x: Float32Array, rows: number, targets: readonly MatmulTarget[]): void;

  /**
   * A mixture of experts' routed FFN over a batch (llama.cpp's build_moe_ffn after the router):
   * out[t] = Σ_j weights[t, j] · expert_{experts[t, j]}(x[t]), the k terms added in f32 best
   * first, an expert being up/gate matmuls, their biases, the gated activation, down, its bias
   * and scale. Each expert runs over its tokens (in token order) as one matmul batch, so a
   * token's result is what the per-expert kernel calls give. x, out: [T, hidden].
   */
  moeExperts(out: Float32Array, x: Float32Array, T: number, k: number, routing: ExpertRouting, w: ExpertWeights): void;

  /** out[t, :] = row ids[t] of table (any weight type), dequantized. out: [ids.length, dims[0]] */
  embedRows(out: Float32Array, table: WeightTensor, ids: Int32Array): void;

  /** out = x / rms(x) * weight, per row of `dim`. out may alias x. */
  rmsNorm(out: Float32Array, x: Float32Array, weight: Float32Array, rows: number, dim: number, eps: number): void;

  /** out = (x - mean) / sqrt(var + eps) * weight + bias, per row. out may alias x. */
  layerNorm(
    out: Float32Array,
    x: Float32Array,
    weight: Float32Array,
    bias: Float32Array,
    rows: number,
    dim: number,
    eps: number,
  ): void;

  /** In place on x: [positions.length, numHeads * headDim]; rotates the first ropeDim dims of each
   *  head, with the angles and magnitudes `scaling` gives (ggml_rope_ext; absent = unscaled). */
  rope(
    x: Float32Array,
    positions: Int32Array,
    numHeads: number,
    headDim: number,
    ropeDim: number,
    base: number,
    style: RopeStyle,
    scaling?: RopeScaling,
  ): void;

  /** ggml_rope_multi, in place on x: [positions.length / 4, numHeads * headDim]; positions are
   *  section-major (t of every token, then h, then w, then e). 'mrope' / 'imrope': NeoX pairs
   *  (i, i + ropeDim/2) of the first ropeDim dims, pair i rotated by pos·base^(−2i/ropeDim) with
   *  the position of its section (sections consecutive / interleaved t, h, w); 'vision': pairs
   *  (i, i + ropeDim) over 2·ropeDim dims, each section's angles restarting at its first pair.
   *  Four equal positions give exactly rope(…, 'neox') for 'mrope' and 'imrope'. */
  ropeMulti(
    x: Float32Array,
    positions: Int32Array,
    numHeads: number,
    headDim: number,
    ropeDim: number,
    base: number,
    sections: RopeSections,
    mode: MropeMode,
    scaling?: RopeScaling,
  ): void;

  /** out[i] = silu(gate[i]) * up[i] for i < n. out may alias gate. */
  siluMul(out: Float32Array, gate: Float32Array, up: Float32Array, n: number): void;

  /** out[i] = gelu(x[i]) (tanh approximation, as GPT-2 and ggml use). out may alias x. */
  gelu(out: Float32Array, x: Float32Array, n: number): void;

  /** out[i] = gelu(gate[i]) * up[i] (ggml's geglu: the same f16 GELU as gelu). out may alias gate. */
  geluMul(out: Float32Array, gate: Float32Array, up: Float32Array, n: number): void;

  /** x[i] = cap · tanh(x[i] / cap) in f32 for i < n (Gemma 2's final-logit soft-cap), in place */
  softcap(x: Float32Array, n: number, cap: number): void;

  /** out[i] = a[i] + b[i]. out may alias either. */
  add(out: Float32Array, a: Float32Array, b: Float32Array, n: number): void;

  /** x[r, :] += bias for each of `rows` rows of length bias.length */
  addBias(x: Float32Array, bias: Float32Array, rows: number): void;

  /** softmax over each row of n, in place */
  softmax(x: Float32Array, rows: number, n: number): void;

  /** index of the largest value of row (the lowest index among equals): greedy sampling */
  argmax(row: Float32Array): number;

  /** Constrained decoding: row[i] = −∞ where bit i % 32 of mask[i >> 5] is 0; mask: [ceil(row.length / 32)] */
  applyTokenMask(row: Float32Array, mask: Int32Array): void;

  /**
   * Sampling weights: out[j] = e^(row[idx[j]] − max) for j < n (idx null: row[j]); returns
   * their sum. The reference computes them in f64, the native core in f32 (summed in f64).
   */
  expWeights(out: Float64Array, row: Float32Array, idx: Int32Array | null, n: number, max: number): number;

  /**
   * Sampling candidates, in place: row[i] = f32(row[i]·scale) (the product in f64), then the
   * entries below max + logMinP (−∞: none) or not finite become −∞ and the others' indices
   * go to idx in order. Returns how many.
   */
  sampleCandidates(row: Float32Array, scale: number, logMinP: number, idx: Int32Array): number;

  /** The first j with u − w[0] − … − w[j] < 0 (subtracted in this order); n − 1 if none. */
  drawIndex(weights: Float64Array, n: number, u: number): number;

  /**
   * Causal depthwise conv1d then SiLU, per sequence s of a flat batch (tokens seqStarts[s] ..
   * seqStarts[s+1]-1), its history in state slot slots[s]: x, out [numTokens, channels];
   * weight [channels, kernel] f32; state [numSlots, kernel - 1, channels], the slot's last
   * kernel - 1 inputs oldest first, replaced by the last kernel - 1 inputs after the sequence's
   * tokens. out[t, c] = silu(Σ_i in[t + i, c] · weight[c, i]) over in = state rows, then x rows.
   */
  convSilu(
    out: Float32Array,
    x: Float32Array,
    weight: Float32Array,
    state: Float32Array,
    slots: Int32Array,
    seqStarts: Int32Array,
    channels: number,
    kernel: number,
  ): void;

  /**
   * The gated delta rule (Gated DeltaNet), token by token per sequence and value head h, with
   * state M = state slot slots[s] head h ([headDim, headDim], M[j, i] = S[i][j]):
   * M ← e^g[t,h] · M; d[j] = (v[j] − Σ_i M[j,i] k[i]) · beta[t,h]; M[j,i] += k[i] d[j];
   * out[j] = Σ_i M[j,i] q[i] / √headDim. q, k are those of key head h % numKHeads.
   * g, beta: [numTokens, numVHeads]; state: [numSlots, numVHeads, headDim, headDim], in place.
   */
  gatedDeltaRule(
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
  ): void;

  /** Stores k, v ([numTokens, numKvHeads * headDim]) at slotMapping[t] of a cache layer. */
  writeKv(layer: KvLayer, shape: KvCacheShape, k: Float32Array, v: Float32Array, slotMapping: Int32Array): void;

  /** out, q: [numTokens, numHeads * headDim]. Grouped-query: head h reads kv head h / (numHeads / numKvHeads). */
  attention(
    out: Float32Array,
    q: Float32Array,
    layer: KvLayer,
    cache: KvCacheShape,
    batch: AttentionBatch,
    shape: AttentionShape,
  ): void;
}
