// Qwen's M-RoPE positions for a batch whose sequences hold images ('mrope' projectors), as the
// vision contract gives them (ForwardBatch.ropePositions): [4, numTokens] section-major (t for
// every token, then h, then w, then e). A text token at rope position p is (p, p, p, p)
// (llama_batch_allocr broadcasts it); an image whose first token is at rope position p0, grid
// rows × cols, gives its token (y, x) (p0, p0 + y, p0 + x, 0) (mtmd_image_tokens_get_decoder_pos),
// and the text after it goes on from p0 + max(rows, cols) (mtmd's n_pos for M-RoPE images). A
// token's KV slot is still its index in the sequence: only rotary reads these.
import type { ForwardBatch } from '../model/batch.js';
import type { ImageSpan } from './image-spans.js';

/** The rope position of sequence index i outside any image: its index less what the images before it saved. */
export function textRopePosition(spans: readonly ImageSpan[], i: number): number {
  let p = i;
  for (const s of spans) {
    if (s.end > i) break;
    const g = s.image.prepared;
    p -= g.numTokens - Math.max(g.gridRows, g.gridCols);
  }
  return p;
}

/** [4 * numTokens] rope positions of a batch: the sequences' images (seqStarts order) where they have them. */
export function mropePositions(batch: Pick<ForwardBatch, 'positions' | 'seqStarts'>, images: readonly (readonly ImageSpan[])[]): Int32Array {
  const n = batch.positions.length;
  const out = new Int32Array(4 * n);
  for (let s = 0; s + 1 < batch.seqStarts.length; s++) {
    const spans = images[s] ?? [];
    for (let t = batch.seqStarts[s]!; t < batch.seqStarts[s + 1]!; t++) {
      const i = batch.positions[t]!;
      const span = spans.find((sp) => sp.start <= i && i < sp.end);
      if (!span) {
        const p = textRopePosition(spans, i);
        out[t] = out[n + t] = out[2 * n + t] = out[3 * n + t] = p;
        continue;
      }
      const p0 = textRopePosition(spans, span.start);
      const j = i - span.start;
      const cols = span.image.prepared.gridCols;
      out[t] = p0;
      out[n + t] = p0 + Math.floor(j / cols);
      out[2 * n + t] = p0 + (j % cols);
      out[3 * n + t] = 0;
    }
  }
  return out;
}
