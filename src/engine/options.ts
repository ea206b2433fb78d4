// Engine options as users give them (CLI/serve flags), resolved against the model and machine.
import { accessSync, constants, mkdirSync } from 'node:fs';
import { freemem } from 'node:os';
import { InvalidArgumentError } from '../errors.js';
import { KV_DTYPES, KV_Q8_BLOCK } from '../kernels/index.js';
import type { KvDtype } from '../kernels/index.js';
import { KvCache } from '../model/kv-cache.js';
import { SwaBlocks } from './swa-blocks.js';
import { modelIdentity } from './kv-block-file.js';
import { layerAttention, ownsKv, recurrentStateBytes } from '../model/weights.js';
import type { ModelConfig } from '../model/weights.js';
import type { EngineConfig } from './engine.js';
import { LOGPROBS_MODES } from './logprobs.js';
import type { LogprobsMode } from './logprobs.js';
import { parseSpeculativeConfig } from './spec/config.js';
import type { SpeculativeConfigInput } from './spec/config.js';
import type { RunnerKind } from '../model/pooling.js';

export type Backend = 'auto' | 'native' | 'reference';

export interface EngineOptions {
  readonly model: string;
  readonly backend?: Backend;
  readonly threads?: number;
  /** bytes ("4GiB", "512MB", 1e9) or a fraction of free memory ("0.2") for the KV cache */
  readonly kvCacheMemory?: string | number;
  /** the KV cache's element type (vLLM's --kv-cache-dtype): 'auto' (= f16), f16, f32, q8_0
   *  (llama.cpp's q8_0 cache: 8 bits and an f16 scale per 32 values, ~1.88× the tokens of f16)
   *  or q4_0 (4 bits and a scale per 32, ~3.56×) */
  readonly kvCacheDtype?: KvCacheDtypeOption;
  readonly blockSize?: number;
  readonly maxNumBatchedTokens?: number;
  readonly maxNumSeqs?: number;
  /** while sequences decode, a step that also prefills may take this many times a decode-only step (0: no limit) */
  readonly stepTimeFactor?: number;
  readonly maxModelLen?: number;
  readonly enablePrefixCaching?: boolean;
  /** checkpoints for prefix caching of a hybrid model (each recurrentStateBytes, engine/state-checkpoints.ts)
   *  or a sliding-window pool (each one window's blocks there, engine/window-checkpoints.ts), out of
   *  --kv-cache-memory; default stateCheckpointsFor(); 0 turns such a model's prefix caching off */
  readonly stateCheckpoints?: number;
  readonly logprobsMode?: LogprobsMode;
  /** sliding-window layers (Gemma 2/3) in a pool of their own that keeps only the windows
   *  (default); false keeps their whole context beside the global layers', for prefix caching */
  readonly swaPool?: boolean;
  /** report prefix-cache changes as KV events (the server publishes them), hashes rooted at hashSeed */
  readonly kvEvents?: { readonly hashSeed: string };
  /** speculative decoding as vLLM's --speculative-config: JSON text or the object, e.g.
   *  {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4} */
  readonly speculativeConfig?: string | SpeculativeConfigInput;
  /** vLLM's --runner: pool (embeddings, rerank) or generate; auto = what the model file says */
  readonly runner?: RunnerKind;
  /** map the model file and use its tensors in place (default true); false reads them into memory (--no-mmap) */
  readonly mmap?: boolean;
  /** lock the weights in RAM (--mlock); when the system refuses, a warning */
  readonly mlock?: boolean;
  /** a vision projector file (llama.cpp's mmproj GGUF) whose images the model reads (--mmproj) */
  readonly mmproj?: string;
  /** keep prefix-cache blocks in this directory too, so a restarted engine finds them (--kv-cache-dir) */
  readonly kvCacheDir?: string;
  /** bytes the directory's block files may take ("8GiB"), least recently used out first (--kv-cache-dir-size) */
  readonly kvCacheDirSize?: string | number;
}

