// `loom bench serve`: a serving benchmark over HTTP against loom or any OpenAI-compatible
// server, as vLLM's `bench serve` runs it: build the requests, send a warmup, then send
// every request at its arrival time (all at once for rate inf, else Poisson arrivals),
// at most --max-concurrency in flight, stream each answer and time its chunks.
import cliProgress from 'cli-progress';
import { InvalidArgumentError, LoomError } from '../errors.js';
import { poissonOffsets } from './datasets.js';
import { DEFAULT_ENDPOINT, requestBody } from './serve-backends.js';
import type { ServeBackend } from './serve-backends.js';
import { sendRequest } from './serve-client.js';
import type { RequestOutput } from './serve-client.js';
import { randomServeRequests, shareGPTRequests } from './serve-dataset.js';
import type { ServeRequest } from './serve-dataset.js';
import { computeFigures } from './serve-metrics.js';
import type { CountedOutput, ServeFigures } from './serve-metrics.js';
import { localTokenizer, serverTokenizer } from './serve-tokenizer.js';
import type { BenchTokenizer } from './serve-tokenizer.js';

export interface ServeBenchOptions {
  readonly baseUrl: string;
  readonly backend: ServeBackend;
  /** default: the backend's */
  readonly endpoint?: string;
  readonly model: string;
  /** GGUF file or HF folder; default: the server's /tokenize and /detokenize */
  readonly tokenizer?: string;
  readonly datasetName: 'random' | 'sharegpt';
  readonly datasetPath?: string;
  readonly numPrompts: number;
  readonly randomInputLen: number;
  readonly randomOutputLen: number;
  readonly randomRangeRatio: number;
  readonly sharegptOutputLen?: number;
  /** requests/s; Infinity = all at once */
  readonly requestRate: number;
  readonly maxConcurrency?: number;
  readonly seed: number;
  readonly warmupRequests: number;
  readonly stream: boolean;
  readonly ignoreEos: boolean;
  readonly apiKey?: string;
}

export interface ServeReport {
  readonly date: string;
  readonly settings: ServeBenchOptions & { readonly endpoint: string; readonly tokenizerSource: string };
  readonly figures: ServeFigures;
}

export interface ServeBenchHooks {
  /** progress lines (dataset, warmup) */
  readonly log?: (line: string) => void;
  /** a progress bar on stderr while requests run (only where stderr is a terminal) */
  readonly progressBar?: boolean;
}

export async function runServeBench(o: ServeBenchOptions, hooks: ServeBenchHooks = {}): Promise<ServeReport> {
  const log = hooks.log ?? (() => {});
  const baseUrl = o.baseUrl.replace(/\/+$/, '');
  const endpoint = o.endpoint ?? DEFAULT_ENDPOINT[o.backend];
  const headers: Record<string, string> = o.apiKey ? { authorization: `Bearer ${o.apiKey}` } : {};
  const tok = o.tokenizer !== undefined ? localTokenizer(o.tokenizer) : await serverTokenizer(baseUrl, o.model, headers);
  const requests = await dataset(o, tok);
  if (requests.length < o.numPrompts) log(`bench serve: ${requests.length} prompts (the dataset has no more that pass the filter)`);
  const send = (r: ServeRequest): Promise<RequestOutput> =>
    sendRequest({ url: `${baseUrl}${endpoint}`, headers, backend: o.backend, stream: o.stream, body: requestBody(o.backend, r, { model: o.model, stream: o.stream, ignoreEos: o.ignoreEos }) });

  if (o.warmupRequests > 0) {
    log(`bench serve: ${o.warmupRequests} warmup request(s)`);
    const warm = await runAll(Array.from({ length: o.warmupRequests }, (_, i) => requests[i % requests.length]!), send, Infinity, o.maxConcurrency);
    const bad = warm.outputs.find((w) => !w.success);
    if (bad && warm.outputs.every((w) => !w.success)) throw new LoomError(`the warmup request failed (check the URL, --backend and --model): ${bad.error}`);
  }
  log(`bench serve: ${requests.length} requests, rate ${Number.isFinite(o.requestRate) ? o.requestRate : 'inf'}, max concurrency ${o.maxConcurrency ?? 'unlimited'}`);
  const bar = hooks.progressBar && process.stderr.isTTY ? new cliProgress.SingleBar({ stream: process.stderr, hideCursor: true }, cliProgress.Presets.shades_classic) : undefined;
  bar?.start(requests.length, 0);
  const run = await runAll(requests, send, o.requestRate, o.maxConcurrency, o.seed, () => bar?.increment());
  bar?.stop();

  const counted: CountedOutput[] = await Promise.all(
    run.outputs.map(async (out, i) => ({
      output: out,
      inputTokens: out.promptTokens ?? requests[i]!.promptLen,
      outputTokens: out.success ? (out.outputTokens ?? out.countedTokens ?? (await tok.encode(out.generatedText, false)).length) : 0,
    })),
  );
  return {
    date: new Date().toISOString(),
    settings: { ...o, baseUrl, endpoint, tokenizerSource: tok.source, ...(o.apiKey !== undefined && { apiKey: '<set>' }) },
    figures: computeFigures(counted, run.durationMs),
  };
}

function dataset(o: ServeBenchOptions, tok: BenchTokenizer): Promise<ServeRequest[]> {
  if (o.datasetName === 'sharegpt') {
    if (o.datasetPath === undefined) throw new InvalidArgumentError('--dataset-name sharegpt needs --dataset-path (a ShareGPT JSON file)');
    return shareGPTRequests(tok, o.datasetPath, { numPrompts: o.numPrompts, seed: o.seed, ...(o.sharegptOutputLen !== undefined && { outputLen: o.sharegptOutputLen }) });
  }
  return randomServeRequests(tok, { numPrompts: o.numPrompts, inputLen: o.randomInputLen, outputLen: o.randomOutputLen, rangeRatio: o.randomRangeRatio, seed: o.seed });
}

/** Sends every request at its arrival offset, at most `maxConcurrency` in flight; duration = first arrival to last answer. */
async function runAll(
  requests: readonly ServeRequest[],
  send: (r: ServeRequest) => Promise<RequestOutput>,
  rate: number,
  maxConcurrency = Infinity,
  seed = 0,
  done?: () => void,
): Promise<{ outputs: RequestOutput[]; durationMs: number }> {
  const offsets = rate === Infinity ? requests.map(() => 0) : poissonOffsets(requests.length, rate, seed);
  const slots = new Semaphore(maxConcurrency);
  const start = performance.now();
  const outputs = await Promise.all(
    requests.map(async (r, i) => {
      const wait = start + offsets[i]! - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      await slots.acquire();
      try {
        return await send(r);
      } finally {
        slots.release();
        done?.();
      }
    }),
  );
  return { outputs, durationMs: performance.now() - start };
}

class Semaphore {
  private free: number;
  private readonly waiting: (() => void)[] = [];
  constructor(size: number) {
    this.free = size;
  }
  async acquire(): Promise<void> {
    if (this.free > 0) {
      this.free--;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }
  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free++;
  }
}
