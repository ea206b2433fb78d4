// The figures of `bench serve`, computed as vLLM's benchmark does: over successful requests,
// TTFT, E2E latency, TPOT = (E2E − TTFT)/(output tokens − 1) for requests of more than one
// output token, ITL = every gap between output-carrying chunks of every request;
// throughputs divide totals by the benchmark duration (first send to last answer).
import { mean, percentile, stdev } from './stats.js';
import type { RequestOutput } from './serve-client.js';

export interface LatencyFigures {
  readonly mean: number;
  readonly median: number;
  readonly p99: number;
  readonly std: number;
}

export interface ServeFigures {
  readonly completed: number;
  readonly failed: number;
  /** distinct error messages of failed requests, most frequent first */
  readonly errors: readonly { readonly message: string; readonly count: number }[];
  readonly durationS: number;
  readonly totalInputTokens: number;
  readonly totalOutputTokens: number;
  readonly requestThroughput: number;
  readonly inputThroughput: number;
  readonly outputThroughput: number;
  readonly totalTokenThroughput: number;
  readonly ttftMs: LatencyFigures;
  readonly tpotMs: LatencyFigures;
  readonly itlMs: LatencyFigures;
  readonly e2elMs: LatencyFigures;
}

/** a request's outcome with its token counts settled (usage, else output_ids, else the tokenizer) */
export interface CountedOutput {
  readonly output: RequestOutput;
  readonly inputTokens: number;
  readonly outputTokens: number;
}

export function latency(xs: readonly number[]): LatencyFigures {
  return { mean: mean(xs), median: percentile(xs, 50), p99: percentile(xs, 99), std: stdev(xs) };
}

export function computeFigures(results: readonly CountedOutput[], durationMs: number): ServeFigures {
  const ok = results.filter((r) => r.output.success);
  const ttft: number[] = [];
  const tpot: number[] = [];
  const itl: number[] = [];
  const e2el: number[] = [];
  let input = 0;
  let output = 0;
  for (const r of ok) {
    input += r.inputTokens;
    output += r.outputTokens;
    ttft.push(r.output.ttftMs);
    e2el.push(r.output.latencyMs);
    for (const gap of r.output.itlMs) itl.push(gap);
    // streamed answers only: without a stream there is no first token to exclude
    if (r.outputTokens > 1 && r.output.ttftMs < r.output.latencyMs) tpot.push((r.output.latencyMs - r.output.ttftMs) / (r.outputTokens - 1));
  }
  const errors = new Map<string, number>();
  for (const r of results) if (!r.output.success) errors.set(r.output.error ?? 'unknown error', (errors.get(r.output.error ?? 'unknown error') ?? 0) + 1);
  const s = durationMs / 1000;
  return {
    completed: ok.length,
    failed: results.length - ok.length,
    errors: [...errors].map(([message, count]) => ({ message, count })).sort((a, b) => b.count - a.count),
    durationS: s,
    totalInputTokens: input,
    totalOutputTokens: output,
    requestThroughput: ok.length / s,
    inputThroughput: input / s,
    outputThroughput: output / s,
    totalTokenThroughput: (input + output) / s,
    ttftMs: latency(ttft),
    tpotMs: latency(tpot),
    itlMs: latency(itl),
    e2elMs: latency(e2el),
  };
}