export type KvCacheDtypeOption = 'auto' | KvDtype;

/** what --kv-cache-dtype accepts */
export const KV_CACHE_DTYPES: readonly KvCacheDtypeOption[] = ['auto', ...KV_DTYPES];

export const ENGINE_DEFAULTS = {
  backend: 'auto',
  kvCacheMemory: '2GiB',
  kvCacheDtype: 'auto',
  blockSize: 16,
  maxNumBatchedTokens: 2048,
  maxNumSeqs: 256,
  stepTimeFactor: 2,
  enablePrefixCaching: true,
  logprobsMode: 'raw_logprobs',
  kvCacheDirSize: '8GiB',
} as const;

/** without --max-model-len the context is lowered to fit the KV cache, but never below this (or the model's own) */
export const MIN_FITTED_CONTEXT = 4096;

const UNITS: Record<string, number> = { '': 1, b: 1, kb: 1e3, mb: 1e6, gb: 1e9, kib: 2 ** 10, mib: 2 ** 20, gib: 2 ** 30 };

/** --kv-cache-dir-size: "8GiB", "500MB" or a byte count (no fraction: the disk is not memory) */
export function parseDiskSize(value: string | number): number {
  const m = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/.exec(String(value).trim().toLowerCase());
  const unit = m ? UNITS[m[2]!] : undefined;
  const bytes = m && unit !== undefined ? Number(m[1]) * unit : NaN;
  if (!(bytes >= 1)) throw new InvalidArgumentError(`--kv-cache-dir-size: cannot read "${value}" (try 8GiB or 500MB)`);
  return Math.floor(bytes);
}

