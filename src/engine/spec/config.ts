// Speculative decoding's settings, as vLLM's --speculative-config spells them (a JSON object).
// Two methods: prompt lookup ("ngram": drafts copied from the sequence's own prompt and
// output, no second model) and a draft model ("draft_model": a small model with the same
// vocabulary runs K decode steps per sequence, spec/draft-model-drafter.ts).
import { InvalidArgumentError } from '../../errors.js';

interface CommonConfig {
  /** K: most draft tokens verified per sequence per step */
  readonly numSpeculativeTokens: number;
  /** no drafting while more sequences than this run (vLLM's disable_by_batch_size) */
  readonly disableByBatchSize: number;
  /** fields vLLM reads that loom accepts and ignores, each with why (printed at start) */
  readonly notes: readonly string[];
}

export interface NgramConfig extends CommonConfig {
  readonly method: 'ngram';
  /** longest and shortest suffix n-gram looked up in the sequence */
  readonly promptLookupMax: number;
  readonly promptLookupMin: number;
}

export interface DraftModelConfig extends CommonConfig {
  readonly method: 'draft_model';
  /** the draft model's path (a GGUF file or a Hugging Face folder) */
  readonly model: string;
}

export type SpeculativeConfig = NgramConfig | DraftModelConfig;

/** the JSON fields, as vLLM names them */
export interface SpeculativeConfigInput {
  readonly method?: string;
  readonly num_speculative_tokens?: number;
  readonly prompt_lookup_max?: number;
  readonly prompt_lookup_min?: number;
  readonly disable_by_batch_size?: number;
  readonly model?: string;
  readonly draft_tensor_parallel_size?: number;
  readonly quantization?: string | null;
  readonly revision?: string | null;
  readonly code_revision?: string | null;
  readonly max_model_len?: number | null;
}

/** vLLM's default n-gram sizes when neither is given */
const DEFAULT_LOOKUP = 5;
/** Measured (docs/benchmarks.md, "Speculative decoding"): above this many running sequences a K+1-token verify costs more than it saves. */
export const DEFAULT_DISABLE_BY_BATCH_SIZE = 8;
/** beyond this a draft is far longer than prompt lookup ever gets accepted */
const MAX_SPECULATIVE_TOKENS = 64;
/** vLLM's draft-model fields that have no meaning on one CPU engine: accepted, ignored with a note */
const IGNORED: Record<string, string> = {
  draft_tensor_parallel_size: 'loom runs the draft model in the engine worker, on the same threads as the target',
  quantization: 'the draft model runs in the weight types of its file',
  revision: 'the draft model is a local path',
  code_revision: 'the draft model is a local path',
  max_model_len: 'the draft model drafts up to its own context length, then the sequence stops drafting',
};
const FIELDS = ['method', 'num_speculative_tokens', 'prompt_lookup_max', 'prompt_lookup_min', 'disable_by_batch_size', 'model', ...Object.keys(IGNORED)];

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
  if (method === undefined) throw new InvalidArgumentError(`${option}: "method" is required ("ngram" or "draft_model")`);
  if (method !== 'ngram' && method !== 'draft_model') throw new InvalidArgumentError(`${option}: "method" must be "ngram" or "draft_model", got ${JSON.stringify(method)}`);
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
  const disableByBatchSize = int('disable_by_batch_size', 1) ?? DEFAULT_DISABLE_BY_BATCH_SIZE;
  if (method === 'draft_model') {
    for (const field of ['prompt_lookup_max', 'prompt_lookup_min']) {
      if (obj[field] !== undefined) throw new InvalidArgumentError(`${option}: "${field}" does not apply to method "draft_model" (it is an "ngram" setting)`);
    }
    const model = obj.model;
    if (typeof model !== 'string' || model.length === 0) throw new InvalidArgumentError(`${option}: method "draft_model" needs "model", the draft model's path`);
    const notes = Object.keys(IGNORED)
      .filter((f) => obj[f] !== undefined && obj[f] !== null)
      .map((f) => `${option}: "${f}" is ignored (${IGNORED[f]})`);
    return { method, model, numSpeculativeTokens: k, disableByBatchSize, notes };
  }
  if (obj.model !== undefined) throw new InvalidArgumentError(`${option}: "model" does not apply to method "ngram" (it drafts from the sequence itself)`);
  for (const f of Object.keys(IGNORED)) {
    if (obj[f] !== undefined) throw new InvalidArgumentError(`${option}: "${f}" does not apply to method "ngram" (it is a draft-model setting)`);
  }
  let max = int('prompt_lookup_max', 1);
  let min = int('prompt_lookup_min', 1);
  // as vLLM: one given sets the other; neither gives 5 and 5
  max ??= min ?? DEFAULT_LOOKUP;
  min ??= max;
  if (min > max) throw new InvalidArgumentError(`${option}: "prompt_lookup_min" (${min}) must not exceed "prompt_lookup_max" (${max})`);
  return { method: 'ngram', numSpeculativeTokens: k, promptLookupMax: max, promptLookupMin: min, disableByBatchSize, notes: [] };
}
