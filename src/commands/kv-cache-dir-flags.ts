// --kv-cache-dir and --kv-cache-dir-size, one definition for every command that runs an engine
// with a prefix cache (serve, generate, chat): prefix blocks kept on disk across runs.
import { Command } from 'commander';
import { ENGINE_DEFAULTS } from '../engine/options.js';
import type { EngineOptions } from '../engine/options.js';

export interface KvCacheDirFlags {
  kvCacheDir?: string;
  kvCacheDirSize: string;
}

export function addKvCacheDirFlags(cmd: Command, restarted = 'a restarted server finds them'): Command {
  return cmd
    .option('--kv-cache-dir <dir>', `keep prefix-cache blocks on disk too, so ${restarted} (checksummed files keyed by the model file, dtype and block hashes)`)
    .option('--kv-cache-dir-size <size>', 'bytes the --kv-cache-dir files may take (8GiB, 500MB); least recently used out first', ENGINE_DEFAULTS.kvCacheDirSize);
}

/** the flags as engine options; without --kv-cache-dir, none */
export function kvCacheDirOptionsOf(flags: KvCacheDirFlags): Pick<EngineOptions, 'kvCacheDir' | 'kvCacheDirSize'> {
  return flags.kvCacheDir !== undefined ? { kvCacheDir: flags.kvCacheDir, kvCacheDirSize: flags.kvCacheDirSize } : {};
}
