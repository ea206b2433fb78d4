// The paged KV cache's reference kernels (writeKv, attention) and the softmax they use.
// f16 caches round q and the softmax weights to f16, as llama.cpp does; a q8_0 or q4_0 cache
// stores block_q8_0 / block_q4_0 rows quantized as llama.cpp's CPU backend quantizes them, and
// attention reads each value as the block's d times its quant against f32 q and f32 weights.
import { KV_BLOCK_BYTES } from './index.js';
import type { AttentionBatch, AttentionShape, KvCacheShape, KvDtype, KvLayer } from './index.js';
import { f16ToF32, f32ToF16, readF16, roundToF16 } from '../tensor/half.js';
import { quantizeQ8_0BlockX86 } from '../tensor/quant/q8-activations.js';
import { quantizeQ4_0Block } from '../tensor/quant/legacy-quants.js';

/** ggml's scale(1/cap) → tanh → scale(cap), each rounded to f32 */
export function capScore(x: number, inv: number, cap: number): number {
  return Math.fround(Math.fround(Math.tanh(Math.fround(x * inv))) * cap);
}

export function softmax(x: Float32Array, rows: number, n: number): void {
  for (let r = 0; r < rows; r++) {
    const row = x.subarray(r * n, (r + 1) * n);
    let max = -Infinity;
    for (let i = 0; i < n; i++) max = Math.max(max, row[i]!);
    let sum = 0;
    for (let i = 0; i < n; i++) {
      const e = Math.exp(row[i]! - max);
      row[i] = e;
      sum += e;
    }
    for (let i = 0; i < n; i++) row[i] = row[i]! / sum;
  }
}

/** softmax over n scores with one more logit in the denominator only (ggml_soft_max_ext's sink: gpt-oss) */
function softmaxWithSink(row: Float32Array, n: number, sink: number): void {
  let max = sink;
  for (let i = 0; i < n; i++) max = Math.max(max, row[i]!);
  let sum = Math.exp(sink - max);
  for (let i = 0; i < n; i++) {
    const e = Math.exp(row[i]! - max);
    row[i] = e;
    sum += e;
  }
  for (let i = 0; i < n; i++) row[i] = row[i]! / sum;
}

export function writeKv(layer: KvLayer, shape: KvCacheShape, k: Float32Array, v: Float32Array, slotMapping: Int32Array): void {
  const { numKvHeads, headDim } = shape;
  checkWholeBlocks(shape);
  const capacity = shape.numBlocks * shape.blockSize;
  for (let t = 0; t < slotMapping.length; t++) {
    const slot = slotMapping[t]!;
    if (slot < 0 || slot >= capacity) throw new RangeError(`KV slot ${slot} outside the cache (${capacity} slots)`);
    for (let h = 0; h < numKvHeads; h++) {
      const row = kvRow(shape, slot, h);
      const src = (t * numKvHeads + h) * headDim;
      const blockBytes = KV_BLOCK_BYTES[shape.dtype];
      if (blockBytes !== undefined) {
        // a row is whole blocks: value e of the layer lives in block e / 32; quantized as
        // llama.cpp's CPU backend writes its cache (x86 quantize_row_q8_0, quantize_row_q4_0_ref)
        const quantize = shape.dtype === 'q8_0' ? quantizeQ8_0BlockX86 : quantizeQ4_0Block;
        for (let i = 0; i < headDim; i += 32) {
          quantize(k, src + i, layer.k as Uint8Array, ((row + i) / 32) * blockBytes);
          quantize(v, src + i, layer.v as Uint8Array, ((row + i) / 32) * blockBytes);
        }
        continue;
      }
      for (let i = 0; i < headDim; i++) {
        store(layer.k, row + i, k[src + i]!);
        store(layer.v, row + i, v[src + i]!);
      }
    }
  }
}

/** a quantized row is whole blocks of 32 (as llama.cpp requires of a quantized cache's head size) */
function checkWholeBlocks(shape: KvCacheShape): void {
  if (KV_BLOCK_BYTES[shape.dtype] !== undefined && shape.headDim % 32 !== 0) throw new RangeError(`a ${shape.dtype} cache needs headDim a multiple of 32, got ${shape.headDim}`);
}

/**
 * The first element of KV head `kvHead`'s row at `slot`: a block holds its KV heads one after
 * another, each blockSize rows of headDim ([numBlocks, numKvHeads, blockSize, headDim]), so
 * attention reads one head's rows of a block as one stretch.
 */
