// The text report of `loom bench kernels`: machine limits, then one table per kernel family
// with the goals marked met / not met.
import type { KernelReport } from './kernels.js';
import { percentile } from './stats.js';
import { fmt, fmtBytes, table } from './table.js';

const mark = (met: boolean | undefined): string => (met === undefined ? '—' : met ? 'met' : 'NOT MET');

export function formatKernelReport(r: KernelReport): string {
  const m = r.machine;
  const lines = [
    `threads ${r.settings.threads}, kernels ${r.settings.kernels}${r.settings.quick ? ' (quick sizes)' : ''}`,
    `f32 FMA peak ${fmt(m.fmaPeakGflops)} GFLOP/s (${m.fmaBits}-bit vectors)` +
      (m.fmaPeak256Gflops !== undefined ? `, ${fmt(m.fmaPeak256Gflops)} GFLOP/s at 256-bit` : ''),
    `int8 product peak ${fmt(m.int8PeakGops)} GOP/s (${m.int8Instruction})`,
    `memory read bandwidth ${fmt(m.readBandwidthGBs)} GB/s (${fmtBytes(m.bandwidthBufferBytes)} buffer)`,
    `(each the larger of the probes before and after the kernels: FMA ${m.probes.map((p) => fmt(p.fmaGflops)).join(' / ')} GFLOP/s, ` +
      `int8 ${m.probes.map((p) => fmt(p.int8Gops)).join(' / ')} GOP/s, ` +
      `read ${m.probes.map((p) => fmt(p.readGBs)).join(' / ')} GB/s)`,
    '',
  ];
  const one = r.matmul[0]?.oneRow;
  const many = r.matmul[0]?.manyRows;
  lines.push(
    `matmul, 1 row (${one?.inFeatures ?? '?'} in, weights of about ${fmtBytes(one?.weightBytes ?? 0)}) and ` +
      `${many?.rows ?? '?'} rows (${many?.inFeatures ?? '?'} → ${many?.outFeatures ?? '?'}); median ms per call.`,
    `1-row % bw: best matmul against the best read of a buffer of the same size, probed in alternation ` +
      `(${one?.rounds.length ?? '?'} rounds; median of the rounds' ratios; "read" is the median read); ` +
      `"short": the same at a small model's row width (896 in, or 1536 for 256-value blocks), where per-row costs and block tails show; ` +
      `"% peak" is of the f32 FMA peak, "% int8" of the int8 product peak (types whose activations are rounded to int8); ` +
      `a type in parentheses is the layout loading gives it on this machine`,
  );
  lines.push(
    table([
      ['type', '1 row ms', 'GB/s', 'read', '% bw', 'goal', '', 'short in', 'GB/s', '% bw', `${many?.rows ?? ''} rows ms`, 'GFLOP/s', '% peak', 'goal', '', '% int8'],
      ...r.matmul.map((x) => [
        x.layout ? `${x.type} (${x.layout})` : x.type,
        fmt(x.oneRow.medianMs),
        fmt(x.oneRow.gbps),
        fmt(percentile(x.oneRow.rounds.map((q) => q.readGBs), 50)),
        fmt(x.oneRow.pctBandwidth),
        x.oneRow.goalPct !== undefined ? `≥ ${x.oneRow.goalPct}%` : '',
        mark(x.oneRow.met),
        String(x.shortRow.inFeatures),
        fmt(x.shortRow.gbps),
        fmt(x.shortRow.pctBandwidth),
        fmt(x.manyRows.medianMs),
        fmt(x.manyRows.gflops),
        fmt(x.manyRows.pctPeak),
        `≥ ${x.manyRows.goalPct}%`,
        mark(x.manyRows.met),
        x.manyRows.pctInt8Peak !== undefined ? fmt(x.manyRows.pctInt8Peak) : '',
      ]),
    ]),
  );
  lines.push('', 'attention decode (9 heads over 3 KV heads of 64, f16 cache): GB/s of K+V read; ms per layer call');
  lines.push(
    table([
      ['sequences', 'context', 'KV bytes', 'layers', 'ms', 'GB/s', '% bw'],
      ...r.attention.map((a) => [String(a.sequences), String(a.context), fmtBytes(a.kvBytes), String(a.layers), fmt(a.medianMs), fmt(a.gbps), fmt(a.pctBandwidth)]),
    ]),
  );
  return lines.join('\n');
}
