// Drives an EngineCore: applies inbound messages between steps and keeps stepping while
// there is work, yielding to the event loop after each step so new messages get in.
import type { EngineCore } from './engine.js';
import { loadXGrammar, xgrammarIfLoaded } from './grammar/xgrammar-binding.js';
import type { EngineInbound, EngineOutbound, StepOutput } from './protocol.js';

export class EngineLoop {
  private scheduled = false;
  private stopped = false;
  /** messages held, in order, while the grammar engine loads (only the first grammar request waits) */
  private held: EngineInbound[] | undefined;

  constructor(
    private readonly engine: EngineCore,
    private readonly post: (msg: EngineOutbound) => void,
  ) {}

  handle(msg: EngineInbound): void {
    if (!this.held && msg.type === 'add' && msg.params.grammar && !xgrammarIfLoaded()) {
      const held: EngineInbound[] = (this.held = []);
      // a failed load leaves xgrammar unloaded: the grammar requests then get an error delta
      void loadXGrammar()
        .catch((err: unknown) => process.stderr.write(`loom: the grammar engine did not load: ${String(err)}\n`))
        .finally(() => {
          this.held = undefined;
          for (const m of held) this.handle(m);
        });
    }
    if (this.held) {
      this.held.push(msg);
      return;
    }
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
        this.post({ type: 'reset', ok: this.engine.resetPrefixCache(msg.external === true) });
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
        ...this.engine.cacheStats(),
        numPreemptions: s.numPreemptions,
        scheduledTokens: 0,
        forwardMs: 0,
        stepMs: 0,
      },
    };
  }
}
