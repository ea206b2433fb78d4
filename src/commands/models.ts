// `loom pull`, `loom list`, `loom rm`: the local model cache (cached-models.ts) by hand.
import { Command } from 'commander';
import { InvalidArgumentError } from '../errors.js';
import { listCachedModels, removeCachedModel } from '../model/cached-models.js';
import { resolveModelPath } from '../model/hub.js';
import { formatBytes } from '../model/hub-progress.js';
import { defaultCacheDir, isHubRef } from '../model/hub-ref.js';

interface CacheFlags {
  cacheDir?: string;
}

const CACHE_DIR_HELP = 'the model cache (default: $LOOM_CACHE or ~/.cache/loom)';

export function pullCommand(): Command {
  return new Command('pull')
    .description('download a model from the Hugging Face Hub into the cache (nothing else)')
    .argument('<model>', 'hf:ORG/REPO[@REVISION][:FILE] (the hf: may be left out)')
    .option('--cache-dir <dir>', CACHE_DIR_HELP)
    .action(async (model: string, flags: CacheFlags) => {
      const ref = isHubRef(model) ? model : `hf:${model}`;
      const path = await resolveModelPath(ref, { offline: false, cacheDir: flags.cacheDir });
      process.stdout.write(`${path}\n`);
    });
}

export function listCommand(): Command {
  return new Command('list')
    .alias('ls')
    .description('list the cached models: name, size, where they came from, path')
    .option('--cache-dir <dir>', CACHE_DIR_HELP)
    .option('--json', 'one JSON array instead of a table')
    .action((flags: CacheFlags & { json?: boolean }) => {
      const models = listCachedModels(flags.cacheDir ?? defaultCacheDir());
      if (flags.json) {
        process.stdout.write(JSON.stringify(models) + '\n');
        return;
      }
      const rows = [['NAME', 'SIZE', 'FROM', 'PATH'], ...models.map((m) => [m.name, formatBytes(m.bytes), m.ref, m.path])];
      const widths = [0, 1, 2].map((i) => Math.max(...rows.map((r) => r[i]!.length)));
      for (const r of rows) process.stdout.write(r.map((c, i) => (i < 3 ? c.padEnd(widths[i]!) : c)).join('  ') + '\n');
    });
}

export function rmCommand(): Command {
  return new Command('rm')
    .description('delete cached models by name (see loom list)')
    .argument('<names...>', 'short names, ORG/REPO, or hf: references')
    .option('--cache-dir <dir>', CACHE_DIR_HELP)
    .action((names: string[], flags: CacheFlags) => {
      if (names.length === 0) throw new InvalidArgumentError('name a model to delete');
      for (const name of names) {
        const m = removeCachedModel(flags.cacheDir ?? defaultCacheDir(), name);
        process.stdout.write(`deleted ${m.name} (${m.ref}, ${formatBytes(m.bytes)})\n`);
      }
    });
}
