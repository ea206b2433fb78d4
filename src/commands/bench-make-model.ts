// `loom bench make-model`: writes (or reuses) a random-weight GGUF of a real model's shape.
import { copyFileSync, renameSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { Command, Option } from 'commander';
import { BENCH_MODELS_DIR, benchModelPath, ensureBenchModel, makeModel } from '../bench/make-model.js';
import { BENCH_TYPES, BENCH_WEIGHTS } from '../bench/bench-types.js';
import { BENCH_SHAPES } from '../bench/bench-shapes.js';
import type { BenchWeights, BenchWeightType } from '../bench/bench-types.js';
import type { BenchShapeName } from '../bench/bench-shapes.js';
import { InvalidArgumentError } from '../errors.js';
import { intArg } from './bench-args.js';

interface MakeModelFlags {
  shape: BenchShapeName;
  type: BenchWeightType;
  seed: number;
  layers?: number;
  weights?: BenchWeights;
  out?: string;
  cache: boolean;
  force?: boolean;
}

export function benchMakeModelCommand(): Command {
  return new Command('make-model')
    .description(
      'write a random-weight GGUF of a real model shape (seeded, with a byte-level BPE vocabulary of the full size ' +
        'that loom and llama.cpp both read; a WordPiece one for the BERT-family embedding shapes) and print its path. Files are cached in dist/bench-models/ by shape, type ' +
        'and seed. q4_k stores matrices whose rows are not a multiple of 256 values (every 576- or 896-wide input) ' +
        'as Q8_0; q4_k_m and q5_k_m mix types as llama-quantize does (Q6_K output and some attn_v/ffn_down, ' +
        'Q5_0/Q5_1/Q8_0 for rows that are not whole 256-blocks); mxfp4_moe is llama-quantize\'s MXFP4_MOE (gpt-oss-20b: ' +
        'the experts MXFP4, every other matrix Q8_0, the router F32); norms and biases stay F32. --weights blocks (the default for ' +
        'mxfp4_moe) draws each quantized block at random with its scales set for the intended RMS instead of quantizing random ' +
        'floats: a whole-size gpt-oss-20b file (about 12 GB) in minutes rather than hours.',
    )
    .addOption(new Option('--shape <name>', 'architecture shape').choices(Object.keys(BENCH_SHAPES)).default('smollm2-135m'))
    .addOption(new Option('--type <type>', 'weight type of the matrices').choices([...BENCH_TYPES]).default('q8_0'))
    .addOption(new Option('--seed <s>', 'seed of the weights').default(0).argParser(intArg('seed', 0)))
    .addOption(new Option('--layers <n>', 'layers instead of the shape\'s own (same vocabulary: e.g. a draft model for speculative decoding)').argParser(intArg('layers')))
    .addOption(new Option('--weights <how>', 'quantized: random Gaussians quantized (slow for large files); blocks: random quantized blocks drawn directly (F16/F32 tensors stay Gaussian) [default: blocks for mxfp4_moe, else quantized]').choices([...BENCH_WEIGHTS]))
    .option('--out <file>', 'also copy the file here (the cache keeps its copy)')
    .option('--no-cache', 'with --out: write the file there only, no copy in the cache (a 12 GB file once, not twice)')
    .option('--force', 'write the file again even if it is cached')
    .action((f: MakeModelFlags) => {
      const t0 = performance.now();
      const log = (line: string): void => void process.stderr.write(line + '\n');
      const options = { shape: f.shape, type: f.type, seed: f.seed, ...(f.layers !== undefined && { layers: f.layers }), ...(f.weights !== undefined && { weights: f.weights }) };
      if (!f.cache) {
        if (!f.out) throw new InvalidArgumentError('--no-cache needs --out FILE');
        const tmp = `${f.out}.tmp-${process.pid}`;
        try {
          makeModel(tmp, options, log);
          renameSync(tmp, f.out);
        } finally {
          rmSync(tmp, { force: true });
        }
        log(`make-model: wrote ${resolve(f.out)} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
        process.stdout.write(resolve(f.out) + '\n');
        return;
      }
      if (f.force) rmSync(benchModelPath(BENCH_MODELS_DIR, options), { force: true });
      const { path: cached, made } = ensureBenchModel(BENCH_MODELS_DIR, options, log);
      if (made) log(`make-model: wrote ${cached} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
      if (f.out) copyFileSync(cached, f.out);
      process.stdout.write((f.out ? resolve(f.out) : cached) + '\n');
    });
}
