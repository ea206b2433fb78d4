// The expert choice both router gatings share (moe.ts's softmax-then-top-k, oai-moe.ts's
// top-k-then-softmax): llama.cpp's argsort top-k over one token's router row.

/**
 * Writes the indices of row's k = ids.length largest values into ids, best first (the lowest
 * index first among equals, as ggml's argsort top-k), and those values into values. Returns
 * the index of the (k+1)-th largest, for the routing margin, or -1 when k = row.length.
 * taken: a zeroed [row.length] scratch, zeroed again on return.
 */
export function topKOfRow(row: Float32Array, ids: Int32Array, values: Float32Array, taken: Uint8Array): number {
  const k = ids.length;
  const E = row.length;
  let next = -1;
  for (let j = 0; j <= k && j < E; j++) {
    let best = -1;
    for (let e = 0; e < E; e++) if (taken[e] === 0 && (best < 0 || row[e]! > row[best]!)) best = e;
    if (j === k) {
      next = best;
      break;
    }
    taken[best] = 1;
    ids[j] = best;
    values[j] = row[best]!;
  }
  for (let j = 0; j < k; j++) taken[ids[j]!] = 0;
  return next;
}
