import { KV_BLOCK_BYTES, kvBytes } from '../kernels/index.js';
import type { KvCacheShape, KvDtype, KvLayer } from '../kernels/index.js';
import { allocateLarge } from '../kernels/native.js';
import { RecurrentState } from './recurrent-state.js';
import { layerAttention, ownsKv } from './weights.js';
import type { ModelConfig } from './weights.js';

/**
 * The paged KV cache: per layer, k and v of [numBlocks, blockSize, numKvHeads, headDim]
 * (heads and head size are the layer's own: Gemma 4's sliding-window layers differ from its
 * global ones). A model with sliding-window layers may give those layers a pool of their own
 * (`swaShape`, its own block ids and tables, see engine/swa-blocks.ts): they need only
 * their window's blocks per sequence, so the pool is much smaller than the global one.
 * A hybrid model's linear-attention layers keep no KV (empty arrays) but a per-sequence
 * `recurrent` state instead, indexed by the batch's state slots. Gemma 4's shared-KV layers
 * keep none either: their entry is the arrays of the layer they read (config.kvSource).
 */
export class KvCache {
  readonly layers: KvLayer[];
  /** [numLayers] whether layer i lives in the sliding-window pool */
  readonly inSwaPool: readonly boolean[];
  private readonly shapes: KvCacheShape[];
  /** [numLayers] whether layer i's arrays are its own (false: linear-attention or shared-KV layers) */
  private readonly owned: boolean[];

  constructor(
    readonly shape: KvCacheShape,
    readonly config: ModelConfig,
    /** the sliding-window pool: its shape and which layers use it */
    readonly swa?: { readonly shape: KvCacheShape; readonly layers: readonly boolean[] },
    /** a hybrid model's linear-layer state; its layers get no KV arrays */
    readonly recurrent?: RecurrentState,
  ) {
    const make = (s: KvCacheShape): Float32Array | Uint16Array | Uint8Array => {
      const bytes = kvBytes(s.dtype, s.numBlocks * s.blockSize * s.numKvHeads * s.headDim);
      // huge pages: a decode step reads scattered blocks of every layer's cache. Faulted in
      // now, as llama.cpp clears its cache at start: a server's first minutes would otherwise
      // pay a page fault on the first write of every block (5% of the standard scenario here).
      const buffer = allocateLarge(bytes, true);
      return KV_BLOCK_BYTES[s.dtype] !== undefined ? new Uint8Array(buffer) : s.dtype === 'f16' ? new Uint16Array(buffer) : new Float32Array(buffer);
    };
    const n = config.numLayers;
    this.inSwaPool = Array.from({ length: n }, (_, i) => swa?.layers[i] === true);
    this.shapes = this.inSwaPool.map((pooled, li) => {
      const { numKvHeads, headDim } = layerAttention(config, li);
      return { ...(pooled ? swa!.shape : shape), numKvHeads, headDim };
    });
    this.owned = Array.from({ length: n }, (_, li) => ownsKv(config, li));
    this.layers = [];
    for (let li = 0; li < n; li++) {
      const source = config.kvSource?.[li] ?? li;
      if (recurrent?.linear.layers[li]) this.layers.push({ k: new Float32Array(0), v: new Float32Array(0) });
      else if (source !== li) this.layers.push(this.layers[source]!);
      else this.layers.push({ k: make(this.shapes[li]!), v: make(this.shapes[li]!) });
    }
  }

  /** `swaBlocks` > 0 puts the model's sliding-window layers (if any) in a pool of that many blocks;
   *  `stateSlots`: recurrent-state slots of a hybrid model (at least one per running sequence) */
  static forModel(config: ModelConfig, numBlocks: number, blockSize = 16, dtype: KvDtype = 'f16', swaBlocks = 0, stateSlots = 1): KvCache {
    const shape = { dtype, numBlocks, blockSize, numKvHeads: config.numKvHeads, headDim: config.headDim };
    const sw = config.slidingWindow;
    const swa = sw && swaBlocks > 0 ? { shape: { ...shape, numBlocks: swaBlocks }, layers: sw.layers } : undefined;
    const recurrent = config.linearAttention ? new RecurrentState(config.linearAttention, stateSlots) : undefined;
    return new KvCache(shape, config, swa, recurrent);
  }

  /** the shape of layer li's cache (the sliding-window pool's for its layers, with the layer's own heads) */
  layerShape(li: number): KvCacheShape {
    return this.shapes[li]!;
  }

  /** bytes one token takes across the layers that keep KV of their own (every one holding the whole context);
   *  `which` narrows that to the sliding-window or the global layers */
  static bytesPerToken(config: ModelConfig, dtype: KvDtype, which?: 'sliding' | 'global'): number {
    let bytes = 0;
    for (let li = 0; li < config.numLayers; li++) {
      if (!ownsKv(config, li)) continue;
      const a = layerAttention(config, li);
      if (which !== undefined && a.sliding !== (which === 'sliding')) continue;
      bytes += 2 * kvBytes(dtype, a.numKvHeads * a.headDim);
    }
    return bytes;
  }

  /** Copies whole blocks (k and v) for copy-on-write of shared blocks: `ops` in the global
   *  pool's layers, `swaOps` in the sliding-window pool's. */
  copyBlocks(ops: readonly { src: number; dst: number }[], swaOps: readonly { src: number; dst: number }[] = []): void {
    this.layers.forEach((layer, li) => {
      if (!this.owned[li]) return;
      const s = this.shapes[li]!;
      // a block in the arrays' own elements (bytes for q8_0/q4_0: a block's rows are whole quant blocks)
      const values = s.blockSize * s.numKvHeads * s.headDim;
      const blockElems = KV_BLOCK_BYTES[s.dtype] !== undefined ? kvBytes(s.dtype, values) : values;
      for (const { src, dst } of this.inSwaPool[li] ? swaOps : ops) {
        for (const cache of [layer.k, layer.v]) cache.copyWithin(dst * blockElems, src * blockElems, (src + 1) * blockElems);
      }
    });
  }

  /** Views of block b's bytes in the global pool: k then v of every layer keeping its own, in layer
   *  order (what a saved prefix block holds; writing into them restores it). */
  blockBytes(b: number): Uint8Array[] {
    const views: Uint8Array[] = [];
    this.layers.forEach((layer, li) => {
      if (!this.owned[li] || this.inSwaPool[li]) return;
      const s = this.shapes[li]!;
      const bytes = kvBytes(s.dtype, s.blockSize * s.numKvHeads * s.headDim);
      for (const cache of [layer.k, layer.v]) views.push(new Uint8Array(cache.buffer, cache.byteOffset + b * bytes, bytes));
    });
    return views;
  }

  /** bytes the KV arrays take (every layer that keeps its own, both pools; not the recurrent state) */
  get bytes(): number {
    return this.layers.reduce((sum, layer, li) => sum + (this.owned[li] ? layer.k.byteLength + layer.v.byteLength : 0), 0);
  }

  get numSlots(): number {
    return this.shape.numBlocks * this.shape.blockSize;
  }
}
