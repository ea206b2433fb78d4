// The machine's load, so benchmark figures can say whether they were measured on a quiet machine.
import { availableParallelism, loadavg } from 'node:os';

/** the 1-minute load average */
export function loadAverage(): number {
  return loadavg()[0] ?? 0;
}

/** a warning when other work competes for the cores (load above half of them), else undefined */
export function busyWarning(): string | undefined {
  const load = loadAverage();
  const cores = availableParallelism();
  if (load <= cores / 2) return undefined;
  return `warning: the load average is ${load.toFixed(2)} on ${cores} cores: other work competes for the CPU, so these figures are indicative only`;
}
