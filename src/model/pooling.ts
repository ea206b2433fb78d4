// How a pooling model's hidden states become one vector per sequence, as llama.cpp's
// build_pooling does it: mean over the sequence's tokens, its first token (cls), its last
// token (last), or every token (none); rank takes the cls token (the last for Qwen3) through
// the classification head: cls (dense + tanh) when present, then cls.output (the projection to
// the labels' scores). A model converted with sentence-transformers' Dense modules
// (EmbeddingGemma: dense_2, dense_3) projects each pooled vector through them after pooling,
// as llama.cpp's build_dense_out does.
import type { Kernels } from '../kernels/index.js';
import type { WeightTensor } from '../tensor/weight-tensor.js';
import { optionalVector } from './arch/architecture.js';
import { InvalidArgumentError } from '../errors.js';
import type { ArchName, ModelConfig, PoolingType, TensorSource } from './weights.js';

interface Linear {
  readonly w: WeightTensor;
  readonly b: Float32Array | undefined;
}

interface ClassifierHead {
  readonly dense: { w: WeightTensor; b: Float32Array | undefined } | undefined;
  readonly out: { w: WeightTensor; b: Float32Array | undefined } | undefined;
}

export class Pooler {
  readonly type: PoolingType;
  /** floats of one pooled vector (a 'none' sequence has this many per token) */
  readonly outputSize: number;
  private readonly head: ClassifierHead | undefined;
  /** dense_2 then dense_3 (each optional; dense_2 may have a bias): empty for most models */
  private readonly dense: readonly Linear[];
  private readonly hiddenSize: number;
  /** rank pools the last token and ends in a softmax for Qwen3 rerankers (llama.cpp's build_pooling) */
  private readonly rankLast: boolean;

  constructor(config: ModelConfig, tensors: TensorSource) {
    if (!config.pooling) throw new Error(`${config.arch} is not a pooling model`);
    this.type = config.pooling.type;
    this.hiddenSize = config.hiddenSize;
    this.rankLast = config.arch === 'qwen3';
    const layer = (name: string): Linear | undefined =>
      tensors.has(`${name}.weight`) ? { w: tensors.get(`${name}.weight`), b: optionalVector(tensors, `${name}.bias`) } : undefined;
    this.dense = [layer('dense_2'), layer('dense_3')].filter((l) => l !== undefined);
    const denseOut = this.dense.at(-1)?.w.dims[1];
    if (denseOut !== undefined && denseOut !== config.hiddenSize) {
      throw new Error(`${config.arch}: the Dense modules end at ${denseOut} features, not the model's ${config.hiddenSize} (llama.cpp asserts dense_3_feat_out = n_embd)`);
    }
    if (this.type === 'rank') {
      this.head = { dense: layer('cls'), out: layer('cls.output') };
      this.outputSize = this.head.out?.w.dims[1] ?? this.head.dense?.w.dims[1] ?? config.hiddenSize;
    } else {
      this.outputSize = config.hiddenSize;
    }
  }

  /**
   * The pooled vectors of the sequences `seqs` (indices into the batch's seqStarts), in that
   * order: one [outputSize] array each ('none': [tokens * outputSize]). hidden: [numTokens, hiddenSize].
   */
  pool(hidden: Float32Array, seqStarts: Int32Array, seqs: readonly number[], k: Kernels): Float32Array[] {
    const d = this.hiddenSize;
    const row = (t: number): Float32Array => hidden.subarray(t * d, (t + 1) * d);
    const rows = seqs.map((s) => {
      const start = seqStarts[s]!;
      const end = seqStarts[s + 1]!;
      switch (this.type) {
        case 'none':
          return hidden.slice(start * d, end * d);
        case 'mean': {
          const out = new Float32Array(d);
          const w = 1 / (end - start);
          for (let t = start; t < end; t++) {
            const r = row(t);
            for (let i = 0; i < d; i++) out[i]! += r[i]! * w;
          }
          return out;
        }
        case 'cls':
          return row(start).slice();
        case 'last':
          return row(end - 1).slice();
        case 'rank':
          return row(this.rankLast ? end - 1 : start).slice();
      }
    });
    if (this.type === 'rank') return this.head ? rows.map((x) => this.classify(x, k)) : rows;
    return this.dense.length > 0 ? rows.map((x) => this.project(x, k)) : rows;
  }

  /** the Dense modules over a pooled vector, or over each token's row for 'none' */
  private project(x: Float32Array, k: Kernels): Float32Array {
    let cur = x;
    const tokens = x.length / this.hiddenSize;
    for (const { w, b } of this.dense) {
      const y = new Float32Array(tokens * w.dims[1]!);
      k.matmul(y, cur, w, tokens);
      if (b) k.addBias(y, b, tokens);
      cur = y;
    }
    return cur;
  }

  /** llama.cpp's rank head on one pooled row: tanh(cls·x + b), then cls.output·x + b */
  private classify(x: Float32Array, k: Kernels): Float32Array {
    let cur = x;
    const { dense, out } = this.head!;
    if (dense) {
      const y = new Float32Array(dense.w.dims[1]!);
      k.matmul(y, cur, dense.w, 1);
      if (dense.b) k.addBias(y, dense.b, 1);
      for (let i = 0; i < y.length; i++) y[i] = Math.tanh(y[i]!);
      cur = y;
    }
    if (out) {
      const y = new Float32Array(out.w.dims[1]!);
      k.matmul(y, cur, out.w, 1);
      if (out.b) k.addBias(y, out.b, 1);
      cur = y;
    }
    if (this.rankLast) k.softmax(cur, 1, cur.length);
    return cur;
  }
}

/** vLLM's --runner: what the engine does with the model (auto: what the file says) */
export type RunnerKind = 'auto' | 'pooling' | 'generate';
export const RUNNER_KINDS: readonly RunnerKind[] = ['auto', 'pooling', 'generate'];

/** the families whose hidden states an engine can pool (Architecture.hiddenStates) */
const POOLABLE: readonly ArchName[] = ['bert', 'nomic-bert', 'gemma-embedding', 'llama', 'qwen2', 'qwen3', 'phi3', 'smollm3'];

/**
 * The config an engine runs under --runner: a pooling model generates only if it is a decoder
 * (its pooling dropped); a decoder pools its last token, L2-normalized (vLLM's default for a
 * decoder run as an embedding model). Throws naming the flag when the model cannot.
 */
export function configForRunner(config: ModelConfig, runner: RunnerKind = 'auto'): ModelConfig {
  if (runner === 'auto') return config;
  if (runner === 'generate') {
    if (config.bidirectional) throw new InvalidArgumentError(`--runner generate: ${config.arch} is an encoder; it pools, it cannot generate`);
    if (!config.pooling) return config;
    const { pooling: _pooling, ...rest } = config;
    return rest;
  }
  if (config.pooling) return config;
  if (!POOLABLE.includes(config.arch)) throw new InvalidArgumentError(`--runner pooling: loom pools ${POOLABLE.join(', ')} models, not ${config.arch}`);
  return { ...config, pooling: { type: 'last', normalize: true } };
}
