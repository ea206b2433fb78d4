// `bench serve --request-rate 2,4,8`: one serving run per rate (Poisson arrivals), one table.
import { fmt, table } from './table.js';
import type { ServeReport } from './serve.js';

/** "2,4,8" or "inf" or "2, 4, inf" → rates (inf = all at once) */
export function parseRates(value: string): number[] {
  const rates = value.split(',').map((part) => {
    const t = part.trim().toLowerCase();
    if (t === 'inf') return Infinity;
    const n = Number(t);
    if (t === '' || !(n > 0) || !Number.isFinite(n)) throw new Error(`--request-rate expects a number > 0 or "inf" (or a comma-separated list of them), got "${value}"`);
    return n;
  });
  return rates;
}

export const rateLabel = (r: number): string => (Number.isFinite(r) ? String(r) : 'inf');

/** rows of a sweep: one per (system, rate) */
export interface SweepRow {
  readonly system: string;
  readonly report: ServeReport;
  /** 1-minute load average when the run started */
  readonly load?: number;
}

export function formatSweep(rows: readonly SweepRow[]): string {
  const head = ['rate (req/s)', 'system', 'done', 'failed', 'req/s', 'out tok/s', 'TTFT med', 'TTFT p99', 'ITL med', 'ITL p99', 'TPOT med', 'TPOT p99', 'load'];
  const body = rows.map(({ system, report, load }) => {
    const f = report.figures;
    return [
      rateLabel(report.settings.requestRate),
      system,
      String(f.completed),
      String(f.failed),
      fmt(f.requestThroughput),
      fmt(f.outputThroughput),
      fmt(f.ttftMs.median),
      fmt(f.ttftMs.p99),
      fmt(f.itlMs.median),
      fmt(f.itlMs.p99),
      fmt(f.tpotMs.median),
      fmt(f.tpotMs.p99),
      load === undefined ? '' : load.toFixed(2),
    ];
  });
  return `latencies in ms\n${table([head, ...body])}`;
}
