// Keeps an engine running: when the worker dies, throws, or hangs past the watchdog, its
// open requests have already ended (EngineDeadError); the supervisor starts a fresh engine
// (reloading the model) after a backoff, and gives up (so a process supervisor takes over)
// once more than `maxRestarts` deaths fall within `restartWindowMs`.
import type { AddOptions, EngineClient, EngineInfo } from './client.js';
import type { EngineOptions } from './options.js';
import type { StepOutput, StepStats } from './protocol.js';
import type { RequestStream } from './request-stream.js';
import type { SamplingParams } from './sampling-params.js';
import { WorkerEngineClient } from './worker-client.js';

export interface SupervisorOptions {
  /** engine deaths tolerated within the window; one more and onGiveUp is called */
  readonly maxRestarts: number;
  readonly restartWindowMs: number;
  /** first delay before a restart; doubles per death in the window, up to maxBackoffMs */
  readonly backoffMs: number;
  readonly maxBackoffMs: number;
  /** the worker's watchdog (0: none) */
  readonly stepTimeoutMs: number;
  readonly log: (line: string) => void;
  /** the engine cannot be kept up: the caller should exit non-zero */
  readonly onGiveUp: (reason: string) => void;
}

export const SUPERVISOR_DEFAULTS = { maxRestarts: 5, restartWindowMs: 600_000, backoffMs: 1_000, maxBackoffMs: 30_000 } as const;

export class SupervisedEngineClient implements EngineClient {
  private readonly stepListeners: ((step: StepOutput) => void)[] = [];
  private readonly restartListeners: (() => void)[] = [];
  /** times of deaths within the window */
  private deaths: number[] = [];
  private restarting = false;
  private closed = false;
  private timer: NodeJS.Timeout | undefined;
  /** engines started so far, the first included */
  private generation = 1;
  /** engines started after a death */
  restarts = 0;

  private constructor(
    private current: WorkerEngineClient,
    private readonly engineOptions: EngineOptions,
    private readonly opts: SupervisorOptions,
  ) {
    this.watch(current);
  }

  static async start(engineOptions: EngineOptions, opts: SupervisorOptions): Promise<SupervisedEngineClient> {
    const first = await WorkerEngineClient.start(engineOptions, { stepTimeoutMs: opts.stepTimeoutMs, generation: 0 });
    return new SupervisedEngineClient(first, engineOptions, opts);
  }

  get info(): EngineInfo {
    return this.current.info;
  }

  /** false only while a fresh engine is being started (or after close / giving up) */
  get healthy(): boolean {
    return this.current.healthy && !this.restarting && !this.closed;
  }

  get stats(): StepStats | undefined {
    return this.current.stats;
  }

  add(id: string, promptIds: readonly number[] | Int32Array, params: SamplingParams, options?: AddOptions): RequestStream {
    return this.current.add(id, promptIds, params, options);
  }

  abort(id: string): void {
    this.current.abort(id);
  }

  resetPrefixCache(opts?: { readonly external?: boolean }): Promise<boolean> {
    return this.current.resetPrefixCache(opts);
  }

  onStep(listener: (step: StepOutput) => void): void {
    this.stepListeners.push(listener);
    this.current.onStep(listener);
  }

  /** called each time a fresh engine took over (metrics count restarts) */
  onRestart(listener: () => void): void {
    this.restartListeners.push(listener);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.current.close();
  }

  private watch(engine: WorkerEngineClient): void {
    engine.onDeath((reason) => this.onDeath(reason));
  }

  private onDeath(reason: string): void {
    if (this.closed) return;
    const t = Date.now();
    this.deaths = [...this.deaths.filter((d) => t - d < this.opts.restartWindowMs), t];
    if (this.deaths.length > this.opts.maxRestarts) {
      this.closed = true;
      this.opts.onGiveUp(`${reason}; ${this.deaths.length} engine failures within ${this.opts.restartWindowMs / 1000}s (--max-engine-restarts ${this.opts.maxRestarts})`);
      return;
    }
    const delay = Math.min(this.opts.maxBackoffMs, this.opts.backoffMs * 2 ** (this.deaths.length - 1));
    this.opts.log(`${reason}; starting a fresh engine in ${(delay / 1000).toFixed(1)}s`);
    this.restarting = true;
    this.timer = setTimeout(() => void this.restart(), delay);
  }

  private async restart(): Promise<void> {
    let engine: WorkerEngineClient;
    try {
      engine = await WorkerEngineClient.start(this.engineOptions, { stepTimeoutMs: this.opts.stepTimeoutMs, generation: this.generation++ });
    } catch (err) {
      this.onDeath(`the fresh engine did not start: ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    if (this.closed) {
      await engine.close();
      return;
    }
    for (const listener of this.stepListeners) engine.onStep(listener);
    this.current = engine;
    this.watch(engine);
    this.restarting = false;
    this.restarts++;
    this.opts.log(`a fresh engine is running (restart ${this.restarts})`);
    for (const listener of this.restartListeners) listener();
  }
}
