// `loom bench engine`: random prompts through the engine behind its real worker boundary
// (WorkerEngineClient). offline = every request at once; online = Poisson arrivals.
// Latencies use the engine's per-token times (engine clock, comparable across threads)
// against the frontend's clock at add(): TTFT = first token − arrival, E2E = last token −
// arrival, TPOT = (E2E − TTFT)/(n − 1), ITL = gaps between consecutive token times.
import { InvalidArgumentError, LoomError } from '../errors.js';
import type { EngineInfo } from '../engine/client.js';
import { now } from '../engine/engine.js';
import type { Backend, EngineOptions, KvCacheDtypeOption } from '../engine/options.js';
import type { StepStats } from '../engine/protocol.js';
import type { RequestStream } from '../engine/request-stream.js';
import { WorkerEngineClient } from '../engine/worker-client.js';
import { loadTokenizer } from '../model/load.js';
import type { LoadOptions } from '../model/load.js';
import { poissonOffsets, randomRequests, vocabularyIds } from './datasets.js';
import type { BenchRequest } from './datasets.js';
import { spread, summarize } from './stats.js';
import type { Spread, Summary } from './stats.js';
import { resolveSamplingParams } from '../engine/sampling-params.js';

export type BenchMode = 'offline' | 'online';

export interface EngineBenchOptions {
  readonly model: string;
  /** --no-mmap, --mlock */
  readonly load?: LoadOptions;
  readonly mode: BenchMode;
  readonly numRequests: number;
  readonly inputLen: number;
  readonly outputLen: number;
  readonly rangeRatio: number;
  /** requests/s of the Poisson arrivals (online only) */
  readonly requestRate: number;
  readonly warmupRuns: number;
  readonly repeatRuns: number;
  readonly prefixCache: boolean;
  /** keep the prefix cache between runs instead of emptying it */
  readonly keepPrefixCache: boolean;
  readonly seed: number;
  readonly backend: Backend;
  readonly threads?: number;
  readonly maxNumSeqs?: number;
  readonly maxNumBatchedTokens?: number;
  readonly kvCacheMemory?: string;
  readonly kvCacheDtype?: KvCacheDtypeOption;
}

export interface RunFigures {
  readonly durationMs: number;
  readonly numRequests: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly requestsPerSec: number;
  readonly outputTokensPerSec: number;
  readonly totalTokensPerSec: number;
  readonly ttftMs: Summary;
  readonly tpotMs: Summary;
  readonly itlMs: Summary;
  readonly e2eMs: Summary;
  readonly steps: number;
  readonly stepsPerSec: number;
  /** mean scheduledTokens per step */
  readonly meanBatchTokens: number;
  readonly meanRunning: number;
  readonly stepMsTotal: number;
  readonly forwardMsTotal: number;
  /** Σ(stepMs − forwardMs) / Σ stepMs */
  readonly outsideKernelShare: number;
  readonly prefixCacheHitRate: number;
  readonly preemptions: number;
}

/** Scalar run figures summarised over runs ("ttftMs.p50" etc.). */
export type RunSummary = Record<string, Spread>;

export interface EngineReport {
  readonly settings: EngineBenchOptions;
  readonly engine: EngineInfo;
  readonly runs: RunFigures[];
  readonly summary: RunSummary;
  /** over every measured step of every run */
  readonly overall: { readonly outsideKernelShare: number; readonly stepsPerSec: number; readonly meanBatchTokens: number; readonly steps: number };
}

interface RequestRecord {
  readonly arrival: number;
  /** engine clock of each output token */
  readonly times: number[];
  readonly inputTokens: number;
}

async function consume(stream: RequestStream, arrival: number, inputTokens: number): Promise<RequestRecord> {
  const times: number[] = [];
  for await (const d of stream) {
    if (d.error) throw new LoomError(`the engine refused a benchmark request: ${d.error}`);
    for (const t of d.times) times.push(t);
  }
  return { arrival, times, inputTokens };
}

/** Runs every request once; resolves with their records and the run's wall time. */
async function runOnce(client: WorkerEngineClient, requests: readonly BenchRequest[], offsets: readonly number[] | undefined, tag: string): Promise<{ records: RequestRecord[]; durationMs: number }> {
  const start = now();
  const submit = (req: BenchRequest, i: number): Promise<RequestRecord> => {
    const arrival = now();
    const stream = client.add(`${tag}-${i}`, req.promptIds, resolveSamplingParams({ temperature: 0, ignoreEos: true, maxTokens: req.outputLen }));
    return consume(stream, arrival, req.promptIds.length);
  };
  const pending = requests.map((req, i) => {
    const offset = offsets?.[i];
    if (offset === undefined) return submit(req, i);
    return new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, start + offset - now()))).then(() => submit(req, i));
  });
  const records = await Promise.all(pending);
  return { records, durationMs: now() - start };
}

