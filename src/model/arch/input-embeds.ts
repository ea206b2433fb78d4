// What every generative architecture does with a batch's image rows (ForwardBatch.inputEmbeds,
// attentionPositions), in one place. llama.cpp decodes an image's embeddings as a batch of
// `embd` instead of tokens: its graphs scale token inputs only (gemma3.cpp, gemma4.cpp:
// `ubatch.token ? sqrtf(n_embd) : 1.0f`), so an image row enters the residual stream as the
// projector wrote it. Call writeInputEmbeds after the token embedding (and its scale), before
// anything reads the stream.
import type { AttentionBatch } from '../../kernels/index.js';
import type { ForwardBatch } from '../batch.js';

/** Overwrites x's image rows ([numTokens, hidden]) with the batch's input embeddings. */
export function writeInputEmbeds(x: Float32Array, batch: ForwardBatch, hidden: number): void {
  const e = batch.inputEmbeds;
  if (!e) return;
  if (e.data.length !== e.rows.length * hidden) throw new Error(`input embeddings are ${e.data.length} values for ${e.rows.length} rows of ${hidden}`);
  for (let i = 0; i < e.rows.length; i++) x.set(e.data.subarray(i * hidden, (i + 1) * hidden), e.rows[i]! * hidden);
}

/**
 * The batch as attention sees it: a non-causal span's tokens attend up to the span's last
 * position, their sliding window still measured back from their own (llama.cpp's mask with
 * causal attention off: every key of the span, and keys before it within the window).
 */
export function attentionView<B extends AttentionBatch>(batch: B & Pick<ForwardBatch, 'attentionPositions'>): B {
  return batch.attentionPositions ? { ...batch, positions: batch.attentionPositions, windowPositions: batch.positions } : batch;
}
