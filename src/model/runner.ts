import type { Kernels } from '../kernels/index.js';
import type { Architecture } from './arch/index.js';
import { assertValidBatch } from './batch.js';
import type { ForwardBatch } from './batch.js';
import type { KvCache } from './kv-cache.js';

/** Runs scheduled batches through an architecture over one paged KV cache. */
export class ModelRunner {
  constructor(
    readonly arch: Architecture,
    readonly kv: KvCache,
    readonly kernels: Kernels,
  ) {}

  /** logits [batch.logitIndices.length, vocabSize] */
  execute(batch: ForwardBatch): Float32Array {
    assertValidBatch(batch);
    return this.arch.forward(batch, this.kv, this.kernels);
  }

  /** a pooling model's last hidden states [numTokens, hiddenSize] */
  hiddenStates(batch: ForwardBatch): Float32Array {
    assertValidBatch(batch);
    if (!this.arch.hiddenStates) throw new Error(`${this.arch.config.arch} cannot pool its hidden states`);
    return this.arch.hiddenStates(batch, this.kv, this.kernels);
  }
}
