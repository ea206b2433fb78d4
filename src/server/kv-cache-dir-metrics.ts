// loom's own metrics of the prefix blocks kept on disk (--kv-cache-dir), registered only when
// the engine keeps them. The tokens a lookup found there are vLLM's external_prefix_cache_*
// (metrics.ts); these say what the directory did: blocks read and written, files refused
// (partial, corrupt, foreign) and evicted (its size bound), the time its reads and writes
// took on the engine's thread, and the bytes it holds.
import { Counter, Gauge } from 'prom-client';
import type { Registry } from 'prom-client';
import type { EngineClient } from '../engine/client.js';
import type { StepStats } from '../engine/protocol.js';

type DirStats = NonNullable<StepStats['kvCacheDir']>;

/** how far a cumulative engine counter moved (an engine restarted by the supervisor counts from 0 again) */
export function advance(now: number, last: number): number {
  return now >= last ? now - last : now;
}

export function kvCacheDirMetrics(registry: Registry, labels: Record<string, string>, engine: EngineClient): void {
  const dir = engine.info.kvCacheDir;
  if (dir === undefined) return;
  const labelNames = Object.keys(labels);
  const counters: [keyof DirStats, Counter<string>, number][] = (
    [
      ['blocksLoaded', 'kv_cache_dir_blocks_read_total', 'Prefix blocks read from --kv-cache-dir into the KV cache.', 1],
      ['blocksWritten', 'kv_cache_dir_blocks_written_total', 'Prefix blocks written to --kv-cache-dir (each full block once).', 1],
      ['filesRefused', 'kv_cache_dir_files_refused_total', 'Block files skipped and removed: partial, corrupt or of another model, dtype or format.', 1],
      ['filesEvicted', 'kv_cache_dir_files_evicted_total', 'Block files removed to keep --kv-cache-dir within --kv-cache-dir-size, least recently used first.', 1],
      ['readMs', 'kv_cache_dir_read_seconds_total', "Time the engine's thread spent reading and checking block files.", 1000],
      ['writeMs', 'kv_cache_dir_write_seconds_total', "Time the engine's thread spent writing block files.", 1000],
    ] as const
  ).map(([key, name, help, unit]) => {
    const c = new Counter({ name: `loom:${name}`, help, labelNames, registers: [registry] });
    c.inc(labels, 0);
    return [key, c, unit];
  });
  const bytes = new Gauge({ name: 'loom:kv_cache_dir_bytes', help: 'Bytes of block files in --kv-cache-dir (every model\'s).', labelNames, registers: [registry] });
  const max = new Gauge({ name: 'loom:kv_cache_dir_max_bytes', help: 'The bound on --kv-cache-dir (--kv-cache-dir-size).', labelNames, registers: [registry] });
  max.set(labels, dir.maxBytes);
  bytes.set(labels, dir.bytes);
  let last: Partial<Record<keyof DirStats, number>> = {};
  engine.onStep(({ stats }) => {
    const dir = stats.kvCacheDir;
    if (!dir) return;
    for (const [key, counter, unit] of counters) {
      const by = advance(dir[key], last[key] ?? 0);
      if (by > 0) counter.inc(labels, by / unit);
    }
    bytes.set(labels, dir.bytes);
    last = { ...dir };
  });
}
