// The engine's pooling requests (embeddings, rerank): one prefill-only sequence each,
// scheduled with everything else; when its prompt is computed its hidden states are pooled,
// the vector goes out as the request's one delta and its blocks are freed in the same step.
import type { Kernels } from '../kernels/index.js';
import type { ForwardBatch } from '../model/batch.js';
import type { Pooler } from '../model/pooling.js';
import type { AddRequest, RequestDelta } from './protocol.js';
import type { ScheduledChunk, Scheduler } from './scheduler.js';
import { Sequence } from './sequence.js';

export class PoolingRequests {
  private readonly live = new Map<string, Sequence>();

  constructor(
    readonly pooler: Pooler,
    private readonly scheduler: Scheduler,
  ) {}

  has(id: string): boolean {
    return this.live.has(id);
  }

  add(req: AddRequest): void {
    const seq = new Sequence(req.id, 0, req.promptIds, req.arrivalTime);
    // a cached prefix holds no K/V this bidirectional pass could reuse
    seq.noPrefixCache = true;
    this.live.set(req.id, seq);
    this.scheduler.add(seq);
  }

  abort(id: string): void {
    const seq = this.live.get(id);
    if (seq) this.scheduler.finish(seq, 'abort');
  }

  /**
   * After the forward pass (hidden: [numTokens, hidden] of `batch`): pools every chunk whose
   * prompt is now computed, finishes it (its blocks are free before the next step) and
   * returns its delta. Call before the scheduler's update of the chunks.
   */
  pool(chunks: readonly ScheduledChunk[], batch: ForwardBatch, hidden: Float32Array, k: Kernels, time: number): RequestDelta[] {
    const done: number[] = [];
    chunks.forEach(({ seq, numTokens }, i) => {
      if (seq.numComputed + numTokens === seq.tokens.length && this.live.get(seq.requestId) === seq) done.push(i);
    });
    if (done.length === 0) return [];
    const vectors = this.pooler.pool(hidden, batch.seqStarts, done, k);
    return done.map((i, j) => {
      const seq = chunks[i]!.seq;
      this.live.delete(seq.requestId);
      return {
        id: seq.requestId,
        index: 0,
        tokenIds: new Int32Array(0),
        times: Float64Array.of(time),
        finishReason: 'stop',
        cachedPromptTokens: 0,
        ...(seq.firstScheduledTime !== undefined && { firstScheduledTime: seq.firstScheduledTime }),
        pooled: vectors[j]!,
      };
    });
  }

  /** the closing delta of a pooling sequence that finished without its vector (aborted, or the cache could not hold it) */
  ended(seq: Sequence): RequestDelta | undefined {
    if (this.live.get(seq.requestId) !== seq) return undefined;
    this.live.delete(seq.requestId);
    return { id: seq.requestId, index: 0, tokenIds: new Int32Array(0), times: new Float64Array(0), finishReason: seq.finishReason ?? 'abort' };
  }
}
