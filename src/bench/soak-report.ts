// The soak benchmark's report as text.
import type { SoakReport } from './soak.js';
import { fmt, fmtBytes, table } from './table.js';

export function formatSoakReport(r: SoakReport): string {
  const rows = [['requests', 'seconds', 'RSS', 'heap used', 'KV use', 'running', 'waiting', 'p50 ms', 'p99 ms']];
  for (const s of r.samples) {
    rows.push([String(s.requests), fmt(s.seconds), fmtBytes(s.rssBytes), fmtBytes(s.heapUsedBytes), `${(s.kvCacheUsage * 100).toFixed(1)}%`, String(s.running), String(s.waiting), fmt(s.p50Ms), fmt(s.p99Ms)]);
  }
  const growth = (b: number) => `${b >= 0 ? '+' : '−'}${fmtBytes(Math.abs(b))}`;
  return [
    table(rows),
    '',
    `mix: ${Object.entries(r.counts).map(([k, n]) => `${k} ${n}`).join(', ')}`,
    `failures: ${r.failures}${r.failureExamples.length ? ` (${r.failureExamples.join('; ')})` : ''}`,
    `after the last request: KV ${(r.after.kvCacheUsage * 100).toFixed(1)}%, ${r.after.running} running, ${r.after.waiting} waiting`,
    `growth after warm-up (first ${(r.options.warmupShare * 100).toFixed(0)}%), per 1,000 requests: RSS ${growth(r.rssGrowthPer1k)}, heap ${growth(r.heapGrowthPer1k)}`,
  ].join('\n');
}
