// Text report of `loom bench engine`: one column per run and the summary over runs.
import type { EngineReport, RunFigures } from './engine.js';
import { fmt, fmtSpread, table } from './table.js';

type Row = readonly [label: string, key: string, value: (r: RunFigures) => number];

const latency = (label: string, key: 'ttftMs' | 'tpotMs' | 'itlMs' | 'e2eMs'): Row[] =>
  (['mean', 'p50', 'p99'] as const).map((s) => [`${label} ${s} (ms)`, `${key}.${s}`, (r: RunFigures) => r[key][s]] as const);

const ROWS: readonly Row[] = [
  ['output tokens/s', 'outputTokensPerSec', (r) => r.outputTokensPerSec],
  ['total tokens/s', 'totalTokensPerSec', (r) => r.totalTokensPerSec],
  ['requests/s', 'requestsPerSec', (r) => r.requestsPerSec],
  ['duration (s)', 'durationMs', (r) => r.durationMs / 1000],
  ...latency('TTFT', 'ttftMs'),
  ...latency('TPOT', 'tpotMs'),
  ...latency('ITL', 'itlMs'),
  ...latency('E2E', 'e2eMs'),
  ['steps/s', 'stepsPerSec', (r) => r.stepsPerSec],
  ['mean batch (tokens/step)', 'meanBatchTokens', (r) => r.meanBatchTokens],
  ['mean running requests', 'meanRunning', (r) => r.meanRunning],
  ['outside kernels (% of step)', 'outsideKernelShare', (r) => 100 * r.outsideKernelShare],
  ['prefix cache hit rate (%)', 'prefixCacheHitRate', (r) => 100 * r.prefixCacheHitRate],
  ['preemptions', 'preemptions', (r) => r.preemptions],
];

export function formatEngineReport(report: EngineReport): string {
  const s = report.settings;
  const runs = report.runs;
  const head = ['figure', ...runs.map((_, i) => `run ${i + 1}`), 'mean ± stdev'];
  const rows = ROWS.map(([label, key, value]) => {
    const sp = report.summary[key];
    const scale = key === 'durationMs' ? 1 / 1000 : key === 'outsideKernelShare' || key === 'prefixCacheHitRate' ? 100 : 1;
    return [label, ...runs.map((r) => fmt(value(r))), sp ? fmtSpread(sp.mean * scale, sp.stdev * scale) : ''];
  });
  const first = runs[0];
  const o = report.overall;
  return [
    `loom bench engine: ${s.model}`,
    `${s.mode}${s.mode === 'online' ? ` at ${s.requestRate} requests/s (Poisson)` : ''}, ${s.numRequests} requests, input ${s.inputLen} / output ${s.outputLen} tokens ` +
      `(range ratio ${s.rangeRatio}), backend ${s.backend}${s.threads ? `, ${s.threads} threads` : ''}, prefix cache ${s.prefixCache ? 'on' : 'off'}, ` +
      `${s.warmupRuns} warmup + ${s.repeatRuns} runs, seed ${s.seed}`,
    first ? `per run: ${first.inputTokens} input + ${first.outputTokens} output tokens` : 'no runs',
    '',
    table([head, ...rows]),
    '',
    `step time outside the kernels: ${fmt(100 * o.outsideKernelShare)}% (Σ(stepMs − forwardMs) / Σ stepMs over ${o.steps} steps); ` +
      `${fmt(o.stepsPerSec)} steps/s; mean batch ${fmt(o.meanBatchTokens)} tokens/step`,
  ].join('\n');
}
