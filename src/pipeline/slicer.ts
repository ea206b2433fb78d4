// Cooperative chunks for the serving thread's long loops.
import { setImmediate as yieldToLoop } from 'node:timers/promises';

/**
 * Cooperative chunks for work that loops over many small items (a prompt list, many
 * sequences): `await slicer.tick()` between items yields to the event loop once a slice
 * of `sliceMs` has run, so /health and other clients' streams get their turn.
 */
export class Slicer {
  private started = performance.now();

  constructor(private readonly sliceMs = 10) {}

  async tick(): Promise<void> {
    if (performance.now() - this.started < this.sliceMs) return;
    await yieldToLoop();
    this.started = performance.now();
  }
}
