import type { ModelRopeScaling } from '../tensor/rope-scaling.js';
import type { RopeStyle, WeightTensor } from '../tensor/weight-tensor.js';
import type { RopeSections } from '../kernels/index.js';

export type ArchName =
  | 'llama' | 'qwen2' | 'qwen3' | 'gpt2' | 'phi3' | 'smollm3' | 'gemma2' | 'gemma3' | 'gemma4' | 'qwen35' | 'qwen3moe' | 'qwen35moe' | 'gpt-oss'
  | 'bert' | 'nomic-bert' | 'gemma-embedding';

/** Everything the forward pass needs to know about a model's shape. */
export interface ModelConfig {
  readonly arch: ArchName;
  readonly vocabSize: number;
  readonly hiddenSize: number;
  readonly numLayers: number;
  readonly numHeads: number;
  readonly numKvHeads: number;
  readonly headDim: number;
  readonly ffnSize: number;
  readonly contextLength: number;
  /** RMSNorm or LayerNorm epsilon */
  readonly normEps: number;
  readonly ropeBase: number;
  /** number of leading head dims rotated (== headDim for most models) */
  readonly ropeDim: number;
  readonly ropeStyle: RopeStyle;
  /** output projection shares token_embd.weight */
  readonly tiedEmbeddings: boolean;
  /** RoPE scaling (linear, YaRN, Llama 3 factors, longrope); absent = plain RoPE */
  readonly ropeScaling?: ModelRopeScaling;
  /** M-RoPE: rotary pairs per position component (t, h, w, e), interleaved as llama.cpp's IMROPE
   *  (Qwen3.5's rope.dimension_sections); the architecture rotates by batch.ropePositions when a
   *  batch has them (images), else every section takes the token's position (plain NeoX RoPE) */
  readonly ropeSections?: RopeSections;
  /** layers that apply no RoPE at all (SmolLM3: every 4th) */
  readonly noRopeLayers?: readonly number[];
  /** sliding-window attention (Gemma 2/3): layers flagged in `layers` attend to the last `size` positions only */
  readonly slidingWindow?: SlidingWindow;
  /** Gemma's extras (see arch/gemma.ts); absent for the other families */
  readonly gemma?: GemmaParams;
  /** Gated DeltaNet layers of a hybrid model (Qwen3.5, see arch/qwen35.ts); absent = attention only */
  readonly linearAttention?: LinearAttention;
  /** [numLayers] the earlier layer whose KV cache layer i reads instead of keeping its own
   *  (Gemma 4's shared-KV layers), or i itself; absent = every layer keeps its own */
  readonly kvSource?: readonly number[];
  /** Gemma 4's extras (see arch/gemma4.ts) */
  readonly gemma4?: Gemma4Params;
  /** routed mixture-of-experts FFNs in every layer (Qwen3-MoE, Qwen3.5-MoE; see arch/moe.ts); absent = dense FFNs */
  readonly moe?: MoeParams;
  /** a pooling model (embeddings, reranking): how a sequence's hidden states become its one
   *  output vector; absent = a generative model */
  readonly pooling?: PoolingConfig;
  /** every token attends to its whole sequence, both ways (encoders: BERT); absent = causal */
  readonly bidirectional?: boolean;
}

/** llama.cpp's pooling types (LLAMA_POOLING_TYPE_*, the GGUF key `<arch>.pooling_type` 0..4). */
export type PoolingType = 'none' | 'mean' | 'cls' | 'last' | 'rank';
export const POOLING_TYPES: readonly PoolingType[] = ['none', 'mean', 'cls', 'last', 'rank'];

export interface PoolingConfig {
  readonly type: PoolingType;
  /** the pooled vector is L2-normalized unless a request says otherwise (HF folders: a
   *  sentence-transformers Normalize module; GGUF: llama-server's default, on) */
  readonly normalize: boolean;
  /** the classifier's output labels (rank pooling; llama.cpp's classifier.output_labels) */
  readonly labels?: readonly string[];
  /** widths the model was trained to be cut to (Matryoshka, config.json matryoshka_dimensions);
   *  absent = a request may not ask for fewer dimensions */
  readonly matryoshkaDimensions?: readonly number[];
  /** a reranker's prompt with {query} and {document} (GGUF tokenizer.chat_template.rerank: Qwen3-Reranker) */
  readonly rerankTemplate?: string;
}

/** A routed MoE FFN: softmax over numExperts router logits, the top numExpertsUsed experts'
 *  SwiGLU FFNs (expertFfnSize wide), summed weighted by their probabilities. */
export interface MoeParams {
  readonly numExperts: number;
  readonly numExpertsUsed: number;
  readonly expertFfnSize: number;
  /** the chosen experts' probabilities are divided by their sum (llama.cpp's qwen3moe always; HF's norm_topk_prob) */
  readonly normTopK: boolean;
  /** width of the shared expert beside the routed ones (Qwen3.5-MoE: SwiGLU behind a sigmoid gate); absent = none */
  readonly sharedFfnSize?: number;
}

