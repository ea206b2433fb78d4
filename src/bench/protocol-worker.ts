// The engine without a model, for `loom bench protocol`: each step fabricates one token
// (id, logprob, top-N, time) per running request, deterministically, and posts a real
// StepOutput with transferables. `incremental` sends only the new token per request (the
// RequestDelta loom uses); `cumulative` sends each request's whole output so far, as
// freshly copied typed arrays, also transferred (the best case for cumulative). After
// each step it waits for the main thread's ack: the engine is step-synchronous.
import { parentPort, workerData } from 'node:worker_threads';
import { now } from '../engine/engine.js';
import { transferables } from '../engine/protocol.js';
import type { RequestDelta, StepOutput, StepStats } from '../engine/protocol.js';

export type ProtocolMode = 'incremental' | 'cumulative';

export interface ProtocolWorkerData {
  readonly mode: ProtocolMode;
  readonly concurrency: number;
  readonly outputLen: number;
  readonly topN: number;
  /** unreported steps first (lengths 1..warmupSteps), then the measured run 1..outputLen */
  readonly warmupSteps: number;
}

/** main → worker once it has processed a step */
export interface ProtocolAck {
  readonly type: 'ack';
}

/** worker → main: a StepOutput plus when the worker began building the message */
export interface ProtocolStep extends StepOutput {
  readonly bench: { readonly step: number; readonly warmup: boolean; readonly sentAt: number };
}

export interface ProtocolDone {
  readonly type: 'done';
}

const VOCAB = 49152;

/** A fixed 32-bit mix of (request, position): the fabricated "model". */
function mix(r: number, pos: number): number {
  let h = Math.imul(r + 1, 0x9e3779b1) ^ Math.imul(pos + 1, 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d);
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b);
  return (h ^ (h >>> 16)) >>> 0;
}

/** Every request's output so far: [concurrency][outputLen] (top: [outputLen, topN]). */
class Outputs {
  readonly tokens: Int32Array[] = [];
  readonly logprobs: Float32Array[] = [];
  readonly topIds: Int32Array[] = [];
  readonly topLogprobs: Float32Array[] = [];
  readonly times: Float64Array[] = [];

  constructor(concurrency: number, outputLen: number, private readonly topN: number) {
    for (let r = 0; r < concurrency; r++) {
      this.tokens.push(new Int32Array(outputLen));
      this.logprobs.push(new Float32Array(outputLen));
      this.topIds.push(new Int32Array(outputLen * topN));
      this.topLogprobs.push(new Float32Array(outputLen * topN));
      this.times.push(new Float64Array(outputLen));
    }
  }

  /** Samples position `pos` of request `r`: the sampled token is the best of its top-N. */
  fabricate(r: number, pos: number, time: number): void {
    const h = mix(r, pos);
    const token = h % VOCAB;
    const lp = -((h >>> 20) % 1000) / 250;
    this.tokens[r]![pos] = token;
    this.logprobs[r]![pos] = lp;
    this.times[r]![pos] = time;
    const n = this.topN;
    for (let j = 0; j < n; j++) {
      this.topIds[r]![pos * n + j] = (token + j * 7919) % VOCAB;
      this.topLogprobs[r]![pos * n + j] = lp - j * 0.5;
    }
  }

  /** Copies of positions [from, to) of request `r`, each in its own buffer. */
  delta(r: number, from: number, to: number, finished: boolean): RequestDelta {
    const n = this.topN;
    return {
      id: `r${r}`,
      index: 0,
      tokenIds: this.tokens[r]!.slice(from, to),
      logprobs: this.logprobs[r]!.slice(from, to),
      ...(n > 0 && { topIds: this.topIds[r]!.slice(from * n, to * n), topLogprobs: this.topLogprobs[r]!.slice(from * n, to * n) }),
      times: this.times[r]!.slice(from, to),
      ...(finished && { finishReason: 'length' as const }),
    };
  }
}

function stats(concurrency: number): StepStats {
  return {
    numRunning: concurrency,
    numWaiting: 0,
    kvCacheUsage: 0,
    prefixCacheQueries: 0,
    prefixCacheHits: 0,
    numPreemptions: 0,
    scheduledTokens: concurrency,
    forwardMs: 0,
    stepMs: 0,
  };
}

const port = parentPort!;
const data = workerData as ProtocolWorkerData;
let release: (() => void) | undefined;
let pendingAcks = 0;
port.on('message', (msg: ProtocolAck) => {
  if (msg.type !== 'ack') return;
  if (release) {
    const r = release;
    release = undefined;
    r();
  } else pendingAcks++;
});
const acked = (): Promise<void> => {
  if (pendingAcks > 0) {
    pendingAcks--;
    return Promise.resolve();
  }
  return new Promise((resolve) => (release = resolve));
};

const out = new Outputs(data.concurrency, data.outputLen, data.topN);

/** Steps 1..steps over the same buffers (positions are overwritten, never read ahead). */
async function run(steps: number, warmup: boolean): Promise<void> {
  const { mode, concurrency } = data;
  for (let step = 1; step <= steps; step++) {
    const pos = step - 1;
    const time = now();
    for (let r = 0; r < concurrency; r++) out.fabricate(r, pos, time);
    const sentAt = now();
    const from = mode === 'incremental' ? pos : 0;
    const deltas: RequestDelta[] = [];
    for (let r = 0; r < concurrency; r++) deltas.push(out.delta(r, from, step, step === steps));
    const msg: ProtocolStep = { type: 'step', deltas, stats: stats(concurrency), bench: { step, warmup, sentAt } };
    port.postMessage(msg, transferables(msg));
    await acked();
  }
}

// the ack of the last warmup step starts the measured run
await run(Math.max(1, Math.min(data.warmupSteps, data.outputLen)), true);
await run(data.outputLen, false);
port.postMessage({ type: 'done' } satisfies ProtocolDone);