function figures(records: readonly RequestRecord[], durationMs: number, steps: readonly StepStats[], before: StepStats | undefined): RunFigures {
  const ttft: number[] = [];
  const tpot: number[] = [];
  const itl: number[] = [];
  const e2e: number[] = [];
  let inputTokens = 0;
  let outputTokens = 0;
  for (const r of records) {
    inputTokens += r.inputTokens;
    outputTokens += r.times.length;
    const first = r.times[0];
    const last = r.times.at(-1);
    if (first === undefined || last === undefined) continue;
    ttft.push(first - r.arrival);
    e2e.push(last - r.arrival);
    if (r.times.length > 1) tpot.push((last - first) / (r.times.length - 1));
    for (let i = 1; i < r.times.length; i++) itl.push(r.times[i]! - r.times[i - 1]!);
  }
  const work = steps.filter((s) => s.scheduledTokens > 0);
  const stepMsTotal = work.reduce((n, s) => n + s.stepMs, 0);
  const forwardMsTotal = work.reduce((n, s) => n + s.forwardMs, 0);
  const last = steps.at(-1);
  const counter = (f: (s: StepStats) => number): number => (last ? Math.max(0, f(last) - (before ? f(before) : 0)) : 0);
  const queries = counter((s) => s.prefixCacheQueries);
  const perSec = (x: number): number => (x * 1000) / durationMs;
  return {
    durationMs,
    numRequests: records.length,
    inputTokens,
    outputTokens,
    requestsPerSec: perSec(records.length),
    outputTokensPerSec: perSec(outputTokens),
    totalTokensPerSec: perSec(inputTokens + outputTokens),
    ttftMs: summarize(ttft),
    tpotMs: summarize(tpot),
    itlMs: summarize(itl),
    e2eMs: summarize(e2e),
    steps: work.length,
    stepsPerSec: perSec(work.length),
    meanBatchTokens: work.reduce((n, s) => n + s.scheduledTokens, 0) / Math.max(1, work.length),
    meanRunning: work.reduce((n, s) => n + s.numRunning, 0) / Math.max(1, work.length),
    stepMsTotal,
    forwardMsTotal,
    outsideKernelShare: stepMsTotal > 0 ? (stepMsTotal - forwardMsTotal) / stepMsTotal : NaN,
    prefixCacheHitRate: queries > 0 ? counter((s) => s.prefixCacheHits) / queries : 0,
    preemptions: counter((s) => s.numPreemptions),
  };
}

/** mean ± stdev over runs of every number (and mean/p50/p99) of RunFigures */
export function summarizeRuns(runs: readonly RunFigures[]): RunSummary {
  const out: RunSummary = {};
  const first = runs[0];
  if (!first) return out;
  for (const [key, value] of Object.entries(first)) {
    const pick = (r: RunFigures): unknown => (r as unknown as Record<string, unknown>)[key];
    if (typeof value === 'number') out[key] = spread(runs.map((r) => pick(r) as number));
    else for (const stat of ['mean', 'p50', 'p99'] as const) out[`${key}.${stat}`] = spread(runs.map((r) => (pick(r) as Summary)[stat]));
  }
  return out;
}

export function engineOptions(o: EngineBenchOptions): EngineOptions {
  return {
    model: o.model,
    backend: o.backend,
    enablePrefixCaching: o.prefixCache,
    ...(o.threads !== undefined && { threads: o.threads }),
    ...(o.maxNumSeqs !== undefined && { maxNumSeqs: o.maxNumSeqs }),
    ...(o.maxNumBatchedTokens !== undefined && { maxNumBatchedTokens: o.maxNumBatchedTokens }),
    ...(o.kvCacheMemory !== undefined && { kvCacheMemory: o.kvCacheMemory }),
    ...(o.kvCacheDtype !== undefined && { kvCacheDtype: o.kvCacheDtype }),
    ...o.load,
  };
}

export async function runEngineBench(o: EngineBenchOptions, log: (line: string) => void = () => {}): Promise<EngineReport> {
  if (o.mode === 'online' && !Number.isFinite(o.requestRate)) throw new InvalidArgumentError('--mode online needs a finite --request-rate');
  const tokenizer = loadTokenizer(o.model);
  const client = await WorkerEngineClient.start(engineOptions(o));
  try {
    if (o.inputLen + o.outputLen > client.info.maxModelLen) {
      throw new InvalidArgumentError(`--input-len + --output-len (${o.inputLen + o.outputLen}) exceed the engine's context of ${client.info.maxModelLen} tokens`);
    }
    const requests = randomRequests(vocabularyIds(tokenizer, client.info.vocabSize), o);
    const offsets = o.mode === 'online' ? poissonOffsets(requests.length, o.requestRate, o.seed) : undefined;
    let steps: StepStats[] = [];
    client.onStep((s) => steps.push(s.stats));
    const runs: RunFigures[] = [];
    const allSteps: StepStats[] = [];
    for (let k = 0; k < o.warmupRuns + o.repeatRuns; k++) {
      const warmup = k < o.warmupRuns;
      if (o.prefixCache && !o.keepPrefixCache && !(await client.resetPrefixCache())) {
        throw new LoomError('the engine could not empty its prefix cache (blocks still in use)');
      }
      const before = client.stats;
      steps = [];
      log(`${warmup ? 'warmup' : 'run'} ${warmup ? k + 1 : k - o.warmupRuns + 1}: ${requests.length} requests…`);
      const { records, durationMs } = await runOnce(client, requests, offsets, `run${k}`);
      if (warmup) continue;
      runs.push(figures(records, durationMs, steps, before));
      allSteps.push(...steps.filter((s) => s.scheduledTokens > 0));
    }
    const stepMs = allSteps.reduce((n, s) => n + s.stepMs, 0);
    const forwardMs = allSteps.reduce((n, s) => n + s.forwardMs, 0);
    const wallMs = runs.reduce((n, r) => n + r.durationMs, 0);
    const overall = {
      outsideKernelShare: stepMs > 0 ? (stepMs - forwardMs) / stepMs : NaN,
      stepsPerSec: (allSteps.length * 1000) / wallMs,
      meanBatchTokens: allSteps.reduce((n, s) => n + s.scheduledTokens, 0) / Math.max(1, allSteps.length),
      steps: allSteps.length,
    };
    return { settings: o, engine: client.info, runs, summary: summarizeRuns(runs), overall };
  } finally {
    await client.close();
  }
}
