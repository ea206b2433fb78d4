// `loom bench serve`: the serving benchmark, against loom or any OpenAI-compatible server.
import { appendFileSync } from 'node:fs';
import { loadAverage } from '../bench/machine-load.js';
import { Command, Option } from 'commander';
import { InvalidArgumentError } from '../errors.js';
import { runServeBench } from '../bench/serve.js';
import type { ServeBenchOptions } from '../bench/serve.js';
import { SERVE_BACKENDS } from '../bench/serve-backends.js';
import type { ServeBackend } from '../bench/serve-backends.js';
import { formatServeReport, serveReportJson } from '../bench/serve-report.js';
import { formatSweep, parseRates } from '../bench/serve-sweep.js';
import type { SweepRow } from '../bench/serve-sweep.js';
import { intArg, numberArg } from './bench-args.js';

interface ServeFlags {
  baseUrl: string;
  backend: ServeBackend;
  endpoint?: string;
  model: string;
  tokenizer?: string;
  datasetName: 'random' | 'sharegpt';
  datasetPath?: string;
  numPrompts: number;
  randomInputLen: number;
  randomOutputLen: number;
  randomRangeRatio: number;
  sharegptOutputLen?: number;
  requestRate: number[];
  maxConcurrency?: number;
  seed: number;
  warmupRequests: number;
  disableStream?: boolean;
  disableIgnoreEos?: boolean;
  outputFile?: string;
  json?: boolean;
  apiKey?: string;
}

const rates = (value: string): number[] => {
  try {
    return parseRates(value);
  } catch (e) {
    throw new InvalidArgumentError((e as Error).message);
  }
};

