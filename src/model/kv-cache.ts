import type { KvCacheShape, KvDtype, KvLayer } from '../kernels/index.js';
import type { ModelConfig } from './weights.js';

/** The paged KV cache: per layer, k and v of [numBlocks, blockSize, numKvHeads, headDim]. */
export class KvCache {
  readonly layers: KvLayer[];

  constructor(readonly shape: KvCacheShape, numLayers: number) {
    const size = shape.numBlocks * shape.blockSize * shape.numKvHeads * shape.headDim;
    const make = (): Float32Array | Uint16Array => (shape.dtype === 'f16' ? new Uint16Array(size) : new Float32Array(size));
    this.layers = Array.from({ length: numLayers }, () => ({ k: make(), v: make() }));
  }

  static forModel(config: ModelConfig, numBlocks: number, blockSize = 16, dtype: KvDtype = 'f16'): KvCache {
    return new KvCache({ dtype, numBlocks, blockSize, numKvHeads: config.numKvHeads, headDim: config.headDim }, config.numLayers);
  }

  /** bytes one token takes across all layers */
  static bytesPerToken(config: ModelConfig, dtype: KvDtype): number {
    return 2 * config.numLayers * config.numKvHeads * config.headDim * (dtype === 'f16' ? 2 : 4);
  }

  /** Copies whole blocks (every layer's k and v), for copy-on-write of shared blocks. */
  copyBlocks(ops: readonly { src: number; dst: number }[]): void {
    const blockValues = this.shape.blockSize * this.shape.numKvHeads * this.shape.headDim;
    for (const layer of this.layers) {
      for (const { src, dst } of ops) {
        for (const cache of [layer.k, layer.v]) cache.copyWithin(dst * blockValues, src * blockValues, (src + 1) * blockValues);
      }
    }
  }

  get numSlots(): number {
    return this.shape.numBlocks * this.shape.blockSize;
  }
}
