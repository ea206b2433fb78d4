// One sequence, start to finish, on a ModelRunner: what `loom generate` runs. The
// batching engine replaces this loop; the runner and batch format stay the same.
import { ContextLengthExceededError } from '../errors.js';
import { buildBatch } from '../model/batch.js';
import type { ModelRunner } from '../model/runner.js';
import { Sampler } from './sampler.js';
import type { SamplingParamsInput } from './sampling-params.js';

export type FinishReason = 'stop' | 'length';

export interface GenerateOptions {
  readonly maxTokens: number;
  readonly sampling: SamplingParamsInput;
  /** ids that end generation (ignored with ignoreEos) */
  readonly stopIds: ReadonlySet<number>;
  readonly ignoreEos: boolean;
  readonly contextLength: number;
}

export interface GeneratedToken {
  readonly id: number;
  /** set on the last token */
  readonly finishReason?: FinishReason;
  /** next-token logits this token was drawn from [vocabSize] */
  readonly logits: Float32Array;
}

export function* generateTokens(runner: ModelRunner, promptIds: readonly number[], opts: GenerateOptions): Generator<GeneratedToken> {
  if (promptIds.length === 0) throw new ContextLengthExceededError('the prompt has no tokens');
  const limit = Math.min(opts.contextLength, runner.kv.numSlots);
  if (promptIds.length >= limit) {
    throw new ContextLengthExceededError(`the prompt has ${promptIds.length} tokens; the context holds ${limit}`);
  }
  const blockSize = runner.kv.shape.blockSize;
  const blockTable = Array.from({ length: Math.ceil(limit / blockSize) }, (_, i) => i);
  const sampler = new Sampler(opts.sampling, { promptIds, eosTokenIds: opts.stopIds, kernels: runner.kernels });
  let pending: readonly number[] = promptIds;
  let pos = 0;
  for (let produced = 0; produced < opts.maxTokens; ) {
    const batch = buildBatch([{ tokenIds: pending, startPos: pos, blockTable, wantLogits: true }], blockSize);
    const logits = runner.execute(batch);
    pos += pending.length;
    const id = sampler.sample(logits);
    produced++;
    const stopped = !opts.ignoreEos && opts.stopIds.has(id);
    const full = produced >= opts.maxTokens || pos >= limit;
    const finishReason: FinishReason | undefined = stopped ? 'stop' : full ? 'length' : undefined;
    yield finishReason ? { id, logits, finishReason } : { id, logits };
    if (finishReason) return;
    pending = [id];
  }
}
