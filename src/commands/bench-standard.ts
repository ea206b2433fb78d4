// `loom bench standard` (npm run bench): loom serve on the generated SmolLM2-135M-shaped Q8_0
// model under the standard serving scenario; prints the report.
import { appendFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import { BENCH_TYPES } from '../bench/bench-types.js';
import { BENCH_SHAPES } from '../bench/bench-shapes.js';
import type { BenchWeightType } from '../bench/bench-types.js';
import type { BenchShapeName } from '../bench/bench-shapes.js';
import { formatServeReport, serveReportJson } from '../bench/serve-report.js';
import { STANDARD_SCENARIO, runStandard } from '../bench/standard.js';
import { fmtBytes } from '../bench/table.js';
import { intArg } from './bench-args.js';
import { kvCacheDtypeOption } from './parse.js';
import type { KvCacheDtypeOption } from './parse.js';

interface StandardFlags {
  model?: string;
  shape: BenchShapeName;
  type: BenchWeightType;
  backend: 'auto' | 'native' | 'reference';
  threads?: number;
  numPrompts?: number;
  seed: number;
  json?: boolean;
  outputFile?: string;
  loomArgs?: string;
  kvCacheDtype: KvCacheDtypeOption;
}

export function benchStandardCommand(): Command {
  const s = STANDARD_SCENARIO;
  return new Command('standard')
    .description(
      `start loom serve on a generated model (default: SmolLM2-135M-shaped, Q8_0; cached in dist/bench-models/) and run the ` +
        `standard scenario with bench serve: random prompts, ${s.numPrompts} requests, input ${s.randomInputLen}, output ` +
        `${s.randomOutputLen} tokens (ignore_eos), request rate inf, max concurrency ${s.maxConcurrency}, /v1/completions streamed`,
    )
    .option('--model <file>', 'serve this GGUF file instead of the generated one')
    .addOption(new Option('--shape <name>', 'shape of the generated model').choices(Object.keys(BENCH_SHAPES)).default('smollm2-135m'))
    .addOption(new Option('--type <type>', 'weight type of the generated model').choices([...BENCH_TYPES]).default('q8_0'))
    .addOption(new Option('--backend <name>', 'kernels of loom serve').choices(['auto', 'native', 'reference']).default('auto'))
    .addOption(new Option('--threads <n>', 'compute threads of loom serve').argParser(intArg('threads')))
    .addOption(new Option('--num-prompts <n>', `requests (default ${s.numPrompts}; fewer is no longer the standard figure)`).argParser(intArg('num-prompts')))
    .addOption(new Option('--seed <s>', 'seed of the prompts').default(0).argParser(intArg('seed', 0)))
    .option('--json', 'print the JSON object (with model and kernels) instead of the report')
    .option('--output-file <file>', 'append that JSON object as one line')
    .addOption(kvCacheDtypeOption())
    .option('--loom-args <flags>', 'more loom serve flags, space-separated (e.g. "--step-time-factor 3"); no longer the standard figure')
    .action(async (f: StandardFlags) => {
      // a cache dtype other than the default is passed to loom serve (and named in the report)
      const cacheArgs = f.kvCacheDtype !== 'auto' ? `--kv-cache-dtype ${f.kvCacheDtype}` : '';
      const loomArgs = [cacheArgs, f.loomArgs?.trim() ?? ''].filter((a) => a !== '').join(' ');
      const r = await runStandard(
        {
          shape: f.shape,
          type: f.type,
          backend: f.backend,
          seed: f.seed,
          ...(f.model !== undefined && { model: f.model }),
          ...(f.threads !== undefined && { threads: f.threads }),
          ...(f.numPrompts !== undefined && { numPrompts: f.numPrompts }),
          ...(loomArgs !== '' && { loomArgs: loomArgs.split(/\s+/) }),
        },
        (line) => process.stderr.write(line + '\n'),
      );
      const json = JSON.stringify({ ...serveReportJson(r.report), model_file: r.model, model_bytes: r.modelBytes, kernels: r.kernels, server_backend: f.backend, loom_args: loomArgs, kv_cache_dtype: f.kvCacheDtype });
      if (f.outputFile !== undefined) appendFileSync(f.outputFile, json + '\n');
      const head = `loom bench standard: ${r.model} (${fmtBytes(r.modelBytes)}), loom serve --backend ${f.backend}${f.threads ? ` --threads ${f.threads}` : ''}${loomArgs ? ` ${loomArgs}` : ''}; kernels: ${r.kernels}`;
      process.stdout.write((f.json ? json : `${head}\n${formatServeReport(r.report)}`) + '\n');
    });
}