/** --kv-cache-dir, made if missing and checked writable: a start-up error naming the flag, not a failing engine */
function usableDir(path: string): string {
  try {
    mkdirSync(path, { recursive: true });
    accessSync(path, constants.W_OK);
  } catch (err) {
    throw new InvalidArgumentError(`--kv-cache-dir ${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
  return path;
}

/** "4GiB" → bytes; a number or numeric string ≤ 1 is a fraction of free memory */
export function parseMemory(value: string | number): number {
  const text = String(value).trim().toLowerCase();
  const m = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/.exec(text);
  const unit = m ? UNITS[m[2]!] : undefined;
  if (!m || unit === undefined) throw new InvalidArgumentError(`--kv-cache-memory: cannot read "${value}" (try 4GiB, 512MB or 0.2)`);
  const n = Number(m[1]);
  if (m[2] === '' && n <= 1) {
    if (n <= 0) throw new InvalidArgumentError('--kv-cache-memory must be more than 0');
    return n * freemem();
  }
  return n * unit;
}

function positiveInt(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) throw new InvalidArgumentError(`--${name} must be a positive integer, got ${value}`);
  return value;
}

/**
 * The most blocks one step's whole inputs can hold: at most `maxNumSeqs` inputs of `tokens`
 * tokens in all, each ending in a partly filled block (≤ blockSize − 1 empty slots).
 */
export function pooledStepBlocks(tokens: number, maxNumSeqs: number, blockSize: number): number {
  return Math.floor((tokens + Math.min(maxNumSeqs, tokens) * (blockSize - 1)) / blockSize);
}

/** `draftModel`: the draft model's config when --speculative-config names one (its KV cache shares the memory) */
export function resolveEngineConfig(opts: EngineOptions, model: ModelConfig, eosTokenIds: readonly number[], draftModel?: ModelConfig): EngineConfig {
  const speculative = opts.speculativeConfig !== undefined ? parseSpeculativeConfig(opts.speculativeConfig) : undefined;
  const draft = speculative?.method === 'draft_model' ? draftModel : undefined;
  if (speculative?.method === 'draft_model') {
    if (!draft) throw new InvalidArgumentError(`--speculative-config: the draft model ${speculative.model} is not loaded`);
    // a recurrent state has no positions to roll rejected drafts back to
    if (draft.linearAttention) throw new InvalidArgumentError(`--speculative-config: the draft model ${speculative.model} has recurrent (linear-attention) layers, which cannot roll back rejected drafts`);
  }
  const blockSize = positiveInt('block-size', opts.blockSize ?? ENGINE_DEFAULTS.blockSize);
  let maxModelLen = positiveInt('max-model-len', opts.maxModelLen ?? model.contextLength);
  if (maxModelLen > model.contextLength) {
    throw new InvalidArgumentError(`--max-model-len ${maxModelLen} is beyond the model's context length ${model.contextLength}`);
  }
  const maxNumSeqs = positiveInt('max-num-seqs', opts.maxNumSeqs ?? ENGINE_DEFAULTS.maxNumSeqs);
  // a pooling model keeps K/V in f32 (llama.cpp's encoders keep no cache: their K/V stay f32)
  // and computes each input whole in one step, so one step must hold a whole context (vLLM's default too)
  const pooling = model.pooling !== undefined;
  const askedDtype = opts.kvCacheDtype ?? ENGINE_DEFAULTS.kvCacheDtype;
  const kvCacheDtype = resolveKvCacheDtype(pooling && askedDtype === 'auto' ? 'f32' : askedDtype, model, draft);
  const maxNumBatchedTokens = positiveInt(
    'max-num-batched-tokens',
    opts.maxNumBatchedTokens ?? (pooling ? Math.max(ENGINE_DEFAULTS.maxNumBatchedTokens, maxModelLen) : ENGINE_DEFAULTS.maxNumBatchedTokens),
  );
  if (pooling && speculative) throw new InvalidArgumentError('--speculative-config: a pooling model does not generate');
  // a hybrid model's recurrent state (one slot per sequence) comes out of the same budget
  const perState = recurrentStateBytes(model);
  const stateBytes = perState * maxNumSeqs;
  const budget = parseMemory(opts.kvCacheMemory ?? ENGINE_DEFAULTS.kvCacheMemory) - stateBytes;
  if (budget <= 0) {
    throw new InvalidArgumentError(
      `the recurrent state of --max-num-seqs ${maxNumSeqs} sequences takes ${(stateBytes / 2 ** 20).toFixed(1)} MiB, all of --kv-cache-memory ${opts.kvCacheMemory ?? ENGINE_DEFAULTS.kvCacheMemory}: raise it or lower --max-num-seqs`,
    );
  }
  // and so do its state checkpoints, when it caches prefixes
  const pooled = model.slidingWindow !== undefined && opts.swaPool !== false;
  const wantsPrefixCaching = !pooling && (opts.enablePrefixCaching ?? ENGINE_DEFAULTS.enablePrefixCaching);
  const stateCheckpoints = perState > 0 && wantsPrefixCaching ? (opts.stateCheckpoints ?? stateCheckpointsFor(perState, budget, maxNumSeqs)) : 0;
  if (!(Number.isInteger(stateCheckpoints) && stateCheckpoints >= 0)) throw new InvalidArgumentError(`state checkpoints must be a whole number ≥ 0, got ${stateCheckpoints}`);
  const memory = budget - stateCheckpoints * perState;
  if (memory <= 0) {
    throw new InvalidArgumentError(
      `${stateCheckpoints} state checkpoints take ${((stateCheckpoints * perState) / 2 ** 20).toFixed(1)} MiB, all of --kv-cache-memory left after the sequences' recurrent state: raise it or take fewer`,
    );
  }
  // never more than every sequence at full length could use; a pooling model frees an input's
  // blocks in the step that computes it, so never more than one step's inputs hold
  const useful = Math.min(
    maxNumSeqs * Math.ceil(maxModelLen / blockSize),
    pooling ? Math.max(Math.ceil(maxModelLen / blockSize), pooledStepBlocks(maxNumBatchedTokens, maxNumSeqs, blockSize)) : Infinity,
  );
  // a draft model's cache holds as many blocks as the target's (speculation is refused with a swa pool)
  const perToken = KvCache.bytesPerToken(model, kvCacheDtype) + (draft ? KvCache.bytesPerToken(draft, kvCacheDtype) : 0);
  // a sliding-window pool caches prefixes with window checkpoints (window-checkpoints.ts): each pins one
  // window's blocks in that pool, which is sized for them
  const windowBlocks = model.slidingWindow ? SwaBlocks.blocksPerSequence(model.slidingWindow.size, blockSize) : 0;
  const windowBytes = windowBlocks * blockSize * KvCache.bytesPerToken(model, kvCacheDtype, 'sliding');
  const windowCheckpoints = pooled && wantsPrefixCaching ? (opts.stateCheckpoints ?? stateCheckpointsFor(windowBytes, memory, maxNumSeqs)) : 0;
  if (!(Number.isInteger(windowCheckpoints) && windowCheckpoints >= 0)) throw new InvalidArgumentError(`state checkpoints must be a whole number ≥ 0, got ${windowCheckpoints}`);
  const { numBlocks, swaBlocks } = pooled
    ? splitSwaPool(model, kvCacheDtype, blockSize, memory, useful, maxNumSeqs, maxNumBatchedTokens, windowCheckpoints * windowBlocks)
    : { numBlocks: Math.min(Math.floor(memory / (perToken * blockSize)), useful), swaBlocks: 0 };
  // one request may grow to the whole context: a cache that cannot hold that would cut it short
  let blocksPerContext = Math.ceil(maxModelLen / blockSize);
  let contextNote: string | undefined;
  // no --max-model-len: fit the context to the cache (whole blocks, never below the floor), as llama-server does
  const floor = Math.min(MIN_FITTED_CONTEXT, model.contextLength);
  if (numBlocks < blocksPerContext && opts.maxModelLen === undefined && numBlocks * blockSize >= floor) {
    const fitted = numBlocks * blockSize;
    contextNote =
      `context ${fitted} tokens, lowered from the model's ${maxModelLen} to what the KV cache holds (--kv-cache-memory ${opts.kvCacheMemory ?? ENGINE_DEFAULTS.kvCacheMemory}); ` +
      `for the whole context raise --kv-cache-memory to at least ${((blocksPerContext * perToken * blockSize) / 2 ** 20).toFixed(1)} MiB, or set --max-model-len`;
    maxModelLen = fitted;
    blocksPerContext = numBlocks;
  }
  if (numBlocks < blocksPerContext) {
    // what one context needs in every layer's cache (a sliding-window pool needs less: this is the bound to quote)
    const mib = (blocks: number) => `${((blocks * perToken * blockSize) / 2 ** 20).toFixed(1)} MiB`;
    throw new InvalidArgumentError(
      `the KV cache holds ${numBlocks * blockSize} tokens (from --kv-cache-memory ${opts.kvCacheMemory ?? ENGINE_DEFAULTS.kvCacheMemory}), ` +
        `fewer than one context of ${maxModelLen} tokens: raise --kv-cache-memory to at least ${mib(blocksPerContext)} ` +
        `or lower --max-model-len to at most ${numBlocks * blockSize}` +
        (opts.maxModelLen === undefined ? ` (without --max-model-len the context is fitted to the cache, but never below ${floor} tokens)` : ''),
    );
  }
  const stepTimeFactor = opts.stepTimeFactor ?? ENGINE_DEFAULTS.stepTimeFactor;
  if (!(stepTimeFactor === 0 || stepTimeFactor >= 1) || !Number.isFinite(stepTimeFactor)) {
    throw new InvalidArgumentError(`--step-time-factor must be 0 (no limit) or a number ≥ 1, got ${stepTimeFactor}`);
  }
  if (speculative && pooled) {
    throw new InvalidArgumentError('--speculative-config: not available while the sliding-window layers keep a pool of their own (library option swaPool: false keeps them in the global blocks)');
  }
  // a recurrent state has no positions to roll rejected drafts back to
  if (speculative && model.linearAttention) throw new InvalidArgumentError('--speculative-config: not available for hybrid models with recurrent (linear-attention) layers');
  const enablePrefixCaching = wantsPrefixCaching && (perState === 0 || stateCheckpoints > 0) && (!pooled || windowCheckpoints > 0);
  if (opts.kvCacheDir !== undefined && !(enablePrefixCaching && perState === 0 && !pooled)) {
    throw new InvalidArgumentError(
      `--kv-cache-dir keeps prefix-cache blocks, which restore the whole state only of a model with prefix caching on and every layer in the global KV blocks (${pooling ? 'a pooling model caches no prefixes' : perState > 0 ? 'not a hybrid model: its recurrent state is not in them' : pooled ? 'not a sliding-window pool: library option swaPool: false keeps those layers in the global blocks' : 'prefix caching is off'})`,
    );
  }
  const kvCacheDir = opts.kvCacheDir !== undefined
    ? { path: usableDir(opts.kvCacheDir), maxBytes: parseDiskSize(opts.kvCacheDirSize ?? ENGINE_DEFAULTS.kvCacheDirSize), modelId: modelIdentity(opts.model) }
    : undefined;
  const logprobsMode = opts.logprobsMode ?? ENGINE_DEFAULTS.logprobsMode;
  if (!LOGPROBS_MODES.includes(logprobsMode)) throw new InvalidArgumentError(`--logprobs-mode must be one of ${LOGPROBS_MODES.join(', ')}`);
  return {
    numBlocks,
    swaBlocks,
    blockSize,
    kvDtype: kvCacheDtype,
    maxModelLen,
    maxNumSeqs,
    maxNumBatchedTokens,
    stepTimeFactor,
    // a cached prefix would need its last window in the sliding-window pool, which it does not keep;
    // a hybrid model's needs the recurrent state after it: from a state checkpoint;
    // pooling models: every input is computed whole, its blocks freed at once
    ...(pooling && { wholeSequences: true }),
    enablePrefixCaching,
    ...(stateCheckpoints + windowCheckpoints > 0 && { stateCheckpoints: stateCheckpoints + windowCheckpoints }),
    logprobsMode,
    eosTokenIds,
    ...(opts.kvEvents ? { kvEvents: opts.kvEvents } : {}),
    ...(speculative ? { speculative } : {}),
    ...(contextNote !== undefined && { contextNote }),
    ...(kvCacheDir && { kvCacheDir }),
  };
}

/** --kv-cache-dtype as the cache's element type ('auto': f16); q8_0 and q4_0 need every KV-keeping
 *  layer's head size (the target's and a draft model's) to be whole blocks of 32, as llama.cpp does */
export function resolveKvCacheDtype(option: string, model: ModelConfig, draft?: ModelConfig): KvDtype {
  if (!(KV_CACHE_DTYPES as readonly string[]).includes(option)) {
    throw new InvalidArgumentError(`--kv-cache-dtype must be one of ${KV_CACHE_DTYPES.join(', ')}, got "${option}"`);
  }
  const dtype = option === 'auto' ? 'f16' : (option as KvDtype);
  if (dtype === 'q8_0' || dtype === 'q4_0') {
    for (const [which, config] of [['the model', model], ['the draft model', draft]] as const) {
      if (!config) continue;
      const sizes = new Set<number>();
      for (let li = 0; li < config.numLayers; li++) if (ownsKv(config, li)) sizes.add(layerAttention(config, li).headDim);
      const odd = [...sizes].filter((d) => d % KV_Q8_BLOCK !== 0);
      if (odd.length > 0) {
        throw new InvalidArgumentError(`--kv-cache-dtype ${dtype} needs attention head sizes that are a multiple of ${KV_Q8_BLOCK} (whole ${dtype} blocks, as llama.cpp requires); ${which}'s head size is ${odd.join(', ')}: use f16`);
      }
    }
  }
  return dtype;
}

/**
 * Splits the KV memory between the global layers' blocks (N, every token of every sequence)
 * and the sliding-window layers' pool (S blocks, only the windows): S is what maxNumSeqs
 * sequences past their windows plus one step's new tokens can hold at once, and never more
 * than N (a sequence never holds more there than in the global pool), plus the blocks window
 * checkpoints pin (prefix caching). N·(global bytes) + S·(sliding bytes) fits the memory.
 */
function splitSwaPool(
  model: ModelConfig,
  dtype: KvDtype,
  blockSize: number,
  memory: number,
  useful: number,
  maxNumSeqs: number,
  maxNumBatchedTokens: number,
  /** blocks the window checkpoints pin */
  pinnedBlocks = 0,
): { numBlocks: number; swaBlocks: number } {
  const sw = model.slidingWindow!;
  const globalBlock = KvCache.bytesPerToken(model, dtype, 'global') * blockSize;
  const swaBlock = KvCache.bytesPerToken(model, dtype, 'sliding') * blockSize;
  const swaNeed = maxNumSeqs * (SwaBlocks.blocksPerSequence(sw.size, blockSize) + 1) + Math.ceil(maxNumBatchedTokens / blockSize) + pinnedBlocks;
  // both pools the same size while that stays under swaNeed
  let numBlocks = Math.min(Math.floor(memory / (globalBlock + swaBlock)), useful);
  if (numBlocks > swaNeed && globalBlock > 0) numBlocks = Math.min(Math.floor((memory - swaNeed * swaBlock) / globalBlock), useful);
  return { numBlocks, swaBlocks: Math.max(1, Math.min(numBlocks, swaNeed)) };
}

/** The start-up lines of a draft model: its KV cache, which comes out of --kv-cache-memory, and the fields ignored. */
export function draftModelLines(config: EngineConfig, draft: ModelConfig | undefined): string[] {
  const spec = config.speculative;
  if (spec?.method !== 'draft_model' || !draft) return [...(spec?.notes ?? [])];
  const bytes = KvCache.bytesPerToken(draft, config.kvDtype) * config.numBlocks * config.blockSize;
  return [
    `speculative decoding: draft model ${spec.model} (${draft.numLayers} layers, hidden ${draft.hiddenSize}), K ${spec.numSpeculativeTokens}; ` +
      `its KV cache ${config.numBlocks} blocks of ${config.blockSize} tokens = ${(bytes / 2 ** 20).toFixed(1)} MiB of --kv-cache-memory`,
    ...spec.notes,
  ];
}

/**
 * A hybrid model's state checkpoints when none are asked for: two per --max-num-seqs (a running
 * sequence's prompt checkpoint and its newest generation-time one), but at most a quarter of
 * the memory left after the sequences' own state (`budget`), so the KV blocks keep the most.
 */
export function stateCheckpointsFor(perState: number, budget: number, maxNumSeqs: number): number {
  return Math.max(0, Math.min(2 * maxNumSeqs, Math.floor(budget / 4 / perState)));
}

/** The start-up line of a hybrid model: its recurrent state per sequence and in all, and its state
 *  checkpoints (prefix caching), which come out of --kv-cache-memory. undefined for other models. */
export function recurrentStateLine(model: ModelConfig, maxNumSeqs: number, stateCheckpoints = 0): string | undefined {
  const perSeq = recurrentStateBytes(model);
  if (perSeq === 0) return undefined;
  const layers = model.linearAttention!.layers.filter(Boolean).length;
  const mib = (n: number) => `${((perSeq * n) / 2 ** 20).toFixed(1)} MiB`;
  return (
    `recurrent state ${(perSeq / 2 ** 10).toFixed(1)} KiB per sequence (${layers} Gated DeltaNet layers) × --max-num-seqs ${maxNumSeqs} = ` +
    `${mib(maxNumSeqs)} of --kv-cache-memory; ` +
    (stateCheckpoints > 0
      ? `prefix caching keeps ${stateCheckpoints} state checkpoints at block boundaries = ${mib(stateCheckpoints)} more`
      : 'prefix caching is off (no state checkpoints)')
  );
}
