// Per-request sampling parameters: the input form (every field optional, what the server
// and CLI send, structured-clonable) and the resolved form (defaults filled, validated).
// Semantics follow vLLM's SamplingParams; names are camelCase, messages name the
// parameter as the OpenAI API spells it.
import assert from 'node:assert/strict';
import { InvalidArgumentError } from '../errors.js';
import { validateGrammarSpec } from './grammar/spec.js';
import type { GrammarSpec } from './grammar/spec.js';
import { validateGrammarGate } from './grammar/gate.js';
import type { GrammarGate } from './grammar/gate.js';

export type { GrammarSpec } from './grammar/spec.js';

/** Largest top-N of `logprobs` / `promptLogprobs` (OpenAI's and vLLM's cap). */
export const MAX_LOGPROBS = 20;
/** Temperatures below this sample greedily (vLLM's _SAMPLING_EPS). */
export const GREEDY_EPSILON = 1e-5;

export interface SamplingParamsInput {
  /** 0 = greedy (argmax of the biased/penalised logits); default 1 */
  readonly temperature?: number;
  /** keep the k highest logits (ties at the k-th kept); ≤ 0 = off */
  readonly topK?: number;
  /** nucleus mass in (0, 1]; 1 = off */
  readonly topP?: number;
  /** drop tokens with p < minP·p_max, in [0, 1]; 0 = off */
  readonly minP?: number;
  /** > 0; 1 = off. Tokens in prompt ∪ output: logit > 0 ? logit / r : logit · r */
  readonly repetitionPenalty?: number;
  /** [-2, 2]; logit −= f · count(token in output) */
  readonly frequencyPenalty?: number;
  /** [-2, 2]; logit −= p if token in output */
  readonly presencePenalty?: number;
  /** token id → bias in [-100, 100] added to its logit (a record's keys are decimal ids) */
  readonly logitBias?: ReadonlyMap<number, number> | Readonly<Record<string, number>> | null;
  /** null/absent = a random seed; the same seed reproduces the same tokens in any batch */
  readonly seed?: number | null;
  /** ids that end the completion, besides the model's EOS ids */
  readonly stopTokenIds?: readonly number[];
  /** do not stop at the model's EOS ids */
  readonly ignoreEos?: boolean;
  /** EOS and stop ids are suppressed until this many tokens are generated */
  readonly minTokens?: number;
  /** null = until the context is full */
  readonly maxTokens?: number | null;
  /** completions sharing the prompt */
  readonly n?: number;
  /** null = none; 0..20 = the sampled token's logprob plus this many top alternatives */
  readonly logprobs?: number | null;
  /** null = none; 0..20 = each prompt token's logprob (from the 2nd) plus top-N */
  readonly promptLogprobs?: number | null;
  /** null = any token; else only these ids may be sampled (vLLM's allowed_token_ids) */
  readonly allowedTokenIds?: readonly number[] | null;
  /** token sequences never generated: a sequence's last token is banned wherever the output ends with the rest (vLLM's bad_words) */
  readonly badWords?: readonly (readonly number[])[];
  /** null = unconstrained; else every sampled token keeps the output inside this grammar */
  readonly grammar?: GrammarSpec | null;
  /** null = the grammar applies from the first token; else it waits for the reasoning to end (grammar/gate.ts) */
  readonly grammarGate?: GrammarGate | null;
  /** prefix-cache namespace: requests with different salts share no cached blocks (vLLM's cache_salt; not sampling, but it travels with the request's parameters) */
  readonly cacheSalt?: string | null;
}

export interface SamplingParams {
  readonly temperature: number;
  readonly topK: number;
  readonly topP: number;
  readonly minP: number;
  readonly repetitionPenalty: number;
  readonly frequencyPenalty: number;
  readonly presencePenalty: number;
  readonly logitBias: ReadonlyMap<number, number>;
  readonly seed: number | null;
  readonly stopTokenIds: readonly number[];
  readonly ignoreEos: boolean;
  readonly minTokens: number;
  readonly maxTokens: number | null;
  readonly n: number;
  readonly logprobs: number | null;
  readonly promptLogprobs: number | null;
  readonly allowedTokenIds: readonly number[] | null;
  readonly badWords: readonly (readonly number[])[];
  readonly grammar: GrammarSpec | null;
  readonly grammarGate: GrammarGate | null;
  readonly cacheSalt: string | null;
}

