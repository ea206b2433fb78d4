// `loom bench protocol`: the incremental step protocol against the cumulative one, across
// the real worker boundary (src/bench/protocol-worker.ts plays the engine without a model).
// The main thread does what the frontend does with each step (incremental: append the new
// token to the request's output; cumulative: replace the output with the received one),
// records the step, then acks so the worker cannot run ahead.
import { serialize } from 'node:v8';
import { Worker } from 'node:worker_threads';
import { now } from '../engine/engine.js';
import type { RequestDelta } from '../engine/protocol.js';
import type { ProtocolAck, ProtocolDone, ProtocolMode, ProtocolStep, ProtocolWorkerData } from './protocol-worker.js';
import { mean, slope } from './stats.js';

export const PROTOCOL_MODES: readonly ProtocolMode[] = ['incremental', 'cumulative'];

export interface ProtocolBenchOptions {
  /** concurrent requests, one measured run per value and mode */
  readonly concurrency: readonly number[];
  /** steps of the run = tokens per request */
  readonly outputLen: number;
  /** top-N logprobs per token */
  readonly topN: number;
  /** steps averaged for the time figures at each reported length (the window ends at max(length, steps)) */
  readonly steps: number;
  /** unreported steps before each run (default 128) */
  readonly warmupSteps?: number;
}

/** Figures at one output length: bytes of that step, times averaged over the window. */
export interface ProtocolPoint {
  readonly length: number;
  /** Σ byteLength of the step's typed arrays */
  readonly arrayBytes: number;
  /** estimate of what structured clone writes besides the arrays (see cloneOverhead) */
  readonly cloneOverheadBytes: number;
  readonly bytesPerStep: number;
  /** worker starts building the message → main thread has processed it */
  readonly hostMsPerStep: number;
  /** processed → next processed (ack, fabrication and host time) */
  readonly stepPeriodMs: number;
  /** tokens delivered per second of wall time: concurrency / step period */
  readonly tokensPerSec: number;
  /** [first, last] step (= output length) of the window the times average: the `steps` ending at max(length, steps) */
  readonly window: readonly [number, number];
}

export interface ModeResult {
  readonly mode: ProtocolMode;
  readonly points: ProtocolPoint[];
  /** over the whole measured run */
  readonly tokensPerSec: number;
  readonly wallMs: number;
  readonly totalBytes: number;
  /** least-squares slope of host ms/step over output length, per 1000 tokens of length */
  readonly hostMsSlopePer1kTokens: number;
  /** slope of array bytes/step over output length, per token */
  readonly bytesSlopePerToken: number;
}

export interface ProtocolWin {
  readonly length: number;
  /** incremental tokens/s ÷ cumulative tokens/s */
  readonly tokensPerSecRatio: number;
  /** cumulative host ms/step ÷ incremental */
  readonly hostMsRatio: number;
  /** cumulative bytes/step ÷ incremental */
  readonly bytesRatio: number;
}

export interface ConcurrencyResult {
  readonly concurrency: number;
  readonly modes: Record<ProtocolMode, ModeResult>;
  readonly win: ProtocolWin;
}

export interface ProtocolReport {
  readonly settings: Required<ProtocolBenchOptions>;
  readonly results: ConcurrencyResult[];
}

/** The lengths reported: 1, 256, 1024, 2048 where reached, and the last. */
export function checkpoints(outputLen: number): number[] {
  return [...new Set([1, 256, 1024, 2048, outputLen].filter((l) => l <= outputLen))].sort((a, b) => a - b);
}

/**
 * Bytes structured clone writes for a message besides its typed arrays' contents: the
 * V8 serialization of the same message with every typed array emptied (object tags, keys,
 * numbers, strings, array-view headers). An estimate: postMessage writes transferred
 * views as references, v8.serialize as host objects; both are a few bytes per view.
 */
export function cloneOverhead(msg: ProtocolStep): number {
  const empty = (d: RequestDelta): Record<string, unknown> =>
    Object.fromEntries(Object.entries(d).map(([k, v]) => [k, ArrayBuffer.isView(v) ? new (v.constructor as new (n: number) => ArrayBufferView)(0) : v]));
  return serialize({ ...msg, deltas: msg.deltas.map(empty) }).byteLength;
}

/** What the frontend keeps per request. */
interface Output {
  tokens: Int32Array;
  logprobs: Float32Array;
  topIds: Int32Array;
  topLogprobs: Float32Array;
  length: number;
}

function append(o: Output, d: RequestDelta): void {
  const k = d.tokenIds.length;
  const n = d.topIds ? d.topIds.length / Math.max(k, 1) : 0;
  o.tokens.set(d.tokenIds, o.length);
  if (d.logprobs) o.logprobs.set(d.logprobs, o.length);
  if (d.topIds) o.topIds.set(d.topIds, o.length * n);
  if (d.topLogprobs) o.topLogprobs.set(d.topLogprobs, o.length * n);
  o.length += k;
}

function replace(o: Output, d: RequestDelta): void {
  o.tokens = d.tokenIds;
  if (d.logprobs) o.logprobs = d.logprobs;
  if (d.topIds) o.topIds = d.topIds;
  if (d.topLogprobs) o.topLogprobs = d.topLogprobs;
  o.length = d.tokenIds.length;
}

