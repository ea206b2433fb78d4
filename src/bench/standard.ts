// `npm run bench` / `loom bench standard`: the number to watch from one change to the next.
// Makes (or reuses) the generated SmolLM2-135M-shaped Q8_0 model, starts `loom serve` on it
// as a child process on a free port, waits for /health, runs the standard scenario
// (random, 256 prompts, input 128, output 128, rate inf, max concurrency 64, /v1/completions)
// and stops the server.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { LoomError } from '../errors.js';
import { BENCH_MODELS_DIR, ensureBenchModel } from './make-model.js';
import type { BenchShapeName, BenchWeightType } from './make-model.js';
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
}

export interface StandardResult {
  readonly model: string;
  readonly modelBytes: number;
  /** "native", or "reference" with the reason when the server fell back */
  readonly kernels: string;
  readonly report: ServeReport;
}

const CLI = fileURLToPath(new URL('../cli.js', import.meta.url));
const SERVED_NAME = 'loom-bench';

export async function runStandard(o: StandardOptions, log: (line: string) => void): Promise<StandardResult> {
  const model = o.model ?? ensureBenchModel(BENCH_MODELS_DIR, { shape: o.shape, type: o.type, seed: 0 }, log).path;
  const server = await startServer(model, o, log);
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

interface RunningServer {
  readonly url: string;
  /** everything the server wrote to stderr so far */
  log(): string;
  stop(): Promise<void>;
}

async function startServer(model: string, o: StandardOptions, log: (line: string) => void): Promise<RunningServer> {
  const args = [CLI, 'serve', '--model', model, '--port', '0', '--served-model-name', SERVED_NAME, '--backend', o.backend];
  if (o.threads !== undefined) args.push('--threads', String(o.threads));
  const child: ChildProcess = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let text = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => {
    text += chunk;
    // the server's own 10-second throughput lines would only interleave with the progress bar
    for (const line of chunk.split('\n')) if (line.trim() && !/tokens\/s generated/.test(line)) log(`[serve] ${line}`);
  });
  const exited = once(child, 'exit');
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    await exited;
    clearTimeout(timer);
  };
  try {
    const port = await new Promise<number>((resolve, reject) => {
      const onData = (): void => {
        const m = /on http:\/\/[^\s]*:(\d+)/.exec(text);
        if (m) resolve(Number(m[1]));
      };
      child.stderr!.on('data', onData);
      void exited.then(([code]) => reject(new LoomError(`loom serve exited (${String(code)}) before listening: ${text.trim().split('\n').pop() ?? ''}`)));
      setTimeout(() => reject(new LoomError('loom serve did not start listening within 120 s')), 120_000).unref();
    });
    const url = `http://127.0.0.1:${port}`;
    await waitHealthy(url);
    return { url, log: () => text, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

async function waitHealthy(url: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      if ((await fetch(`${url}/health`)).ok) return;
    } catch {
      // not yet
    }
    if (Date.now() > deadline) throw new LoomError(`${url}/health did not answer 200 within 60 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