export const DEFAULT_SAMPLING_PARAMS: SamplingParams = Object.freeze({
  temperature: 1,
  topK: 0,
  topP: 1,
  minP: 0,
  repetitionPenalty: 1,
  frequencyPenalty: 0,
  presencePenalty: 0,
  logitBias: new Map<number, number>(),
  seed: null,
  stopTokenIds: [],
  ignoreEos: false,
  minTokens: 0,
  maxTokens: null,
  n: 1,
  logprobs: null,
  promptLogprobs: null,
  allowedTokenIds: null,
  badWords: [],
  grammar: null,
  grammarGate: null,
  cacheSalt: null,
});

/** Fills defaults and validates; `vocabSize` (when known) bounds logit_bias and stop ids. */
export function resolveSamplingParams(input: SamplingParamsInput = {}, vocabSize?: number): SamplingParams {
  const d = DEFAULT_SAMPLING_PARAMS;
  const p: SamplingParams = {
    temperature: input.temperature ?? d.temperature,
    topK: input.topK ?? d.topK,
    topP: input.topP ?? d.topP,
    minP: input.minP ?? d.minP,
    repetitionPenalty: input.repetitionPenalty ?? d.repetitionPenalty,
    frequencyPenalty: input.frequencyPenalty ?? d.frequencyPenalty,
    presencePenalty: input.presencePenalty ?? d.presencePenalty,
    logitBias: toBiasMap(input.logitBias),
    seed: input.seed ?? d.seed,
    stopTokenIds: input.stopTokenIds ?? d.stopTokenIds,
    ignoreEos: input.ignoreEos ?? d.ignoreEos,
    minTokens: input.minTokens ?? d.minTokens,
    maxTokens: input.maxTokens ?? d.maxTokens,
    n: input.n ?? d.n,
    logprobs: input.logprobs ?? d.logprobs,
    promptLogprobs: input.promptLogprobs ?? d.promptLogprobs,
    allowedTokenIds: input.allowedTokenIds ?? d.allowedTokenIds,
    badWords: input.badWords ?? d.badWords,
    grammar: input.grammar ? validateGrammarSpec(input.grammar) : null,
    grammarGate: input.grammarGate ?? d.grammarGate,
    cacheSalt: input.cacheSalt ?? d.cacheSalt,
  };
  validateSamplingParams(p, vocabSize);
  return p;
}

/**
 * The engine's check of parameters the frontend resolved (pipeline/request.ts): every field
 * present (an input form here is a frontend bug, an AssertionError), every value valid
 * (InvalidArgumentError naming the first bad one, which the engine reports as a refusal).
 * Nothing is filled in or converted: the engine runs what the frontend resolved.
 */
export function assertSamplingParams(p: SamplingParams, vocabSize?: number): SamplingParams {
  for (const key of Object.keys(DEFAULT_SAMPLING_PARAMS) as (keyof SamplingParams)[]) {
    assert(p[key] !== undefined, `sampling parameter ${key} is missing: the engine takes resolved parameters (resolveSamplingParams)`);
  }
  assert(p.logitBias instanceof Map, 'logitBias must be a Map: the engine takes resolved parameters (resolveSamplingParams)');
  validateSamplingParams(p, vocabSize);
  if (p.grammar) validateGrammarSpec(p.grammar);
  return p;
}

