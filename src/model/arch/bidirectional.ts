// Attention that runs both ways (encoders, embedding models), expressed in the kernels'
// causal terms: a token attends to positions first..positions[t] of its sequence. An
// encoder's sequence is always computed whole in one step (the scheduler's rule for
// bidirectional models), so its last token in the batch is its last position.
import type { AttentionBatch } from '../../kernels/index.js';
import type { ForwardBatch } from '../batch.js';

/** [start, end) of each sequence, checked to start at position 0 (a whole sequence) */
function eachSequence(batch: ForwardBatch, body: (start: number, end: number) => void): void {
  const numSeqs = batch.seqStarts.length - 1;
  for (let s = 0; s < numSeqs; s++) {
    const start = batch.seqStarts[s]!;
    const end = batch.seqStarts[s + 1]!;
    if (end > start && batch.positions[start] !== 0) throw new Error(`sequence ${s} of an encoder batch does not start at position 0: bidirectional attention needs it whole`);
    body(start, end);
  }
}

/** Every token of a sequence attends to all of the sequence's positions, as if it were the last one. */
export function wholeSequenceAttention(batch: ForwardBatch): AttentionBatch {
  const positions = new Int32Array(batch.positions.length);
  eachSequence(batch, (start, end) => positions.fill(end > start ? batch.positions[end - 1]! : 0, start, end));
  return { seqStarts: batch.seqStarts, positions, blockTables: batch.blockTables, maxBlocksPerSeq: batch.maxBlocksPerSeq };
}

/**
 * A symmetric sliding window (llama.cpp's LLAMA_SWA_TYPE_SYMMETRIC, EmbeddingGemma's sliding
 * layers): the token at position i attends to i − ⌊window/2⌋ .. i + ⌊window/2⌋ within its
 * sequence (is_masked_swa masks |p1 − p0| > window/2).
 */
export function symmetricWindowAttention(batch: ForwardBatch, window: number): AttentionBatch {
  const half = Math.floor(window / 2);
  const n = batch.positions.length;
  const positions = new Int32Array(n);
  const firstPositions = new Int32Array(n);
  eachSequence(batch, (start, end) => {
    const last = end - start - 1;
    for (let t = start; t < end; t++) {
      const i = t - start;
      positions[t] = Math.min(last, i + half);
      firstPositions[t] = Math.max(0, i - half);
    }
  });
  return { seqStarts: batch.seqStarts, positions, blockTables: batch.blockTables, maxBlocksPerSeq: batch.maxBlocksPerSeq, firstPositions };
}
