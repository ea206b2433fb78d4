import { Option } from 'commander';
import { InvalidArgumentError } from '../errors.js';
import { ENGINE_DEFAULTS, KV_CACHE_DTYPES } from '../engine/options.js';
import type { KvCacheDtypeOption } from '../engine/options.js';

/** commander argParser for numeric flags, with a message naming the flag */
export const numberOption =
  (name: string, integer: boolean) =>
  (value: string): number => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n) || (integer && !Number.isInteger(n))) {
      throw new InvalidArgumentError(`--${name} expects ${integer ? 'an integer' : 'a number'}, got "${value}"`);
    }
    return n;
  };

/** --kv-cache-dtype (vLLM's flag): the KV cache's element type, shared by serve, generate, chat and the benchmarks */
export function kvCacheDtypeOption(): Option {
  return new Option('--kv-cache-dtype <type>', "KV cache element type: auto (f16; f32 for pooling models), f16, f32, q8_0 or q4_0 (llama.cpp's: ~1.88x / ~3.56x the tokens of f16 in the same memory)")
    .choices([...KV_CACHE_DTYPES])
    .default(ENGINE_DEFAULTS.kvCacheDtype);
}

export type { KvCacheDtypeOption };