function arrayBytes(msg: ProtocolStep): number {
  let bytes = 0;
  for (const d of msg.deltas) {
    for (const a of [d.tokenIds, d.logprobs, d.topIds, d.topLogprobs, d.times]) bytes += a?.byteLength ?? 0;
  }
  return bytes;
}

interface StepRecord {
  readonly step: number;
  readonly bytes: number;
  readonly hostMs: number;
  readonly periodMs: number;
}

/** One worker, one mode, one concurrency: every measured step's record. */
function runMode(data: ProtocolWorkerData): Promise<{ records: StepRecord[]; overhead: Map<number, number> }> {
  const worker = new Worker(new URL('./protocol-worker.js', import.meta.url), { workerData: data });
  const outputs = new Map<string, Output>();
  for (let r = 0; r < data.concurrency; r++) {
    const n = data.outputLen;
    outputs.set(`r${r}`, { tokens: new Int32Array(n), logprobs: new Float32Array(n), topIds: new Int32Array(n * data.topN), topLogprobs: new Float32Array(n * data.topN), length: 0 });
  }
  const handle = data.mode === 'incremental' ? append : replace;
  const marks = new Set(checkpoints(data.outputLen));
  const records: StepRecord[] = [];
  const overhead = new Map<number, number>();
  let lastProcessed = now();
  return new Promise((resolve, reject) => {
    worker.on('error', reject);
    worker.on('message', (msg: ProtocolStep | ProtocolDone) => {
      if (msg.type === 'done') {
        void worker.terminate().then(() => resolve({ records, overhead }));
        return;
      }
      const { step, warmup, sentAt } = msg.bench;
      if (step === 1) for (const o of outputs.values()) o.length = 0;
      for (const d of msg.deltas) handle(outputs.get(d.id)!, d);
      const processedAt = now();
      const periodMs = processedAt - lastProcessed;
      lastProcessed = processedAt;
      worker.postMessage({ type: 'ack' } satisfies ProtocolAck);
      if (warmup) return;
      records.push({ step, bytes: arrayBytes(msg), hostMs: processedAt - sentAt, periodMs });
      if (marks.has(step)) overhead.set(step, cloneOverhead(msg));
    });
  });
}

function summarizeMode(mode: ProtocolMode, opts: Required<ProtocolBenchOptions>, concurrency: number, records: StepRecord[], overhead: Map<number, number>): ModeResult {
  const points = checkpoints(opts.outputLen).map((length): ProtocolPoint => {
    const end = Math.min(records.length, Math.max(length, opts.steps));
    const window = records.slice(Math.max(0, end - opts.steps), end);
    const at = records[length - 1]!;
    const clone = overhead.get(length) ?? 0;
    const stepPeriodMs = mean(window.map((r) => r.periodMs));
    return {
      length,
      arrayBytes: at.bytes,
      cloneOverheadBytes: clone,
      bytesPerStep: at.bytes + clone,
      hostMsPerStep: mean(window.map((r) => r.hostMs)),
      stepPeriodMs,
      tokensPerSec: (concurrency * 1000) / stepPeriodMs,
      window: [window[0]!.step, window.at(-1)!.step],
    };
  });
  const wallMs = records.reduce((s, r) => s + r.periodMs, 0);
  const lengths = records.map((r) => r.step);
  return {
    mode,
    points,
    tokensPerSec: (concurrency * records.length * 1000) / wallMs,
    wallMs,
    totalBytes: records.reduce((s, r) => s + r.bytes, 0),
    hostMsSlopePer1kTokens: slope(lengths, records.map((r) => r.hostMs)) * 1000,
    bytesSlopePerToken: slope(lengths, records.map((r) => r.bytes)),
  };
}

export async function runProtocolBench(options: ProtocolBenchOptions, log: (line: string) => void = () => {}): Promise<ProtocolReport> {
  const settings: Required<ProtocolBenchOptions> = { warmupSteps: 128, ...options };
  const results: ConcurrencyResult[] = [];
  for (const concurrency of settings.concurrency) {
    const modes = {} as Record<ProtocolMode, ModeResult>;
    for (const mode of PROTOCOL_MODES) {
      log(`running ${mode} with ${concurrency} requests × ${settings.outputLen} tokens…`);
      const data: ProtocolWorkerData = { mode, concurrency, outputLen: settings.outputLen, topN: settings.topN, warmupSteps: settings.warmupSteps };
      const { records, overhead } = await runMode(data);
      modes[mode] = summarizeMode(mode, settings, concurrency, records, overhead);
    }
    const inc = modes.incremental.points.at(-1)!;
    const cum = modes.cumulative.points.at(-1)!;
    const win = {
      length: inc.length,
      tokensPerSecRatio: inc.tokensPerSec / cum.tokensPerSec,
      hostMsRatio: cum.hostMsPerStep / inc.hostMsPerStep,
      bytesRatio: cum.bytesPerStep / inc.bytesPerStep,
    };
    results.push({ concurrency, modes, win });
  }
  return { settings, results };
}
