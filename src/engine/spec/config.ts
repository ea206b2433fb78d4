// Speculative decoding's settings, as vLLM's --speculative-config spells them (a JSON object).
// Only prompt lookup ("ngram") runs in loom: drafts are copied from the sequence's own
// prompt and output, so no second model is loaded.
import { InvalidArgumentError } from '../../errors.js';

export interface SpeculativeConfig {
  readonly method: 'ngram';
  /** K: most draft tokens verified per sequence per step */
  readonly numSpeculativeTokens: number;
  /** longest and shortest suffix n-gram looked up in the sequence */
  readonly promptLookupMax: number;
  readonly promptLookupMin: number;
  /** no drafting while more sequences than this run (vLLM's disable_by_batch_size) */
  readonly disableByBatchSize: number;
}

/** the JSON fields, as vLLM names them */
export interface SpeculativeConfigInput {
  readonly method?: string;
  readonly num_speculative_tokens?: number;
  readonly prompt_lookup_max?: number;
  readonly prompt_lookup_min?: number;
  readonly disable_by_batch_size?: number;
  readonly model?: string;
}

/** vLLM's default n-gram sizes when neither is given */
const DEFAULT_LOOKUP = 5;
/** Measured (README, "Speculative decoding"): above this many running sequences a K+1-token verify costs more than it saves. */
export const DEFAULT_DISABLE_BY_BATCH_SIZE = 8;
/** beyond this a draft is far longer than prompt lookup ever gets accepted */
const MAX_SPECULATIVE_TOKENS = 64;
const FIELDS = ['method', 'num_speculative_tokens', 'prompt_lookup_max', 'prompt_lookup_min', 'disable_by_batch_size', 'model'];

/**
 * Reads --speculative-config: a JSON text or an already parsed object. Every error names the
 * option (`option`) and the field.
 */
export function parseSpeculativeConfig(value: string | SpeculativeConfigInput, option = '--speculative-config'): SpeculativeConfig {
  let raw: unknown = value;
  if (typeof value === 'string') {
    try {
      raw = JSON.parse(value);
    } catch (err) {
      throw new InvalidArgumentError(`${option}: not valid JSON (${(err as Error).message})`);
    }
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new InvalidArgumentError(`${option} must be a JSON object, e.g. {"method": "ngram", "num_speculative_tokens": 4}`);
  const obj = raw as Record<string, unknown>;
  for (const key of Object.keys(obj)) {
    if (!FIELDS.includes(key)) throw new InvalidArgumentError(`${option}: unknown field "${key}" (known: ${FIELDS.join(', ')})`);
  }
  const method = obj.method ?? (obj.model !== undefined ? 'draft_model' : undefined);
  if (method === undefined) throw new InvalidArgumentError(`${option}: "method" is required ("ngram")`);
  if (method === 'draft_model') throw new InvalidArgumentError(`${option}: method "draft_model" is not available in loom yet; use "ngram" (prompt lookup)`);
  if (method !== 'ngram') throw new InvalidArgumentError(`${option}: "method" must be "ngram", got ${JSON.stringify(method)}`);
  if (obj.model !== undefined) throw new InvalidArgumentError(`${option}: "model" does not apply to method "ngram" (it drafts from the sequence itself)`);
  const int = (field: string, min: number, max = Number.MAX_SAFE_INTEGER): number | undefined => {
    const v = obj[field];
    if (v === undefined) return undefined;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
      throw new InvalidArgumentError(`${option}: "${field}" must be an integer in [${min}, ${max === Number.MAX_SAFE_INTEGER ? '∞' : max}], got ${JSON.stringify(v)}`);
    }
    return v;
  };
  const k = int('num_speculative_tokens', 1, MAX_SPECULATIVE_TOKENS);
  if (k === undefined) throw new InvalidArgumentError(`${option}: "num_speculative_tokens" is required`);
  let max = int('prompt_lookup_max', 1);
  let min = int('prompt_lookup_min', 1);
  // as vLLM: one given sets the other; neither gives 5 and 5
  max ??= min ?? DEFAULT_LOOKUP;
  min ??= max;
  if (min > max) throw new InvalidArgumentError(`${option}: "prompt_lookup_min" (${min}) must not exceed "prompt_lookup_max" (${max})`);
  const disableByBatchSize = int('disable_by_batch_size', 1) ?? DEFAULT_DISABLE_BY_BATCH_SIZE;
  return { method: 'ngram', numSpeculativeTokens: k, promptLookupMax: max, promptLookupMin: min, disableByBatchSize };
}
