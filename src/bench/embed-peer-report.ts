// The report of `loom bench embed-peer`: one row per case (inputs a second of each server,
// their ratio, how close their vectors are), then the runs behind it.
import { fmt, table } from './table.js';
import type { EmbedPeerReport } from './embed-peer.js';

export function formatEmbedPeer(r: EmbedPeerReport): string {
  const o = r.options;
  const head = [
    `model: ${o.model} (${r.dimensions} dimensions), ${o.threads} threads, ${o.rounds} rounds alternating, ${o.inputs} inputs a case and round, one request at a time`,
    `llama-server: ${r.llamaServer.binary} ${r.llamaServer.args.join(' ')}`,
    `loom serve: ${r.loomArgs.join(' ')}`,
    `load average: ${r.loadBefore.toFixed(2)} before, ${r.loadAfter.toFixed(2)} after`,
  ];
  const rows = [
    ['inputs/request', 'tokens/input', 'loom inputs/s', 'llama-server inputs/s', 'loom / llama-server', 'min cosine'],
    ...r.cases.map((c) => [String(c.batch), String(c.length), fmt(c.loom), fmt(c.llama), `${fmt(c.ratio)}x`, c.minCosine.toFixed(6)]),
  ];
  return [...head, '', table(rows)].join('\n');
}

export function embedPeerJson(r: EmbedPeerReport): object {
  return { benchmark: 'embed-peer', ...r };
}