export function benchServeCommand(): Command {
  return new Command('serve')
    .description(
      "serving benchmark over HTTP (vLLM's `bench serve` options and report) against loom or any OpenAI-compatible server. " +
        'random: prompt lengths are uniform integers in [ceil(I·R), I] and output lengths in [ceil(O·R), O] ' +
        '(I = --random-input-len, O = --random-output-len, R = --random-range-ratio; R = 1: fixed lengths), prompts drawn (seeded) ' +
        'from real, non-special vocabulary tokens and re-tokenized to that length. Tokenizer: --tokenizer, else the server\'s ' +
        '/tokenize and /detokenize (loom, vLLM), whose prompts then draw from the tokens of a built-in English text. ' +
        'sharegpt: first human turn and its reply from a local ShareGPT JSON file, shuffled (seeded), dropping prompts or replies ' +
        'under 4 tokens, prompts over 1024 and prompt + reply over 2048 tokens; output length = the reply\'s unless ' +
        '--sharegpt-output-len. Token counts come from the server\'s usage where given, else from the tokenizer.',
    )
    .requiredOption('--base-url <url>', 'server address, e.g. http://127.0.0.1:8000')
    .addOption(new Option('--backend <api>', 'loom = /generate, openai = /v1/completions, openai-chat = /v1/chat/completions').choices([...SERVE_BACKENDS]).default('openai'))
    .option('--endpoint <path>', "path to POST to (default: the backend's)")
    .requiredOption('--model <name>', 'model name sent in each request')
    .option('--tokenizer <path>', "GGUF file or Hugging Face folder (default: the server's /tokenize and /detokenize)")
    .addOption(new Option('--dataset-name <name>', 'prompt source').choices(['random', 'sharegpt']).default('random'))
    .option('--dataset-path <file>', 'ShareGPT JSON file (sharegpt)')
    .addOption(new Option('--num-prompts <n>', 'requests to send').default(1000).argParser(intArg('num-prompts')))
    .addOption(new Option('--random-input-len <n>', 'prompt tokens, upper end (random)').default(1024).argParser(intArg('random-input-len')))
    .addOption(new Option('--random-output-len <n>', 'output tokens, upper end (random)').default(128).argParser(intArg('random-output-len')))
    .addOption(new Option('--random-range-ratio <r>', 'lengths in [ceil(L·R), L] (random)').default(1).argParser(numberArg('random-range-ratio', Number.MIN_VALUE, 1)))
    .addOption(new Option('--sharegpt-output-len <n>', "fixed output length instead of the reply's (sharegpt)").argParser(intArg('sharegpt-output-len')))
    .addOption(
      new Option('--request-rate <rps>', 'requests/s, Poisson arrivals (seeded); inf = all at once; a list (2,4,8) runs each rate in turn and prints one table')
        .default([Infinity], 'inf')
        .argParser(rates),
    )
    .addOption(new Option('--max-concurrency <n>', 'most requests in flight (default: no cap)').argParser(intArg('max-concurrency')))
    .addOption(new Option('--seed <s>', 'seed of the prompts, lengths and arrivals').default(0).argParser(intArg('seed', 0)))
    .addOption(new Option('--warmup-requests <n>', 'unmeasured requests first').default(1).argParser(intArg('warmup-requests', 0)))
    .option('--disable-stream', 'ask for whole answers (TTFT = E2E; no TPOT or ITL)')
    .option('--disable-ignore-eos', 'do not send ignore_eos, a vLLM/loom extra that OpenAI itself rejects (answers may then end early)')
    .option('--output-file <file>', 'append one JSON line with every figure and setting')
    .option('--json', 'print that JSON object instead of the report')
    .option('--api-key <key>', 'sent as "Authorization: Bearer <key>" (default: $OPENAI_API_KEY)')
    .action(async (f: ServeFlags) => {
      const options: ServeBenchOptions = {
        baseUrl: f.baseUrl,
        backend: f.backend,
        model: f.model,
        datasetName: f.datasetName,
        numPrompts: f.numPrompts,
        randomInputLen: f.randomInputLen,
        randomOutputLen: f.randomOutputLen,
        randomRangeRatio: f.randomRangeRatio,
        requestRate: f.requestRate[0]!,
        seed: f.seed,
        warmupRequests: f.warmupRequests,
        stream: !f.disableStream,
        ignoreEos: !f.disableIgnoreEos,
        ...(f.endpoint !== undefined && { endpoint: f.endpoint }),
        ...(f.tokenizer !== undefined && { tokenizer: f.tokenizer }),
        ...(f.datasetPath !== undefined && { datasetPath: f.datasetPath }),
        ...(f.sharegptOutputLen !== undefined && { sharegptOutputLen: f.sharegptOutputLen }),
        ...(f.maxConcurrency !== undefined && { maxConcurrency: f.maxConcurrency }),
        ...((f.apiKey ?? process.env.OPENAI_API_KEY) && { apiKey: f.apiKey ?? process.env.OPENAI_API_KEY }),
      };
      const out = { json: f.json ?? false, ...(f.outputFile !== undefined && { outputFile: f.outputFile }) };
      if (f.requestRate.length === 1) await benchServeAction(options, out);
      else await benchServeSweep(options, f.requestRate, out);
    });
}

/** Runs the benchmark and prints (and appends) its report; shared with `bench standard`. */
export async function benchServeAction(options: ServeBenchOptions, out: { json: boolean; outputFile?: string }): Promise<void> {
  const report = await runServeBench(options, { log: (line) => process.stderr.write(line + '\n'), progressBar: true });
  const line = JSON.stringify(serveReportJson(report));
  if (out.outputFile !== undefined) appendFileSync(out.outputFile, line + '\n');
  process.stdout.write((out.json ? line : formatServeReport(report)) + '\n');
}

/** One run per rate, then one table (--json: one JSON line per rate). */
async function benchServeSweep(options: ServeBenchOptions, requestRates: readonly number[], out: { json: boolean; outputFile?: string }): Promise<void> {
  const rows: SweepRow[] = [];
  for (const requestRate of requestRates) {
    const load = loadAverage();
    const report = await runServeBench({ ...options, requestRate }, { log: (line) => process.stderr.write(line + '\n'), progressBar: true });
    const line = JSON.stringify({ ...serveReportJson(report), load_average: load });
    if (out.outputFile !== undefined) appendFileSync(out.outputFile, line + '\n');
    if (out.json) process.stdout.write(line + '\n');
    rows.push({ system: options.baseUrl, report, load });
  }
  if (!out.json) process.stdout.write(formatSweep(rows) + '\n');
}
