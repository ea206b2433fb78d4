// EngineClient over a worker thread. If the worker dies, every open request ends with an
// EngineDeadError and the client reports itself unhealthy.
import { Worker } from 'node:worker_threads';
import { LoomError } from '../errors.js';
import type { EngineClient, EngineInfo } from './client.js';
import { DeltaRouter } from './client.js';
import type { EngineOptions } from './options.js';
import type { EngineInbound, EngineOutbound, StepOutput, StepStats } from './protocol.js';
import type { RequestStream } from './request-stream.js';
import type { SamplingParamsInput } from './sampling-params.js';
import { now } from './engine.js';

export class EngineStartError extends LoomError {}

export class WorkerEngineClient implements EngineClient {
  private readonly router = new DeltaRouter();
  private resetWaiters: ((ok: boolean) => void)[] = [];
  healthy = true;

  private constructor(
    private readonly worker: Worker,
    readonly info: EngineInfo,
  ) {
    worker.on('message', (msg: EngineOutbound) => this.receive(msg));
    worker.on('error', (err) => this.die(`the engine worker failed: ${err.message}`));
    worker.on('exit', (code) => this.die(`the engine worker exited (code ${code})`));
  }

  /** Starts the worker and resolves once the model is loaded. */
  static start(opts: EngineOptions): Promise<WorkerEngineClient> {
    // a worker inherits node's flags; `--input-type` (node -e) stops it loading its file
    const execArgv = process.execArgv.filter((a) => !a.startsWith('--input-type'));
    const worker = new Worker(new URL('./worker.js', import.meta.url), { workerData: opts, execArgv });
    return new Promise((resolve, reject) => {
      const onMessage = (msg: EngineOutbound): void => {
        worker.off('message', onMessage);
        if (msg.type === 'ready') {
          const { type: _ready, ...info } = msg;
          resolve(new WorkerEngineClient(worker, info));
        } else {
          void worker.terminate();
          reject(new EngineStartError(msg.type === 'fatal' ? msg.message : `unexpected first message ${msg.type}`));
        }
      };
      worker.on('message', onMessage);
      worker.once('error', (err) => reject(new EngineStartError(err.message)));
    });
  }

  get stats(): StepStats | undefined {
    return this.router.stats;
  }

  add(id: string, promptIds: readonly number[] | Int32Array, params: SamplingParamsInput): RequestStream {
    const stream = this.router.open(id, params.n ?? 1, () => this.abort(id));
    if (!this.healthy) {
      stream.fail(new Error('the engine is not running'));
      return stream;
    }
    const ids = Int32Array.from(promptIds);
    this.send({ type: 'add', id, promptIds: ids, params, arrivalTime: now() }, [ids.buffer]);
    return stream;
  }

  abort(id: string): void {
    if (this.healthy) this.send({ type: 'abort', ids: [id] });
  }

  resetPrefixCache(): Promise<boolean> {
    return new Promise((resolve) => {
      this.resetWaiters.push(resolve);
      this.send({ type: 'reset-prefix-cache' });
    });
  }

  onStep(listener: (step: StepOutput) => void): void {
    this.router.onStep(listener);
  }

  async close(): Promise<void> {
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
    if (msg.type === 'step') this.router.dispatch(msg);
    else if (msg.type === 'reset') this.resetWaiters.shift()?.(msg.ok);
    else if (msg.type === 'fatal') this.die(`the engine failed: ${msg.message}`);
  }

  private die(message: string): void {
    if (!this.healthy) return;
    this.healthy = false;
    this.router.failAll(message);
    for (const w of this.resetWaiters) w(false);
    this.resetWaiters = [];
  }
}