function kvRow(shape: KvCacheShape, slot: number, kvHead: number): number {
  const block = Math.floor(slot / shape.blockSize);
  return ((block * shape.numKvHeads + kvHead) * shape.blockSize + (slot % shape.blockSize)) * shape.headDim;
}

function store(cache: Float32Array | Uint16Array | Uint8Array, index: number, value: number): void {
  cache[index] = cache instanceof Uint16Array ? f32ToF16(value) : value;
}

/** value `index` of a cache layer: f32, f16 bits, or d·q of a q8_0 or q4_0 block */
function load(cache: Float32Array | Uint16Array | Uint8Array, index: number, dtype: KvDtype): number {
  if (dtype === 'q8_0') {
    const block = Math.floor(index / 32) * 34;
    return readF16(cache as Uint8Array, block) * ((cache[block + 2 + (index % 32)]! << 24) >> 24);
  }
  if (dtype === 'q4_0') {
    const block = Math.floor(index / 32) * 18;
    const j = index % 32;
    const byte = cache[block + 2 + (j % 16)]!;
    return readF16(cache as Uint8Array, block) * ((j < 16 ? byte & 15 : byte >> 4) - 8);
  }
  return cache instanceof Uint16Array ? f16ToF32(cache[index]!) : cache[index]!;
}

export function attention(
  out: Float32Array,
  q: Float32Array,
  layer: KvLayer,
  cache: KvCacheShape,
  batch: AttentionBatch,
  shape: AttentionShape,
): void {
  const { numHeads, numKvHeads, headDim, scale } = shape;
  const window = shape.window ?? 0;
  const cap = shape.softcap ?? 0;
  const inv = Math.fround(1 / cap);
  const groupSize = numHeads / numKvHeads;
  checkWholeBlocks(cache);
  const half = cache.dtype === 'f16'; // llama.cpp feeds q and the softmax weights to f16 K/V as f16
  const numSeqs = batch.seqStarts.length - 1;
  for (let s = 0; s < numSeqs; s++) {
    const table = batch.blockTables.subarray(s * batch.maxBlocksPerSeq, (s + 1) * batch.maxBlocksPerSeq);
    const slotOf = (pos: number): number => {
      const block = table[Math.floor(pos / cache.blockSize)];
      if (block === undefined || block < 0) throw new RangeError(`sequence ${s} has no block for position ${pos}`);
      return block * cache.blockSize + (pos % cache.blockSize);
    };
    for (let t = batch.seqStarts[s]!; t < batch.seqStarts[s + 1]!; t++) {
      const ctx = batch.positions[t]! + 1; // causal: positions first..p
      // the window reaches back from windowPositions[t] where given (a non-causal image span's own position)
      const from = batch.windowPositions ? batch.windowPositions[t]! + 1 : ctx;
      if (from > ctx || from < 1) throw new RangeError(`windowPositions[${t}] must be in [0, positions[${t}]]`);
      const first = Math.max(window > 0 ? Math.max(0, from - window) : 0, batch.firstPositions?.[t] ?? 0);
      if (first >= ctx || first < 0) throw new RangeError(`attention: firstPositions[${t}] ${batch.firstPositions?.[t]} outside 0..${ctx - 1}`);
      const scores = new Float32Array(ctx - first);
      for (let h = 0; h < numHeads; h++) {
        const qBase = (t * numHeads + h) * headDim;
        const kvHead = Math.floor(h / groupSize);
        for (let p = first; p < ctx; p++) {
          const kBase = kvRow(cache, slotOf(p), kvHead);
          let dot = 0;
          for (let i = 0; i < headDim; i++) {
            const qi = half ? roundToF16(q[qBase + i]!) : q[qBase + i]!;
            dot += qi * load(layer.k, kBase + i, cache.dtype);
          }
          const s = Math.fround(dot * scale);
          scores[p - first] = cap > 0 ? capScore(s, inv, cap) : s;
        }
        if (shape.sinks) softmaxWithSink(scores, ctx - first, shape.sinks[h]!);
        else softmax(scores, 1, ctx - first);
        for (let i = 0; i < headDim; i++) out[qBase + i] = 0;
        for (let p = first; p < ctx; p++) {
          const weight = half ? roundToF16(scores[p - first]!) : scores[p - first]!;
          const vBase = kvRow(cache, slotOf(p), kvHead);
          for (let i = 0; i < headDim; i++) out[qBase + i]! += weight * load(layer.v, vBase + i, cache.dtype);
        }
      }
    }
  }
}

