import type { AttentionBatch } from '../kernels/index.js';

/**
 * One forward pass over a flat batch of tokens from any number of sequences: prefill
 * chunks and decode tokens side by side. Built by the runner's caller (the engine);
 * the architectures read it and never see sequences any other way.
 */
export interface ForwardBatch extends AttentionBatch {
  /** [numTokens] */
  readonly tokenIds: Int32Array;
  /** [numTokens] KV-cache slot each token's k/v is written to (block * blockSize + offset) */
  readonly slotMapping: Int32Array;
  /** [numLogits] batch rows whose next-token logits are wanted (usually each sequence's last token) */
  readonly logitIndices: Int32Array;
  /** the sliding-window pool's tables and slots, when the cache has one (KvCache.swa) */
  readonly swa?: SwaTables;
  /** [numSeqs] each sequence's recurrent-state slot (KvCache.recurrent), for hybrid models; a
   *  sequence whose chunk starts at position 0 starts from a zeroed state */
  readonly stateSlots?: Int32Array;
  /** batch rows whose input is an embedding (an image's, from its projector) instead of their token's:
   *  row rows[i] reads data[i*hidden .. (i+1)*hidden]; written into the residual stream as is (never
   *  scaled as token embeddings may be: arch/input-embeds.ts) */
  readonly inputEmbeds?: { readonly rows: Int32Array; readonly data: Float32Array };
  /** [numTokens] the position up to which each token attends, where some differ from `positions`
   *  (a non-causal image span: its tokens attend to the span's last position); rotary and the KV
   *  slot still use `positions` */
  readonly attentionPositions?: Int32Array;
  /** [4 * numTokens] M-RoPE positions, section-major (t for all tokens, then h, w, e), for a model
   *  whose images take Qwen's (t, h, w) positions (engine/mrope-positions.ts); absent: `positions` */
  readonly ropePositions?: Int32Array;
}

/** Block tables of the sliding-window pool: -1 for blocks wholly outside every window (freed). */
export interface SwaTables {
  /** [numSeqs, maxBlocksPerSeq] */
  readonly blockTables: Int32Array;
  readonly maxBlocksPerSeq: number;
  /** [numTokens] */
  readonly slotMapping: Int32Array;
}

/** Checks the invariants the kernels rely on; cheap next to a forward pass. */
export function assertValidBatch(batch: ForwardBatch): void {
  const n = batch.tokenIds.length;
  const numSeqs = batch.seqStarts.length - 1;
  if (batch.positions.length !== n || batch.slotMapping.length !== n) throw new Error('batch arrays disagree on numTokens');
  if (numSeqs < 0 || batch.seqStarts[0] !== 0 || batch.seqStarts[numSeqs] !== n) throw new Error('seqStarts must run from 0 to numTokens');
  if (batch.blockTables.length !== numSeqs * batch.maxBlocksPerSeq) throw new Error('blockTables must be [numSeqs, maxBlocksPerSeq]');
  for (const i of batch.logitIndices) if (i < 0 || i >= n) throw new Error(`logit index ${i} outside the batch`);
  if (batch.inputEmbeds) for (const i of batch.inputEmbeds.rows) if (i < 0 || i >= n) throw new Error(`input embedding row ${i} outside the batch`);
  if (batch.attentionPositions && batch.attentionPositions.length !== n) throw new Error('attentionPositions must be [numTokens]');
  if (batch.ropePositions && batch.ropePositions.length !== 4 * n) throw new Error('ropePositions must be [4, numTokens]');
}

/** One sequence's part of a step: `tokenIds` continue its context at `startPos`. */
export interface SequenceChunk {
  readonly tokenIds: ArrayLike<number>;
  readonly startPos: number;
  /** the sequence's block ids, covering positions up to startPos + tokenIds.length - 1 */
  readonly blockTable: ArrayLike<number>;
  /** its table in the sliding-window pool (-1 where released), when the cache has one */
  readonly swaBlockTable?: ArrayLike<number>;
  /** its recurrent-state slot (hybrid models) */
  readonly stateSlot?: number;
  /** whether the logits after this chunk's last token are wanted */
  readonly wantLogits: boolean;
  /** logits after every token of the chunk (prompt logprobs), in token order */
  readonly allLogits?: boolean;
  /** runs of the chunk's tokens whose input is an embedding: tokenIds[at .. at + count) read
   *  data [count, hidden]; a nonCausal run attends both ways (each of its tokens to its last) */
  readonly embeds?: readonly ChunkEmbeds[];
}

export interface ChunkEmbeds {
  readonly at: number;
  readonly count: number;
  readonly data: Float32Array;
  readonly nonCausal: boolean;
}

