// `loom bench start-peer`'s report: every round, then each side's medians (and llama.cpp's
// over loom's when both ran).
import { percentile } from './stats.js';
import type { Memory, StartPeerReport, StartRound, StartSide } from './start-peer.js';
import { fmtBytes, table } from './table.js';

export interface StartMedians {
  readonly side: StartSide;
  readonly rounds: number;
  readonly readyMs: number;
  readonly firstTokenMs: number;
  readonly ttftMs: number;
  readonly afterLoad: Memory;
  readonly afterFirstToken: Memory;
}

function medianMemory(ms: readonly Memory[]): Memory {
  const m = (key: keyof Memory): number => percentile(ms.map((x) => x[key]), 50);
  return { rss: m('rss'), hwm: m('hwm'), anon: m('anon'), file: m('file') };
}

export function startMedians(rounds: readonly StartRound[]): StartMedians[] {
  const sides = [...new Set(rounds.map((r) => r.side))];
  return sides.map((side) => {
    const of = rounds.filter((r) => r.side === side);
    const m = (f: (r: StartRound) => number): number => percentile(of.map(f), 50);
    return {
      side,
      rounds: of.length,
      readyMs: m((r) => r.readyMs),
      firstTokenMs: m((r) => r.firstTokenMs),
      ttftMs: m((r) => r.ttftMs),
      afterLoad: medianMemory(of.map((r) => r.afterLoad)),
      afterFirstToken: medianMemory(of.map((r) => r.afterFirstToken)),
    };
  });
}

const HEAD = ['', 'ready s', 'first token s', 'request TTFT ms', 'RSS after load', '(file)', 'RSS at 1st token', '(file)', 'peak (HWM)'];

function row(label: string, r: Omit<StartMedians, 'side' | 'rounds'>): string[] {
  return [
    label,
    (r.readyMs / 1000).toFixed(2),
    (r.firstTokenMs / 1000).toFixed(2),
    r.ttftMs.toFixed(0),
    fmtBytes(r.afterLoad.rss),
    fmtBytes(r.afterLoad.file),
    fmtBytes(r.afterFirstToken.rss),
    fmtBytes(r.afterFirstToken.file),
    fmtBytes(r.afterFirstToken.hwm),
  ];
}

export function formatStartPeer(report: StartPeerReport): string {
  const s = report.settings;
  const medians = startMedians(report.rounds);
  const lines = [
    `${s.model}: ${s.rounds} round(s) a side, ${s.threads} threads, context ${s.ctxSize}, ${s.maxTokens} tokens asked for`,
    ...(s.llamaServerArgs ? [`llama-server ${s.llamaServerArgs.join(' ')}`] : ['loom alone (no --llama-server)']),
    '',
    table([HEAD, ...report.rounds.map((r) => row(`${r.side} #${r.round}`, r))]),
    '',
    'medians',
    table([HEAD, ...medians.map((m) => row(m.side, m))]),
  ];
  const loom = medians.find((m) => m.side === 'loom');
  const llama = medians.find((m) => m.side === 'llama.cpp');
  if (loom && llama) {
    lines.push(
      '',
      `llama.cpp / loom: first token ${(llama.firstTokenMs / loom.firstTokenMs).toFixed(2)}x the time, ` +
        `RSS after load ${(llama.afterLoad.rss / loom.afterLoad.rss).toFixed(2)}x, at the first token ${(llama.afterFirstToken.rss / loom.afterFirstToken.rss).toFixed(2)}x`,
    );
  }
  return lines.join('\n');
}
