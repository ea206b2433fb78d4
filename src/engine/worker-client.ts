// EngineClient over a worker thread. If the worker dies, throws, or stops answering while
// requests are open (a watchdog), every open request ends with an EngineDeadError, the
// worker is terminated, and the client reports itself unhealthy (a supervisor may then
// start another: see supervisor.ts).
import { Worker } from 'node:worker_threads';
import { LoomError } from '../errors.js';
import type { AddOptions, EngineClient, EngineInfo } from './client.js';
import { DeltaRouter } from './client.js';
import type { EngineOptions } from './options.js';
import type { EngineInbound, EngineOutbound, StepOutput, StepStats } from './protocol.js';
import type { RequestStream } from './request-stream.js';
import type { SamplingParams } from './sampling-params.js';
import type { WorkerInit } from './worker.js';
import { now } from './engine.js';

export class EngineStartError extends LoomError {}

export interface WorkerStartOptions {
  /** a step may take this long while requests are open before the engine counts as hung (0: never) */
  readonly stepTimeoutMs?: number;
  /** engines started before this one (the fault switch fires in the first only) */
  readonly generation?: number;
}

/** vLLM's VLLM_ENGINE_ITERATION_TIMEOUT_S is 60; CPU prefill chunks are slower, so twice that */
export const DEFAULT_STEP_TIMEOUT_MS = 120_000;

export class WorkerEngineClient implements EngineClient {
  private readonly router = new DeltaRouter();
  private resetWaiters: ((ok: boolean) => void)[] = [];
  private readonly deathListeners: ((reason: string) => void)[] = [];
  /** when the worker last said anything (or when requests were first opened after a quiet spell) */
  private lastHeard = now();
  private readonly watchdog: NodeJS.Timeout | undefined;
  healthy = true;

  private constructor(
    private readonly worker: Worker,
    readonly info: EngineInfo,
    stepTimeoutMs: number,
  ) {
    worker.on('message', (msg: EngineOutbound) => this.receive(msg));
    worker.on('error', (err) => this.die(`the engine worker failed: ${err.message}`));
    worker.on('exit', (code) => this.die(`the engine worker exited (code ${code})`));
    if (stepTimeoutMs > 0) {
      this.watchdog = setInterval(
        () => {
          if (this.router.numOpen > 0 && now() - this.lastHeard > stepTimeoutMs) {
            this.die(`the engine did not finish a step within ${stepTimeoutMs / 1000}s`);
          }
        },
        Math.min(1000, stepTimeoutMs / 4),
      );
      this.watchdog.unref();
    }
  }

  /** Starts the worker and resolves once the model is loaded. */
  static start(opts: EngineOptions, start: WorkerStartOptions = {}): Promise<WorkerEngineClient> {
    const init: WorkerInit = { options: opts, generation: start.generation ?? 0 };
    // a worker inherits node's flags; `--input-type` (node -e) stops it loading its file
    const execArgv = process.execArgv.filter((a) => !a.startsWith('--input-type'));
    const worker = new Worker(new URL('./worker.js', import.meta.url), { workerData: init, execArgv });
    return new Promise((resolve, reject) => {
      const onMessage = (msg: EngineOutbound): void => {
        worker.off('message', onMessage);
        if (msg.type === 'ready') {
          const { type: _ready, ...info } = msg;
          resolve(new WorkerEngineClient(worker, info, start.stepTimeoutMs ?? DEFAULT_STEP_TIMEOUT_MS));
        } else {
          void worker.terminate();
          reject(new EngineStartError(msg.type === 'fatal' ? msg.message : `unexpected first message ${msg.type}`));
        }
      };
      worker.on('message', onMessage);
      worker.once('error', (err) => reject(new EngineStartError(err.message)));
      worker.once('exit', (code) => reject(new EngineStartError(`the engine worker exited (code ${code}) while loading`)));
    });
  }

  get stats(): StepStats | undefined {
    return this.router.stats;
  }

  get numOpen(): number {
    return this.router.numOpen;
  }

  add(id: string, promptIds: readonly number[] | Int32Array, params: SamplingParams, options?: AddOptions): RequestStream {
    if (this.router.numOpen === 0) this.lastHeard = now(); // the watchdog counts from the first open request
    const stream = this.router.open(id, options?.pool ? 1 : (params.n ?? 1), () => this.abort(id));
    if (!this.healthy) {
      this.router.failAll('the engine is not running');
      return stream;
    }
    const ids = Int32Array.from(promptIds);
    const images = options?.images?.length ? options.images : undefined;
    const pixels = images ? images.map((i) => i.prepared.pixels.buffer).filter((b): b is ArrayBuffer => b instanceof ArrayBuffer) : [];
    this.send({ type: 'add', id, promptIds: ids, params, arrivalTime: now(), ...(options?.pool && { pool: true as const }), ...(images && { images }) }, [ids.buffer, ...new Set(pixels)]);
    return stream;
  }

  abort(id: string): void {
    if (this.healthy) this.send({ type: 'abort', ids: [id] });
  }

  resetPrefixCache(opts: { readonly external?: boolean } = {}): Promise<boolean> {
    if (!this.healthy) return Promise.resolve(false);
    return new Promise((resolve) => {
      this.resetWaiters.push(resolve);
      this.send({ type: 'reset-prefix-cache', ...(opts.external && { external: true }) });
    });
  }

  onStep(listener: (step: StepOutput) => void): void {
    this.router.onStep(listener);
  }

  /** Called once, when the engine dies (not when it is closed). */
  onDeath(listener: (reason: string) => void): void {
    this.deathListeners.push(listener);
  }

  async close(): Promise<void> {
    clearInterval(this.watchdog);
    if (!this.healthy) return;
    this.healthy = false;
    this.router.failAll('the engine was shut down');
    this.send({ type: 'shutdown' });
    await this.worker.terminate();
  }

  private send(msg: EngineInbound, transfer: ArrayBuffer[] = []): void {
    this.worker.postMessage(msg, transfer);
  }

  private receive(msg: EngineOutbound): void {
    this.lastHeard = now();
    if (msg.type === 'step') this.router.dispatch(msg);
    else if (msg.type === 'reset') this.resetWaiters.shift()?.(msg.ok);
    else if (msg.type === 'fatal') this.die(`the engine failed: ${msg.message.split('\n')[0]}`);
  }

  private die(message: string): void {
    if (!this.healthy) return;
    this.healthy = false;
    clearInterval(this.watchdog);
    this.router.failAll(message);
    for (const w of this.resetWaiters) w(false);
    this.resetWaiters = [];
    // a hung or failed worker is ended; a native step that never returns to JavaScript
    // cannot be interrupted, and its thread is left behind rather than waited for
    void this.worker.terminate();
    for (const listener of this.deathListeners) listener(message);
  }
}
