// The text report of `loom bench peer`: tokens/s of both sides (median, min–max over runs),
// the ratio, the goal, and where each side's time went.
import type { PeerReport, PeerSideFigures } from './peer.js';
import type { ExpertUse } from './peer-types.js';
import { fmt, table } from './table.js';

const cell = (f: PeerSideFigures): string => `${fmt(f.tokensPerSec.median)} (${fmt(f.tokensPerSec.min)}–${fmt(f.tokensPerSec.max)})`;
const pct = (x: number): string => `${(100 * x).toFixed(0)}%`;

function profileLine(p: Readonly<Record<string, number>> | undefined): string {
  if (!p) return '';
  return Object.entries(p)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${pct(v)}`)
    .join(', ');
}

/** per MoE layer and step: how many of the experts ran, and the (token, expert) pairs they took */
export function expertLine(u: ExpertUse): string {
  const pairs = u.pairsPerLayerStep;
  return `${fmt(u.distinctPerLayerStep)} of ${u.experts} ran per layer and step, for ${fmt(pairs)} (token, expert) pairs (${fmt(pairs / u.distinctPerLayerStep)} tokens per expert run)`;
}

function trafficLines(r: PeerReport): string[] {
  const t = r.decodeTraffic;
  if (!t) return [];
  const side = (name: string, s: { gbs: number; fraction: number }) => `${name} ${s.gbs.toFixed(1)} GB/s = ${pct(s.fraction)}`;
  return [
    `one-sequence decode reads ${(t.weightBytes / 1e6).toFixed(0)} MB of weights a token; read bandwidth probed in this run ${t.readGBs.toFixed(1)} GB/s ` +
      `(median of ${t.probes.length}: ${t.probes.map((g) => g.toFixed(1)).join(', ')}):`,
    `  ${side('loom', t.loom)}, ${side('llama.cpp', t.llamaCpp)} of it (goal: loom ≥ ${pct(t.goalFraction)}; ${t.loom.fraction >= t.goalFraction ? 'met' : 'NOT MET'})`,
    '',
  ];
}

export function formatPeerReport(r: PeerReport): string {
  const s = r.settings;
  const lines = [
    `model ${s.model}`,
    `threads ${s.threads} on both sides; ${s.repeat} runs each, alternating; tokens/s as median (min–max); load average ${r.loadAverage.before.toFixed(2)} before, ${r.loadAverage.after.toFixed(2)} after`,
    `loom: ${s.loom}`,
    `llama.cpp: ${s.llamaCpp}; batched = one context with N sequences, all N evaluated in one llama_decode per step`,
    '',
    table([
      ['', 'loom tok/s', 'llama.cpp tok/s', 'loom/llama.cpp', 'goal', '', 'llama_decode calls/step'],
      ...r.rows.map((row) => [
        row.label,
        cell(row.loom),
        cell(row.llamaCpp),
        `${row.ratio.toFixed(2)}×`,
        row.goal !== undefined ? `≥ ${row.goal}×` : '',
        row.met === undefined ? '' : row.met ? 'met' : 'NOT MET',
        row.llamaCpp.callsPerStep !== undefined ? fmt(row.llamaCpp.callsPerStep) : '',
      ]),
    ]),
    '',
    ...trafficLines(r),
    'where the time went (last run of each):',
  ];
  for (const row of r.rows) {
    if (row.kind.endsWith('prefill') && !row.loom.profile) continue;
    lines.push(`  ${row.label}`);
    if (row.loom.profile) lines.push(`    loom:      ${profileLine(row.loom.profile)}`);
    if (row.loom.experts) lines.push(`    experts:   ${expertLine(row.loom.experts)}`);
    if (row.llamaCpp.profile) lines.push(`    llama.cpp: ${profileLine(row.llamaCpp.profile)}`);
  }
  return lines.join('\n');
}
