// Engine options as users give them (CLI/serve flags), resolved against the model and machine.
import { freemem } from 'node:os';
import { InvalidArgumentError } from '../errors.js';
import type { KvDtype } from '../kernels/index.js';
import { KvCache } from '../model/kv-cache.js';
import type { ModelConfig } from '../model/weights.js';
import type { EngineConfig } from './engine.js';
import { LOGPROBS_MODES } from './logprobs.js';
import type { LogprobsMode } from './logprobs.js';

export type Backend = 'auto' | 'native' | 'reference';

export interface EngineOptions {
  readonly model: string;
  readonly backend?: Backend;
  readonly threads?: number;
  /** bytes ("4GiB", "512MB", 1e9) or a fraction of free memory ("0.2") for the KV cache */
  readonly kvCacheMemory?: string | number;
  readonly kvCacheDtype?: KvDtype;
  readonly blockSize?: number;
  readonly maxNumBatchedTokens?: number;
  readonly maxNumSeqs?: number;
  readonly maxModelLen?: number;
  readonly enablePrefixCaching?: boolean;
  readonly logprobsMode?: LogprobsMode;
  /** report prefix-cache changes as KV events (the server publishes them), hashes rooted at hashSeed */
  readonly kvEvents?: { readonly hashSeed: string };
}

export const ENGINE_DEFAULTS = {
  backend: 'auto',
  kvCacheMemory: '2GiB',
  kvCacheDtype: 'f16',
  blockSize: 16,
  maxNumBatchedTokens: 2048,
  maxNumSeqs: 256,
  enablePrefixCaching: true,
  logprobsMode: 'raw_logprobs',
} as const;

const UNITS: Record<string, number> = { '': 1, b: 1, kb: 1e3, mb: 1e6, gb: 1e9, kib: 2 ** 10, mib: 2 ** 20, gib: 2 ** 30 };

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

export function resolveEngineConfig(opts: EngineOptions, model: ModelConfig, eosTokenIds: readonly number[]): EngineConfig {
  const blockSize = positiveInt('block-size', opts.blockSize ?? ENGINE_DEFAULTS.blockSize);
  const maxModelLen = positiveInt('max-model-len', opts.maxModelLen ?? model.contextLength);
  if (maxModelLen > model.contextLength) {
    throw new InvalidArgumentError(`--max-model-len ${maxModelLen} is beyond the model's context length ${model.contextLength}`);
  }
  const maxNumSeqs = positiveInt('max-num-seqs', opts.maxNumSeqs ?? ENGINE_DEFAULTS.maxNumSeqs);
  const kvCacheDtype = opts.kvCacheDtype ?? ENGINE_DEFAULTS.kvCacheDtype;
  const bytesPerBlock = KvCache.bytesPerToken(model, kvCacheDtype) * blockSize;
  const wanted = Math.floor(parseMemory(opts.kvCacheMemory ?? ENGINE_DEFAULTS.kvCacheMemory) / bytesPerBlock);
  // never more than every sequence at full length could use
  const useful = maxNumSeqs * Math.ceil(maxModelLen / blockSize);
  const numBlocks = Math.min(wanted, useful);
  if (numBlocks < Math.ceil(maxModelLen / blockSize) && numBlocks < 2) {
    throw new InvalidArgumentError(`--kv-cache-memory holds ${numBlocks} blocks of ${blockSize} tokens: too few to run`);
  }
  const logprobsMode = opts.logprobsMode ?? ENGINE_DEFAULTS.logprobsMode;
  if (!LOGPROBS_MODES.includes(logprobsMode)) throw new InvalidArgumentError(`--logprobs-mode must be one of ${LOGPROBS_MODES.join(', ')}`);
  return {
    numBlocks,
    blockSize,
    kvDtype: kvCacheDtype,
    maxModelLen,
    maxNumSeqs,
    maxNumBatchedTokens: positiveInt('max-num-batched-tokens', opts.maxNumBatchedTokens ?? ENGINE_DEFAULTS.maxNumBatchedTokens),
    enablePrefixCaching: opts.enablePrefixCaching ?? ENGINE_DEFAULTS.enablePrefixCaching,
    logprobsMode,
    eosTokenIds,
    ...(opts.kvEvents ? { kvEvents: opts.kvEvents } : {}),
  };
}