/** Throws InvalidArgumentError naming the first bad parameter. */
export function validateSamplingParams(p: SamplingParams, vocabSize?: number): void {
  const bad = (name: string, want: string, got: unknown): never => {
    throw new InvalidArgumentError(`${name} must be ${want}, got ${String(got)}`, name);
  };
  const isInt = Number.isSafeInteger;
  if (!(p.temperature >= 0 && Number.isFinite(p.temperature))) bad('temperature', 'a finite number ≥ 0', p.temperature);
  if (!isInt(p.topK)) bad('top_k', 'an integer (≤ 0 disables it)', p.topK);
  if (!(p.topP > 0 && p.topP <= 1)) bad('top_p', 'in (0, 1]', p.topP);
  if (!(p.minP >= 0 && p.minP <= 1)) bad('min_p', 'in [0, 1]', p.minP);
  if (!(p.repetitionPenalty > 0 && Number.isFinite(p.repetitionPenalty))) bad('repetition_penalty', 'a finite number > 0', p.repetitionPenalty);
  if (!(p.frequencyPenalty >= -2 && p.frequencyPenalty <= 2)) bad('frequency_penalty', 'in [-2, 2]', p.frequencyPenalty);
  if (!(p.presencePenalty >= -2 && p.presencePenalty <= 2)) bad('presence_penalty', 'in [-2, 2]', p.presencePenalty);
  for (const [id, bias] of p.logitBias) {
    if (!isTokenId(id, vocabSize)) bad('logit_bias', `keyed by token ids${vocabSize ? ` in [0, ${vocabSize})` : ''}`, `key ${id}`);
    if (!(bias >= -100 && bias <= 100)) bad('logit_bias', 'values in [-100, 100]', `${bias} for token ${id}`);
  }
  if (p.seed !== null && !isInt(p.seed)) bad('seed', 'an integer', p.seed);
  for (const id of p.stopTokenIds) {
    if (!isTokenId(id, vocabSize)) bad('stop_token_ids', `token ids${vocabSize ? ` in [0, ${vocabSize})` : ''}`, id);
  }
  if (!isInt(p.minTokens) || p.minTokens < 0) bad('min_tokens', 'an integer ≥ 0', p.minTokens);
  if (p.maxTokens !== null && (!isInt(p.maxTokens) || p.maxTokens < 1)) bad('max_tokens', 'an integer ≥ 1', p.maxTokens);
  if (p.maxTokens !== null && p.minTokens > p.maxTokens) bad('min_tokens', `≤ max_tokens (${p.maxTokens})`, p.minTokens);
  if (!isInt(p.n) || p.n < 1) bad('n', 'an integer ≥ 1', p.n);
  if (p.allowedTokenIds !== null) {
    if (p.allowedTokenIds.length === 0) bad('allowed_token_ids', 'a non-empty list', '[]');
    for (const id of p.allowedTokenIds) if (!isTokenId(id, vocabSize)) bad('allowed_token_ids', `token ids${vocabSize ? ` in [0, ${vocabSize})` : ''}`, id);
  }
  for (const word of p.badWords) {
    if (word.length === 0) bad('bad_words', 'words of at least one token', '""');
    for (const id of word) if (!isTokenId(id, vocabSize)) bad('bad_words', `token ids${vocabSize ? ` in [0, ${vocabSize})` : ''}`, id);
  }
  for (const [name, v] of [['logprobs', p.logprobs], ['prompt_logprobs', p.promptLogprobs]] as const) {
    if (v !== null && (!isInt(v) || v < 0 || v > MAX_LOGPROBS)) bad(name, `null or an integer in [0, ${MAX_LOGPROBS}]`, v);
  }
  if (p.grammarGate !== null) {
    const why = validateGrammarGate(p.grammarGate, (id) => isTokenId(id, vocabSize));
    if (why !== null) bad('grammar_gate', why, JSON.stringify(p.grammarGate));
  }
}

/** Whether sampling is greedy (argmax after bias and penalties). */
export function isGreedy(p: Pick<SamplingParams, 'temperature'>): boolean {
  return p.temperature < GREEDY_EPSILON;
}

/** Parameters of completion `index` of an n > 1 request: a seeded request's children get seed + index (as vLLM). */
export function childSamplingParams(p: SamplingParams, index: number): SamplingParams {
  return { ...p, n: 1, seed: p.seed === null ? null : p.seed + index };
}

function isTokenId(id: number, vocabSize: number | undefined): boolean {
  return Number.isSafeInteger(id) && id >= 0 && (vocabSize === undefined || id < vocabSize);
}

function toBiasMap(bias: SamplingParamsInput['logitBias']): ReadonlyMap<number, number> {
  if (bias == null) return DEFAULT_SAMPLING_PARAMS.logitBias;
  if (bias instanceof Map) return bias;
  const out = new Map<number, number>();
  for (const [key, value] of Object.entries(bias)) {
    const id = /^\d+$/.test(key) ? Number(key) : NaN;
    if (Number.isNaN(id)) throw new InvalidArgumentError(`logit_bias must be keyed by token ids, got key "${key}"`, 'logit_bias');
    out.set(id, value);
  }
  return out;
}