/** Flattens per-sequence chunks into a ForwardBatch (logits in chunk order). */
export function buildBatch(chunks: readonly SequenceChunk[], blockSize: number): ForwardBatch {
  const numTokens = chunks.reduce((n, c) => n + c.tokenIds.length, 0);
  const maxBlocksPerSeq = Math.max(1, ...chunks.map((c) => c.blockTable.length));
  const tokenIds = new Int32Array(numTokens);
  const positions = new Int32Array(numTokens);
  const slotMapping = new Int32Array(numTokens);
  const seqStarts = new Int32Array(chunks.length + 1);
  const blockTables = new Int32Array(chunks.length * maxBlocksPerSeq).fill(-1);
  const logitIndices: number[] = [];
  const embeds = inputEmbedsOf(chunks);
  let t = 0;
  chunks.forEach((chunk, s) => {
    seqStarts[s] = t;
    for (let b = 0; b < chunk.blockTable.length; b++) blockTables[s * maxBlocksPerSeq + b] = chunk.blockTable[b]!;
    for (let i = 0; i < chunk.tokenIds.length; i++, t++) {
      const pos = chunk.startPos + i;
      const block = chunk.blockTable[Math.floor(pos / blockSize)];
      if (block === undefined) throw new Error(`sequence ${s} has no block for position ${pos}`);
      tokenIds[t] = chunk.tokenIds[i]!;
      positions[t] = pos;
      slotMapping[t] = block * blockSize + (pos % blockSize);
    }
    const n = chunk.tokenIds.length;
    for (const e of chunk.embeds ?? []) embeds?.add(t - n, chunk.startPos, e);
    if (chunk.allLogits) for (let i = t - n; i < t; i++) logitIndices.push(i);
    else if (chunk.wantLogits && n > 0) logitIndices.push(t - 1);
  });
  seqStarts[chunks.length] = t;
  const swa = chunks.some((c) => c.swaBlockTable) ? buildSwaTables(chunks, blockSize, positions, seqStarts) : undefined;
  const stateSlots = chunks.some((c) => c.stateSlot !== undefined) ? Int32Array.from(chunks, (c, s) => {
    if (c.stateSlot === undefined) throw new Error(`sequence ${s} has no recurrent-state slot`);
    return c.stateSlot;
  }) : undefined;
  return {
    tokenIds, positions, slotMapping, seqStarts, blockTables, maxBlocksPerSeq, logitIndices: Int32Array.from(logitIndices),
    ...(swa ? { swa } : {}), ...(stateSlots ? { stateSlots } : {}),
    ...(embeds && embeds.batchFields(positions)),
  };
}

/** Gathers the chunks' embedding runs into ForwardBatch.inputEmbeds (and attentionPositions for non-causal runs). */
function inputEmbedsOf(chunks: readonly SequenceChunk[]) {
  const runs = chunks.flatMap((c) => c.embeds ?? []);
  if (runs.length === 0) return undefined;
  const numRows = runs.reduce((n, e) => n + e.count, 0);
  const hidden = runs[0]!.data.length / runs[0]!.count;
  const rows = new Int32Array(numRows);
  const data = new Float32Array(numRows * hidden);
  /** [row in batch, last position] of each non-causal run's rows */
  const nonCausal: [number, number, number][] = [];
  let r = 0;
  return {
    add(chunkStart: number, startPos: number, e: ChunkEmbeds): void {
      if (e.data.length !== e.count * hidden) throw new Error(`an embedding run of ${e.count} rows has ${e.data.length} values, not ${e.count} × ${hidden}`);
      for (let i = 0; i < e.count; i++) rows[r + i] = chunkStart + e.at + i;
      data.set(e.data, r * hidden);
      r += e.count;
      if (e.nonCausal) nonCausal.push([chunkStart + e.at, e.count, startPos + e.at + e.count - 1]);
    },
    batchFields(positions: Int32Array): Pick<ForwardBatch, 'inputEmbeds' | 'attentionPositions'> {
      if (nonCausal.length === 0) return { inputEmbeds: { rows, data } };
      const attentionPositions = positions.slice();
      for (const [row, count, last] of nonCausal) attentionPositions.fill(last, row, row + count);
      return { inputEmbeds: { rows, data }, attentionPositions };
    },
  };
}

function buildSwaTables(chunks: readonly SequenceChunk[], blockSize: number, positions: Int32Array, seqStarts: Int32Array): SwaTables {
  const maxBlocksPerSeq = Math.max(1, ...chunks.map((c) => c.swaBlockTable?.length ?? 0));
  const blockTables = new Int32Array(chunks.length * maxBlocksPerSeq).fill(-1);
  const slotMapping = new Int32Array(positions.length);
  chunks.forEach((chunk, s) => {
    const table = chunk.swaBlockTable;
    if (!table) throw new Error(`sequence ${s} has no sliding-window block table`);
    for (let b = 0; b < table.length; b++) blockTables[s * maxBlocksPerSeq + b] = table[b]!;
    for (let t = seqStarts[s]!; t < seqStarts[s + 1]!; t++) {
      const pos = positions[t]!;
      const block = table[Math.floor(pos / blockSize)];
      if (block === undefined || block < 0) throw new Error(`sequence ${s} has no sliding-window block for position ${pos}`);
      slotMapping[t] = block * blockSize + (pos % blockSize);
    }
  });
  return { blockTables, maxBlocksPerSeq, slotMapping };
}
