// The float weight types' rows of values (F32, F16, BF16: little-endian, one value a "block"),
// as the weight type table (weight-types.ts) calls them: dequantize n values at src[p..) into
// out[y..), quantize x[xo..xo+n) into dst[o..). F16/BF16 round to nearest even.
import { bf16ToF32, f16ToF32, f32ToBF16, f32ToF16 } from '../half.js';

export function dequantizeF32(src: Uint8Array, p: number, n: number, out: Float32Array, y: number): void {
  const dv = new DataView(src.buffer, src.byteOffset + p, 4 * n);
  for (let i = 0; i < n; i++) out[y + i] = dv.getFloat32(4 * i, true);
}

export function quantizeF32(x: Float32Array, xo: number, n: number, dst: Uint8Array, o: number): void {
  const dv = new DataView(dst.buffer, dst.byteOffset + o, 4 * n);
  for (let i = 0; i < n; i++) dv.setFloat32(4 * i, x[xo + i]!, true);
}

export function dequantizeF16(src: Uint8Array, p: number, n: number, out: Float32Array, y: number): void {
  for (let i = 0; i < n; i++) out[y + i] = f16ToF32(src[p + 2 * i]! | (src[p + 2 * i + 1]! << 8));
}

export function quantizeF16(x: Float32Array, xo: number, n: number, dst: Uint8Array, o: number): void {
  for (let i = 0; i < n; i++) {
    const h = f32ToF16(x[xo + i]!);
    dst[o + 2 * i] = h & 0xff;
    dst[o + 2 * i + 1] = h >>> 8;
  }
}

export function dequantizeBF16(src: Uint8Array, p: number, n: number, out: Float32Array, y: number): void {
  for (let i = 0; i < n; i++) out[y + i] = bf16ToF32(src[p + 2 * i]! | (src[p + 2 * i + 1]! << 8));
}

export function quantizeBF16(x: Float32Array, xo: number, n: number, dst: Uint8Array, o: number): void {
  for (let i = 0; i < n; i++) {
    const h = f32ToBF16(x[xo + i]!);
    dst[o + 2 * i] = h & 0xff;
    dst[o + 2 * i + 1] = h >>> 8;
  }
}
