// `npm run bench` / `loom bench standard`: the number to watch from one change to the next.
// Makes (or reuses) the generated SmolLM2-135M-shaped Q8_0 model, starts `loom serve` on it
// as a child process on a free port, waits for /health, runs the standard scenario
// (random, 256 prompts, input 128, output 128, rate inf, max concurrency 64, /v1/completions)
// and stops the server.
import { statSync } from 'node:fs';
import { startLoomServer } from './loom-server.js';
import { BENCH_MODELS_DIR, ensureBenchModel } from './make-model.js';
import type { BenchWeightType } from './bench-types.js';
import type { BenchShapeName } from './bench-shapes.js';
import { runServeBench } from './serve.js';
import type { ServeBenchOptions, ServeReport } from './serve.js';

export const STANDARD_SCENARIO = { numPrompts: 256, randomInputLen: 128, randomOutputLen: 128, requestRate: Infinity, maxConcurrency: 64 } as const;

export interface StandardOptions {
  /** a model file instead of the generated one */
  readonly model?: string;
  readonly shape: BenchShapeName;
  readonly type: BenchWeightType;
  /** `loom serve --backend` */
  readonly backend: 'auto' | 'native' | 'reference';
  readonly threads?: number;
  readonly numPrompts?: number;
  readonly seed: number;
  /** more `loom serve` flags (e.g. --step-time-factor 3) */
  readonly loomArgs?: readonly string[];
}

export interface StandardResult {
  readonly model: string;
  readonly modelBytes: number;
  /** "native", or "reference" with the reason when the server fell back */
  readonly kernels: string;
  readonly report: ServeReport;
}

const SERVED_NAME = 'loom-bench';

export async function runStandard(o: StandardOptions, log: (line: string) => void): Promise<StandardResult> {
  const model = o.model ?? ensureBenchModel(BENCH_MODELS_DIR, { shape: o.shape, type: o.type, seed: 0 }, log).path;
  const args = ['--served-model-name', SERVED_NAME, '--backend', o.backend, ...(o.threads !== undefined ? ['--threads', String(o.threads)] : []), ...(o.loomArgs ?? [])];
  const server = await startLoomServer(model, args, log);
  try {
    const options: ServeBenchOptions = {
      baseUrl: server.url,
      backend: 'openai',
      model: SERVED_NAME,
      tokenizer: model,
      datasetName: 'random',
      ...STANDARD_SCENARIO,
      numPrompts: o.numPrompts ?? STANDARD_SCENARIO.numPrompts,
      randomRangeRatio: 1,
      seed: o.seed,
      warmupRequests: 1,
      stream: true,
      ignoreEos: true,
    };
    const report = await runServeBench(options, { log, progressBar: true });
    const fallback = /native core unavailable \(([^\n]*)\)/.exec(server.log());
    const kernels = o.backend === 'reference' ? 'reference (--backend reference)' : fallback ? `reference (native unavailable: ${fallback[1]})` : 'native';
    return { model, modelBytes: statSync(model).size, kernels, report };
  } finally {
    await server.stop();
  }
}
