// Text report of `loom bench protocol`: a table per concurrency, slopes and the win.
import type { ProtocolReport } from './protocol.js';
import { PROTOCOL_MODES } from './protocol.js';
import { fmt, fmtBytes, table } from './table.js';

export function formatProtocolReport(report: ProtocolReport): string {
  const s = report.settings;
  const out: string[] = [
    `loom bench protocol: engine without a model in a worker, ${s.outputLen} steps, top-${s.topN} logprobs; ` +
      `bytes at each length, times averaged over a window of ${s.steps} steps (ending at max(length, ${s.steps})), after ${s.warmupSteps} warmup steps`,
    'bytes/step = typed-array bytes + structured-clone overhead estimate; host ms = worker builds the message → main thread processed it; ' +
      'tokens/s = requests ÷ step period (processed → next processed, ack included)',
  ];
  for (const r of report.results) {
    const rows = [['length', 'mode', 'bytes/step', 'time window', 'host ms/step', 'step period ms', 'tokens/s']];
    const lengths = r.modes.incremental.points.map((p) => p.length);
    lengths.forEach((length, i) => {
      for (const mode of PROTOCOL_MODES) {
        const p = r.modes[mode].points[i]!;
        rows.push([String(length), mode, fmtBytes(p.bytesPerStep), `${p.window[0]}–${p.window[1]}`, fmt(p.hostMsPerStep), fmt(p.stepPeriodMs), fmt(p.tokensPerSec)]);
      }
    });
    out.push('', `concurrency ${r.concurrency}`, table(rows));
    for (const mode of PROTOCOL_MODES) {
      const m = r.modes[mode];
      out.push(
        `${mode}: ${fmt(m.tokensPerSec)} tokens/s over the run (${fmt(m.wallMs / 1000)} s, ${fmtBytes(m.totalBytes)} of arrays); ` +
          `slope ${m.hostMsSlopePer1kTokens >= 0 ? '+' : ''}${fmt(m.hostMsSlopePer1kTokens)} host ms/step per 1000 tokens of length, ` +
          `${fmt(m.bytesSlopePerToken)} bytes/step per token`,
      );
    }
    const w = r.win;
    out.push(
      `incremental wins at length ${w.length}: ${fmt(w.tokensPerSecRatio)}× the tokens/s, ${fmt(w.hostMsRatio)}× less host time per step, ${fmt(w.bytesRatio)}× fewer bytes per step`,
    );
  }
  return out.join('\n');
}