/** Gemma 4 beyond Gemma 3's params: per-layer token embeddings and per-layer FFN widths. */
export interface Gemma4Params {
  /** width of each layer's slice of the per-layer token embedding (0 = the model has none) */
  readonly perLayerInput: number;
  /** [numLayers] FFN width (E2B: doubled in the shared-KV layers) */
  readonly ffnSizes: readonly number[];
  /** [ropeDim / 2] divisors of the global layers' RoPE (rope_freqs: 1e30 leaves a pair unrotated) */
  readonly globalFreqFactors?: Float32Array;
}

/** The KV geometry of layer li: sliding-window layers may have their own head size, KV heads and rotated dims (Gemma 4). */
export function layerAttention(config: ModelConfig, li: number): { numKvHeads: number; headDim: number; ropeDim: number; sliding: boolean } {
  const sw = config.slidingWindow;
  if (sw?.layers[li] === true) {
    return { numKvHeads: sw.numKvHeads ?? config.numKvHeads, headDim: sw.headDim ?? config.headDim, ropeDim: sw.ropeDim ?? config.ropeDim, sliding: true };
  }
  return { numKvHeads: config.numKvHeads, headDim: config.headDim, ropeDim: config.ropeDim, sliding: false };
}

/** whether layer li writes KV-cache entries of its own (not a linear-attention layer, not sharing an earlier layer's) */
export function ownsKv(config: ModelConfig, li: number): boolean {
  if (config.linearAttention?.layers[li]) return false;
  return (config.kvSource?.[li] ?? li) === li;
}

/**
 * The linear-attention (Gated DeltaNet) layers of a hybrid model, as llama.cpp's ssm.* keys
 * give them. Each such layer keeps, per sequence, a conv state [convKernel - 1, convDim] and
 * a recurrent state [numVHeads, headDim, headDim] instead of KV-cache entries.
 */
export interface LinearAttention {
  /** [numLayers] true for a Gated DeltaNet layer, false for a (gated) full-attention one */
  readonly layers: readonly boolean[];
  /** ssm.conv_kernel: taps of the causal conv1d */
  readonly convKernel: number;
  /** ssm.state_size: size of every key and value head */
  readonly headDim: number;
  /** ssm.group_count */
  readonly numKHeads: number;
  /** ssm.time_step_rank; value head h reads key head h % numKHeads (ggml's broadcast) */
  readonly numVHeads: number;
}

/** channels of the conv1d: q and k (numKHeads heads each) then v (numVHeads) */
export function linearConvDim(l: LinearAttention): number {
  return (2 * l.numKHeads + l.numVHeads) * l.headDim;
}

/** f32 values one sequence's recurrent state takes in one linear layer: conv, then delta-rule state */
export function linearStateSizes(l: LinearAttention): { conv: number; ssm: number } {
  return { conv: (l.convKernel - 1) * linearConvDim(l), ssm: l.numVHeads * l.headDim * l.headDim };
}

/** bytes of recurrent state one sequence holds across all linear layers (0 for attention-only models) */
export function recurrentStateBytes(config: ModelConfig): number {
  const l = config.linearAttention;
  if (!l) return 0;
  const { conv, ssm } = linearStateSizes(l);
  return 4 * (conv + ssm) * l.layers.filter(Boolean).length;
}

/** how many layers keep KV-cache entries of their own (not the linear-attention ones, not the shared-KV ones) */
export function attentionLayerCount(config: ModelConfig): number {
  return Array.from({ length: config.numLayers }, (_, li) => ownsKv(config, li)).filter(Boolean).length;
}

export interface SlidingWindow {
  /** a query at position p attends to keys at p - size + 1 .. p (llama.cpp's LLAMA_SWA_TYPE_STANDARD) */
  readonly size: number;
  /** [numLayers] true for a sliding-window layer, false for a global one */
  readonly layers: readonly boolean[];
  /** RoPE base of the sliding-window layers (Gemma 3: 10000 while global layers use ropeBase) */
  readonly ropeBase: number;
  /** the sliding-window layers' own head size, KV heads and rotated dims where they differ from the global layers' (Gemma 4) */
  readonly headDim?: number;
  readonly numKvHeads?: number;
  readonly ropeDim?: number;
}

export interface GemmaParams {
  /** q is multiplied by this before attention (1/sqrt(query_pre_attn_scalar)) */
  readonly queryScale: number;
  /** attention scores become cap·tanh(score/cap) before softmax (Gemma 2); 0 = off */
  readonly attnSoftcap: number;
  /** logits become cap·tanh(logit/cap) (Gemma 2); 0 = off */
  readonly finalSoftcap: number;
  /** added to every norm weight at load: 1 for HF checkpoints (Gemma's (1 + w) RMSNorm), 0 for GGUF (converted with + 1) */
  readonly normOffset: number;
  /** EmbeddingGemma's sliding layers, which attend both ways: a token at p sees p − ⌊size/2⌋ ..
   *  p + ⌊size/2⌋ (llama.cpp's LLAMA_SWA_TYPE_SYMMETRIC). Kept out of ModelConfig.slidingWindow,
   *  which the engine reads as a causal window whose older blocks it may free. */
  readonly symmetricWindow?: SlidingWindow;
}

/**
 * Tensors by their GGUF names (`token_embd.weight`, `blk.0.attn_q.weight`, ...), whatever
 * the file format: loaders translate other namings to these.
 */
export interface TensorSource {
  has(name: string): boolean;
  /** throws ModelFormatError naming the file when the tensor is absent */
  get(name: string): WeightTensor;
}
