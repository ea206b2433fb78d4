// A test-only fault switch: LOOM_TEST_FAULT=<throw|exit|hang>@<step>[/all] makes the engine
// worker throw from, exit in, or hang in its Nth step, in its first incarnation only (or in
// every one with /all), so the suite can prove that the server survives each fault.
import { InvalidArgumentError } from '../errors.js';
import type { EngineCore } from './engine.js';

export type FaultKind = 'throw' | 'exit' | 'hang';

export interface FaultSpec {
  readonly kind: FaultKind;
  /** 1-based count of engine steps */
  readonly step: number;
  /** fire in every engine the supervisor starts, not only the first */
  readonly always: boolean;
}

export const FAULT_ENV = 'LOOM_TEST_FAULT';

export function parseFault(text: string | undefined): FaultSpec | undefined {
  if (!text) return undefined;
  const m = /^(throw|exit|hang)@(\d+)(\/all)?$/.exec(text.trim());
  if (!m) throw new InvalidArgumentError(`${FAULT_ENV}="${text}": expected throw|exit|hang@STEP[/all]`);
  return { kind: m[1] as FaultKind, step: Number(m[2]), always: m[3] !== undefined };
}

/** Wraps engine.step so the fault fires at the given step. `generation` counts engine starts from 0. */
export function installFault(engine: EngineCore, spec: FaultSpec | undefined, generation: number): void {
  if (!spec || (generation > 0 && !spec.always)) return;
  const step = engine.step.bind(engine);
  let count = 0;
  engine.step = () => {
    if (++count === spec.step) {
      if (spec.kind === 'throw') throw new Error(`injected fault: throw at step ${count}`);
      if (spec.kind === 'exit') process.exit(70);
      for (;;); // hang: a busy step the watchdog has to notice
    }
    return step();
  };
}
