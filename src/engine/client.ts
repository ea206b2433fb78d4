// The one interface the server sees, whatever runs the engine (this thread or a worker).
import type { KvDtype } from '../kernels/index.js';
import type { LogprobsMode } from './logprobs.js';
import type { SamplingParams } from './sampling-params.js';
import type { PoolingInfo, StepOutput, StepStats } from './protocol.js';
import { EngineDeadError, RequestStream } from './request-stream.js';
import type { EngineImage } from './image-spans.js';

export interface EngineInfo {
  readonly numBlocks: number;
  readonly blockSize: number;
  readonly maxModelLen: number;
  readonly vocabSize: number;
  /** most sequences running at once (an n above it runs its sequences in turns) */
  readonly maxNumSeqs: number;
  /** whether full blocks of computed prompts are kept for later prompts (undefined: unknown, taken as off) */
  readonly prefixCaching?: boolean;
  /** what logprobs report ('none': the engine refuses logprobs) */
  readonly logprobsMode: LogprobsMode;
  /** the KV cache's element type and the bytes its arrays take (numBlocks · blockSize tokens; absent from test doubles) */
  readonly kvCacheDtype?: KvDtype;
  readonly kvCacheBytes?: number;
  /** when prefix blocks are kept on disk (--kv-cache-dir): its bound (--kv-cache-dir-size) and the bytes it held at start */
  readonly kvCacheDir?: { readonly maxBytes: number; readonly bytes: number };
  /** start-up lines worth printing (the draft model's cache, ignored settings) */
  readonly notes?: readonly string[];
  /** set when the engine pools (embeddings, rerank) instead of generating */
  readonly pooling?: PoolingInfo;
}

export interface AddOptions {
  /** a pooling request: one delta comes back, its `pooled` vector (EngineInfo.pooling says what it is) */
  readonly pool?: boolean;
  /** the prompt's images (the engine's projector encodes them); their pixel buffers move to the engine */
  readonly images?: readonly EngineImage[];
}

export interface EngineClient {
  readonly info: EngineInfo;
  /** false once the engine died; every open request then ended with an EngineDeadError */
  readonly healthy: boolean;
  /** the stats of the latest step */
  readonly stats: StepStats | undefined;
  add(id: string, promptIds: readonly number[] | Int32Array, params: SamplingParams, options?: AddOptions): RequestStream;
  abort(id: string): void;
  /** empties the prefix cache; external: the blocks kept on disk for this model too (--kv-cache-dir) */
  resetPrefixCache(opts?: { readonly external?: boolean }): Promise<boolean>;
  /** called after every step (metrics) */
  onStep(listener: (step: StepOutput) => void): void;
  /** called each time a fresh engine replaced a dead one (supervised clients only) */
  onRestart?(listener: () => void): void;
  close(): Promise<void>;
}

/** Routes step outputs to the open requests' streams. Shared by both clients. */
export class DeltaRouter {
  private readonly streams = new Map<string, RequestStream>();
  private readonly listeners: ((step: StepOutput) => void)[] = [];
  stats: StepStats | undefined;

  open(id: string, numCompletions: number, abort: () => void): RequestStream {
    if (this.streams.has(id)) throw new Error(`request id ${id} is already open`);
    const stream = new RequestStream(id, numCompletions, () => {
      this.streams.delete(id);
      abort();
    });
    this.streams.set(id, stream);
    return stream;
  }

  onStep(listener: (step: StepOutput) => void): void {
    this.listeners.push(listener);
  }

  dispatch(step: StepOutput): void {
    this.stats = step.stats;
    for (const delta of step.deltas) {
      const stream = this.streams.get(delta.id);
      if (!stream) continue; // closed by its consumer, abort already sent
      stream.push(delta);
      if (stream.finished) this.streams.delete(delta.id);
    }
    for (const listener of this.listeners) listener(step);
  }

  failAll(message: string): void {
    for (const stream of this.streams.values()) stream.fail(new EngineDeadError(message));
    this.streams.clear();
  }

  get numOpen(): number {
    return this.streams.size;
  }
}
