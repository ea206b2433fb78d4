import type { KvCacheShape, KvDtype, KvLayer } from '../kernels/index.js';
import { RecurrentState } from './recurrent-state.js';
import { attentionLayerCount } from './weights.js';
import type { ModelConfig } from './weights.js';

/**
 * The paged KV cache: per layer, k and v of [numBlocks, blockSize, numKvHeads, headDim].
 * A model with sliding-window layers may give those layers a pool of their own
 * (`swaShape`, its own block ids and tables, see engine/swa-blocks.ts): they need only
 * their window's blocks per sequence, so the pool is much smaller than the global one.
 * A hybrid model's linear-attention layers keep no KV (empty arrays) but a per-sequence
 * `recurrent` state instead, indexed by the batch's state slots.
 */
export class KvCache {
  readonly layers: KvLayer[];
  /** [numLayers] whether layer i lives in the sliding-window pool */
  readonly inSwaPool: readonly boolean[];

  constructor(
    readonly shape: KvCacheShape,
    numLayers: number,
    /** the sliding-window pool: its shape and which layers use it */
    readonly swa?: { readonly shape: KvCacheShape; readonly layers: readonly boolean[] },
    /** a hybrid model's linear-layer state; its layers get no KV arrays */
    readonly recurrent?: RecurrentState,
  ) {
    const make = (s: KvCacheShape): Float32Array | Uint16Array => {
      const size = s.numBlocks * s.blockSize * s.numKvHeads * s.headDim;
      return s.dtype === 'f16' ? new Uint16Array(size) : new Float32Array(size);
    };
    this.inSwaPool = Array.from({ length: numLayers }, (_, i) => swa?.layers[i] === true);
    this.layers = this.inSwaPool.map((pooled, li) => {
      if (recurrent?.linear.layers[li]) return { k: new Float32Array(0), v: new Float32Array(0) };
      const s = pooled ? swa!.shape : shape;
      return { k: make(s), v: make(s) };
    });
  }

  /** `swaBlocks` > 0 puts the model's sliding-window layers (if any) in a pool of that many blocks;
   *  `stateSlots`: recurrent-state slots of a hybrid model (at least one per running sequence) */
  static forModel(config: ModelConfig, numBlocks: number, blockSize = 16, dtype: KvDtype = 'f16', swaBlocks = 0, stateSlots = 1): KvCache {
    const shape = { dtype, numBlocks, blockSize, numKvHeads: config.numKvHeads, headDim: config.headDim };
    const sw = config.slidingWindow;
    const swa = sw && swaBlocks > 0 ? { shape: { ...shape, numBlocks: swaBlocks }, layers: sw.layers } : undefined;
    const recurrent = config.linearAttention ? new RecurrentState(config.linearAttention, stateSlots) : undefined;
    return new KvCache(shape, config.numLayers, swa, recurrent);
  }

  /** the shape of layer li's cache (the sliding-window pool's for its layers) */
  layerShape(li: number): KvCacheShape {
    return this.inSwaPool[li] ? this.swa!.shape : this.shape;
  }

  /** bytes one token takes across all attention layers (every one holding the whole context) */
  static bytesPerToken(config: ModelConfig, dtype: KvDtype): number {
    return KvCache.bytesPerLayerToken(config, dtype) * attentionLayerCount(config);
  }

  /** bytes one token takes in one layer */
  static bytesPerLayerToken(config: ModelConfig, dtype: KvDtype): number {
    return 2 * config.numKvHeads * config.headDim * (dtype === 'f16' ? 2 : 4);
  }

  /** Copies whole blocks (k and v) for copy-on-write of shared blocks: `ops` in the global
   *  pool's layers, `swaOps` in the sliding-window pool's. */
  copyBlocks(ops: readonly { src: number; dst: number }[], swaOps: readonly { src: number; dst: number }[] = []): void {
    const blockValues = this.shape.blockSize * this.shape.numKvHeads * this.shape.headDim;
    this.layers.forEach((layer, li) => {
      if (layer.k.length === 0) return;
      for (const { src, dst } of this.inSwaPool[li] ? swaOps : ops) {
        for (const cache of [layer.k, layer.v]) cache.copyWithin(dst * blockValues, src * blockValues, (src + 1) * blockValues);
      }
    });
  }

  get numSlots(): number {
    return this.shape.numBlocks * this.shape.blockSize;
  }
}
