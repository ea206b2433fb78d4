// The report of `bench serve-peer`: every run (system, rate, round, load), then per rate the
// median over rounds of each figure for both servers and their ratio loom / llama-server.
import { percentile } from './stats.js';
import { fmt, table } from './table.js';
import { formatSweep, rateLabel } from './serve-sweep.js';
import type { ServeFigures } from './serve-metrics.js';
import type { PeerRun, ServePeerResult, SystemName } from './serve-peer.js';

const FIGURES: readonly [string, (f: ServeFigures) => number][] = [
  ['output tok/s', (f) => f.outputThroughput],
  ['TTFT median (ms)', (f) => f.ttftMs.median],
  ['TTFT p99 (ms)', (f) => f.ttftMs.p99],
  ['TPOT median (ms)', (f) => f.tpotMs.median],
  ['TPOT p99 (ms)', (f) => f.tpotMs.p99],
  ['ITL median (ms)', (f) => f.itlMs.median],
  ['ITL p99 (ms)', (f) => f.itlMs.p99],
  ['failed requests', (f) => f.failed],
];

const median = (xs: readonly number[]): number => percentile(xs, 50);

/** per rate: the median over rounds of every figure, per system */
export function summarizeRuns(runs: readonly PeerRun[]): { rate: number; figures: Record<SystemName, number[]> }[] {
  const rates = [...new Set(runs.map((r) => r.report.settings.requestRate))];
  return rates.map((rate) => {
    const of = (system: SystemName): number[] => {
      const mine = runs.filter((r) => r.system === system && r.report.settings.requestRate === rate).map((r) => r.report.figures);
      return FIGURES.map(([, get]) => median(mine.map(get)));
    };
    return { rate, figures: { loom: of('loom'), 'llama-server': of('llama-server') } };
  });
}

export function formatServePeer(r: ServePeerResult): string {
  const o = r.options;
  const lines = [
    `bench serve-peer: ${o.model}, ${o.threads} threads, random ${o.inputLen} in / ${o.outputLen} out, ${o.numPrompts} prompts, max concurrency ${o.maxConcurrency}, ${o.rounds} round(s) each, alternating`,
    `loom serve ${r.loomArgs.join(' ')}`,
    `llama-server (llama.cpp ${r.llamaServer.commit.slice(0, 12)}) ${r.llamaServer.args.filter((a, i, all) => all[i - 1] !== '-m' && all[i - 1] !== '--port' && a !== '-m' && a !== '--port').join(' ')}`,
    ...r.warnings.slice(0, 1),
    '',
    'every run:',
    formatSweep(r.runs.map((run) => ({ system: `${run.system} #${run.round + 1}`, report: run.report, load: run.load }))),
  ];
  for (const { rate, figures } of summarizeRuns(r.runs)) {
    const rows = FIGURES.map(([name], i) => {
      const loom = figures.loom[i]!;
      const peer = figures['llama-server'][i]!;
      return [name, fmt(loom), fmt(peer), peer > 0 ? `${fmt(loom / peer)}×` : '–'];
    });
    lines.push('', `rate ${rateLabel(rate)}: median over rounds`, table([['figure', 'loom', 'llama-server', 'loom / llama-server'], ...rows]));
  }
  return lines.join('\n');
}

export function servePeerJson(r: ServePeerResult): Record<string, unknown> {
  return {
    options: { ...r.options, rates: r.options.rates.map(rateLabel) },
    llama_server: r.llamaServer,
    loom_args: r.loomArgs,
    warnings: r.warnings,
    runs: r.runs.map((run) => ({ system: run.system, round: run.round, load_average: run.load, request_rate: rateLabel(run.report.settings.requestRate), figures: run.report.figures })),
    summary: summarizeRuns(r.runs).map(({ rate, figures }) => ({
      request_rate: rateLabel(rate),
      ...Object.fromEntries(FIGURES.map(([name], i) => [name, { loom: figures.loom[i], 'llama-server': figures['llama-server'][i] }])),
    })),
  };
}
