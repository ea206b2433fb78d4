// EngineClient running the engine on this thread (tests, embedding without a worker).
import type { AddOptions, EngineClient, EngineInfo } from './client.js';
import { DeltaRouter } from './client.js';
import { engineInfo } from './create.js';
import type { EngineCore } from './engine.js';
import { now } from './engine.js';
import { EngineLoop } from './engine-loop.js';
import type { EngineOutbound, StepOutput, StepStats } from './protocol.js';
import type { RequestStream } from './request-stream.js';
import type { SamplingParams } from './sampling-params.js';

export class InProcessEngineClient implements EngineClient {
  private readonly router = new DeltaRouter();
  private readonly loop: EngineLoop;
  private resetWaiters: ((ok: boolean) => void)[] = [];
  readonly info: EngineInfo;
  healthy = true;

  constructor(readonly engine: EngineCore) {
    this.info = engineInfo(engine);
    this.loop = new EngineLoop(engine, (msg) => this.receive(msg));
  }

  get stats(): StepStats | undefined {
    return this.router.stats;
  }

  add(id: string, promptIds: readonly number[] | Int32Array, params: SamplingParams, options?: AddOptions): RequestStream {
    const stream = this.router.open(id, options?.pool ? 1 : (params.n ?? 1), () => this.abort(id));
    this.loop.handle({ type: 'add', id, promptIds: Int32Array.from(promptIds), params, arrivalTime: now(), ...(options?.pool && { pool: true as const }), ...(options?.images?.length && { images: options.images }) });
    return stream;
  }

  abort(id: string): void {
    this.loop.handle({ type: 'abort', ids: [id] });
  }

  resetPrefixCache(opts: { readonly external?: boolean } = {}): Promise<boolean> {
    return new Promise((resolve) => {
      this.resetWaiters.push(resolve);
      this.loop.handle({ type: 'reset-prefix-cache', ...(opts.external && { external: true }) });
    });
  }

  onStep(listener: (step: StepOutput) => void): void {
    this.router.onStep(listener);
  }

  close(): Promise<void> {
    this.healthy = false;
    this.loop.handle({ type: 'shutdown' });
    this.router.failAll('the engine was shut down');
    return Promise.resolve();
  }

  private receive(msg: EngineOutbound): void {
    if (msg.type === 'step') this.router.dispatch(msg);
    else if (msg.type === 'reset') this.resetWaiters.shift()?.(msg.ok);
    else if (msg.type === 'fatal') {
      this.healthy = false;
      this.router.failAll(`the engine failed: ${msg.message}`);
    }
  }
}
