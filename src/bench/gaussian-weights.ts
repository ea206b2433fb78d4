// Seeded Gaussian weights for the bench files (make-model.ts, make-mmproj.ts): N(mean, std²)
// values from one sfc32 stream, quantized to a weight type a few million values at a time.
import { Rng } from '../engine/rng.js';
import { rowBytes } from '../tensor/weight-types.js';
import type { GGMLType } from '../tensor/weight-types.js';
import { quantize } from '../tensor/quant/quantize.js';

/**
 * A matrix of outF rows of inF N(0, std²) values in `type`, generated and quantized a few
 * million values at a time (Gemma 4's per-layer embedding has 2.3G): the values are those of
 * one pass over the seeded stream, since every chunk holds an even number of them.
 */
export function quantizedRows(type: GGMLType, inF: number, outF: number, std: number, seed: number): Uint8Array {
  const rng = new Rng(seed);
  const row = rowBytes(type, inF)!;
  const out = new Uint8Array(row * outF);
  const rows = Math.max(1, Math.floor(CHUNK_VALUES / inF));
  for (let r = 0; r < outF; r += rows) {
    const n = Math.min(rows, outF - r);
    out.set(quantize(type, gaussian(n * inF, std, 0, rng), inF), r * row);
  }
  return out;
}
const CHUNK_VALUES = 1 << 22;

/** n samples of mean + std·N(0, 1) (Box–Muller over sfc32), as f32 */
export function gaussian(n: number, std: number, mean: number, rng: Rng): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i += 2) {
    const r = std * Math.sqrt(-2 * Math.log(1 - rng.next()));
    const a = 2 * Math.PI * rng.next();
    out[i] = mean + r * Math.cos(a);
    if (i + 1 < n) out[i + 1] = mean + r * Math.sin(a);
  }
  return out;
}
