// Random quantized blocks written directly, for whole-size benchmark files: quantizing random
// floats in TypeScript takes hours for 12 GB (gpt-oss-20b MXFP4), while a block's bytes can be
// drawn at random and only its scale fields set. The random bytes are an AES-128-CTR keystream
// of the seed (seeded, several GB/s); then per block the scale (f16 d, K-quants' dmin, MXFP4's
// E8M0 exponent) is set so the values have the requested RMS, measured once per type by
// dequantizing a sample with unit scales. The values are not Gaussian (uniform codes, and the
// K-quants' random 6-bit sub-block scales and mins), which a speed benchmark does not mind;
// every value is finite. Types without a row here (F16, F32, …) return undefined: the caller
// quantizes floats as before.
import { createCipheriv, createHash } from 'node:crypto';
import { writeF16 } from '../tensor/half.js';
import { dequantizeRow } from '../tensor/quant/dequantize.js';
import { GGMLType, weightType } from '../tensor/weight-types.js';

interface BlockSpec {
  readonly values: number;
  readonly bytes: number;
  /** f16 scale fields: byte offset in the block and its value per unit of scale (a K-quant's dmin centres its codes) */
  readonly scales: readonly (readonly [offset: number, unit: number])[];
  /** Q8_0: no −128 codes (ggml's quantizer never writes them) */
  readonly noMinus128?: boolean;
}

const SPECS: ReadonlyMap<GGMLType, BlockSpec> = new Map<GGMLType, BlockSpec>([
  [GGMLType.Q8_0, { values: 32, bytes: 34, scales: [[0, 1]], noMinus128: true }],
  [GGMLType.Q4_0, { values: 32, bytes: 18, scales: [[0, 1]] }],
  [GGMLType.Q5_0, { values: 32, bytes: 22, scales: [[0, 1]] }],
  // x = d·q + m, q in 0..31: m = −15.5·d centres it
  [GGMLType.Q5_1, { values: 32, bytes: 24, scales: [[0, 1], [2, -15.5]] }],
  // x = d·sc·q − dmin·m with sc, m in 0..63: dmin = mean(q)·d centres it on average
  [GGMLType.Q4_K, { values: 256, bytes: 144, scales: [[0, 1], [2, 7.5]] }],
  [GGMLType.Q5_K, { values: 256, bytes: 176, scales: [[0, 1], [2, 15.5]] }],
  [GGMLType.Q6_K, { values: 256, bytes: 210, scales: [[208, 1]] }],
  // MXFP4's scale is its first byte, an E8M0 exponent (set below, not an f16)
  [GGMLType.MXFP4, { values: 32, bytes: 17, scales: [] }],
]);

/** whether randomBlockRows writes this type directly */
export function hasRandomBlocks(type: GGMLType): boolean {
  return SPECS.has(type);
}

/** bytes per chunk handed to the writer: whole blocks, a few MB */
const CHUNK_BLOCKS = 1 << 16;

/** A seeded keystream: the same seed gives the same bytes, chunk after chunk. */
function keystream(seed: number): (n: number) => Buffer {
  const key = createHash('sha256').update(`loom bench random blocks ${seed}`).digest().subarray(0, 16);
  const cipher = createCipheriv('aes-128-ctr', key, Buffer.alloc(16));
  let zeros = Buffer.alloc(0);
  return (n) => {
    if (zeros.length < n) zeros = Buffer.alloc(n);
    return cipher.update(zeros.subarray(0, n));
  };
}

/** MXFP4: exponent = base − (a random bit), so blocks differ in scale as real ones do */
function setMXFP4Exponents(buf: Uint8Array, blocks: number, base: number): void {
  for (let b = 0, p = 0; b < blocks; b++, p += 17) buf[p] = Math.min(254, Math.max(1, base - (buf[p]! & 1)));
}

function setScales(buf: Uint8Array, blocks: number, spec: BlockSpec, scale: number): void {
  if (spec.noMinus128) for (let i = 0; i < buf.length; i++) if (buf[i] === 0x80) buf[i] = 0x81;
  const fields = spec.scales.map(([offset, unit]) => {
    const half = new Uint8Array(2);
    writeF16(half, 0, unit * scale);
    return [offset, half[0]!, half[1]!] as const;
  });
  for (let b = 0, p = 0; b < blocks; b++, p += spec.bytes) {
    for (const [offset, lo, hi] of fields) {
      buf[p + offset] = lo;
      buf[p + offset + 1] = hi;
    }
  }
}

const unitRms = new Map<GGMLType, number>();

/** The RMS of the type's random blocks at unit scale (MXFP4: at exponent 128), from a fixed sample. */
function rmsAtUnitScale(type: GGMLType, spec: BlockSpec): number {
  const known = unitRms.get(type);
  if (known !== undefined) return known;
  const blocks = 256;
  const buf = keystream(0x5eed)(blocks * spec.bytes);
  if (type === GGMLType.MXFP4) setMXFP4Exponents(buf, blocks, 128);
  else setScales(buf, blocks, spec, 1);
  const out = new Float32Array(blocks * spec.values);
  dequantizeRow(type, buf, 0, out.length, out, 0);
  let sum = 0;
  for (const x of out) sum += x * x;
  const rms = Math.sqrt(sum / out.length);
  unitRms.set(type, rms);
  return rms;
}

/**
 * `rows` rows of `rowLength` values in `type` whose values have RMS ≈ `std`, as chunks of whole
 * blocks (a few MB each, so a tensor of any size streams to disk in bounded memory); undefined
 * for a type this cannot draw directly.
 */
export function randomBlockRows(type: GGMLType, rowLength: number, rows: number, std: number, seed: number): Iterable<Uint8Array> | undefined {
  const spec = SPECS.get(type);
  if (!spec || rowLength % spec.values !== 0 || !weightType(type)) return undefined;
  const rms = rmsAtUnitScale(type, spec);
  const total = (rowLength / spec.values) * rows;
  return {
    *[Symbol.iterator]() {
      const next = keystream(seed);
      for (let done = 0; done < total; done += CHUNK_BLOCKS) {
        const blocks = Math.min(CHUNK_BLOCKS, total - done);
        const buf = next(blocks * spec.bytes);
        if (type === GGMLType.MXFP4) setMXFP4Exponents(buf, blocks, 128 + Math.round(Math.log2(std / rms)));
        else setScales(buf, blocks, spec, std / rms);
        yield buf;
      }
    },
  };
}
