// Per-request limits on what multiplies a request's cost (the server's are configurable;
// defaults in `loom serve --help`), checked before any prompt is tokenized.
import { InvalidArgumentError } from '../errors.js';
import type { RequestSpec } from './request.js';

export interface RequestLimits {
  /** completions per prompt */
  readonly maxN: number;
  readonly maxStopStrings: number;
  readonly maxLogitBias: number;
}

export const LIMIT_DEFAULTS: RequestLimits = { maxN: 16, maxStopStrings: 16, maxLogitBias: 1024 };

export function checkLimits(limits: Partial<RequestLimits> | undefined, spec: RequestSpec): void {
  const l = { ...LIMIT_DEFAULTS, ...limits };
  const n = spec.sampling.n ?? 1;
  if (n > l.maxN) throw new InvalidArgumentError(`n must be at most ${l.maxN} on this server (--max-n), got ${n}`, 'n');
  const stops = spec.stop == null ? 0 : typeof spec.stop === 'string' ? 1 : spec.stop.length;
  if (stops > l.maxStopStrings) throw new InvalidArgumentError(`at most ${l.maxStopStrings} stop strings on this server (--max-stop-strings), got ${stops}`, 'stop');
  const bias = spec.sampling.logitBias;
  const entries = bias == null ? 0 : bias instanceof Map ? bias.size : Object.keys(bias).length;
  if (entries > l.maxLogitBias) throw new InvalidArgumentError(`at most ${l.maxLogitBias} logit_bias entries on this server (--max-logit-bias), got ${entries}`, 'logit_bias');
}
