// Drives an EngineCore: applies inbound messages between steps and keeps stepping while
// there is work, yielding to the event loop after each step so new messages get in.
import type { EngineCore } from './engine.js';
import type { EngineInbound, EngineOutbound, StepOutput } from './protocol.js';

export class EngineLoop {
  private scheduled = false;
  private stopped = false;

  constructor(
    private readonly engine: EngineCore,
    private readonly post: (msg: EngineOutbound) => void,
  ) {}

  handle(msg: EngineInbound): void {
    switch (msg.type) {
      case 'add': {
        const refused = this.engine.add(msg);
        if (refused) this.post(this.stepOf([refused]));
        break;
      }
      case 'abort':
        this.engine.abort(msg.ids);
        // an abort that leaves nothing to run produces no step: report the freed state here
        if (!this.engine.hasWork) this.post(this.stepOf([]));
        break;
      case 'reset-prefix-cache':
        this.post({ type: 'reset', ok: this.engine.resetPrefixCache() });
        break;
      case 'shutdown':
        this.stopped = true;
        return;
    }
    this.wake();
  }

  /** Runs steps until there is no work; the next message wakes it again. */
  wake(): void {
    if (this.scheduled || this.stopped) return;
    this.scheduled = true;
    setImmediate(() => this.run());
  }

  private run(): void {
    this.scheduled = false;
    if (this.stopped) return;
    let out: StepOutput | undefined;
    try {
      out = this.engine.step();
    } catch (err) {
      this.stopped = true;
      this.post({ type: 'fatal', message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
      return;
    }
    if (out) this.post(out);
    if (this.engine.hasWork) this.wake();
  }

  private stepOf(deltas: StepOutput['deltas']): StepOutput {
    const s = this.engine.scheduler;
    const b = this.engine.blocks;
    return {
      type: 'step',
      deltas,
      stats: {
        numRunning: s.numRunning,
        numWaiting: s.numWaiting,
        kvCacheUsage: b.usage(),
        prefixCacheQueries: b.stats.queries,
        prefixCacheHits: b.stats.hits,
        numPreemptions: s.numPreemptions,
        scheduledTokens: 0,
        forwardMs: 0,
        stepMs: 0,
      },
    };
  }
}
