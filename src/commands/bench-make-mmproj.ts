// `loom bench make-mmproj`: writes (or reuses) a random-weight vision projector of a real model's shape.
import { copyFileSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { Command, Option } from 'commander';
import { BENCH_MODELS_DIR } from '../bench/make-model.js';
import { MMPROJ_SHAPES, MMPROJ_TYPES, ensureMmproj, mmprojPath } from '../bench/make-mmproj.js';
import type { MmprojShapeName, MmprojType } from '../bench/make-mmproj.js';
import { intArg } from './bench-args.js';

interface MakeMmprojFlags {
  shape: MmprojShapeName;
  type: MmprojType;
  seed: number;
  out?: string;
  force?: boolean;
}

export function benchMakeMmprojCommand(): Command {
  return new Command('make-mmproj')
    .description(
      'write a random-weight vision projector (llama.cpp\'s mmproj GGUF, the keys and tensor names its converter writes) ' +
        'of a real model\'s shape and print its path; its text model is `bench make-model --shape` of the same name. ' +
        'Cached in dist/bench-models/ by shape, type and seed.',
    )
    .addOption(new Option('--shape <name>', 'projector shape').choices(Object.keys(MMPROJ_SHAPES)).default('gemma3-4b'))
    .addOption(new Option('--type <type>', 'weight type of the matrices (conv kernels stay F16)').choices([...MMPROJ_TYPES]).default('f16'))
    .addOption(new Option('--seed <s>', 'seed of the weights').default(0).argParser(intArg('seed', 0)))
    .option('--out <file>', 'also copy the file here (the cache keeps its copy)')
    .option('--force', 'write the file again even if it is cached')
    .action((f: MakeMmprojFlags) => {
      const t0 = performance.now();
      const log = (line: string): void => void process.stderr.write(line + '\n');
      const options = { shape: f.shape, type: f.type, seed: f.seed };
      if (f.force) rmSync(mmprojPath(BENCH_MODELS_DIR, options), { force: true });
      const { path: cached, made } = ensureMmproj(BENCH_MODELS_DIR, options, log);
      if (made) log(`make-mmproj: wrote ${cached} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
      if (f.out) copyFileSync(cached, f.out);
      process.stdout.write((f.out ? resolve(f.out) : cached) + '\n');
    });
}
