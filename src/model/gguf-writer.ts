// GGUF writer (layout in gguf.ts). Every metadata value carries its GGUF type explicitly.
// Output as llama.cpp writes it: data section starts at a multiple of the alignment, each
// tensor's offset is a multiple of it, each tensor's bytes are zero-padded to it, and
// general.alignment (u32) is written when the alignment is not the default 32.
import { closeSync, openSync, writeSync } from 'node:fs';
import { InvalidArgumentError } from '../errors.js';
import { rowBytes, typeName } from '../tensor/weight-types.js';
import type { GGMLType } from '../tensor/weight-types.js';
import { GGUFValueType, GGUF_DEFAULT_ALIGNMENT, GGUF_MAGIC } from './gguf-values.js';

export { GGUFValueType } from './gguf-values.js';

type Scalar = number | bigint | boolean | string;

/** An array value with its item type; items of an ARRAY-typed array are themselves GGUFTypedArray. */
export interface GGUFTypedArray {
  readonly itemType: GGUFValueType;
  readonly items: readonly (Scalar | GGUFTypedArray)[];
}

export type GGUFEntry =
  | { readonly key: string; readonly type: Exclude<GGUFValueType, GGUFValueType.ARRAY>; readonly value: Scalar }
  | ({ readonly key: string; readonly type: GGUFValueType.ARRAY } & GGUFTypedArray);

export interface GGUFTensorSpec {
  readonly name: string;
  readonly type: GGMLType;
  /** ggml order: dims[0] contiguous */
  readonly dims: readonly number[];
  readonly data: Uint8Array;
}

export interface GGUFWriteSpec {
  readonly version?: 2 | 3;
  readonly alignment?: number;
  readonly metadata: readonly GGUFEntry[];
  readonly tensors: readonly GGUFTensorSpec[];
}

type S = Exclude<GGUFValueType, GGUFValueType.ARRAY>;
const scalar = (type: S) => (key: string, value: Scalar): GGUFEntry => ({ key, type, value });

/** Entry constructors: kv.u32('llama.block_count', 2), kv.arr(GGUFValueType.STRING, key, tokens) */
export const kv = {
  u8: scalar(GGUFValueType.UINT8) as (key: string, value: number) => GGUFEntry,
  i8: scalar(GGUFValueType.INT8) as (key: string, value: number) => GGUFEntry,
  u16: scalar(GGUFValueType.UINT16) as (key: string, value: number) => GGUFEntry,
  i16: scalar(GGUFValueType.INT16) as (key: string, value: number) => GGUFEntry,
  u32: scalar(GGUFValueType.UINT32) as (key: string, value: number) => GGUFEntry,
  i32: scalar(GGUFValueType.INT32) as (key: string, value: number) => GGUFEntry,
  f32: scalar(GGUFValueType.FLOAT32) as (key: string, value: number) => GGUFEntry,
  bool: scalar(GGUFValueType.BOOL) as (key: string, value: boolean) => GGUFEntry,
  str: scalar(GGUFValueType.STRING) as (key: string, value: string) => GGUFEntry,
  u64: scalar(GGUFValueType.UINT64) as (key: string, value: number | bigint) => GGUFEntry,
  i64: scalar(GGUFValueType.INT64) as (key: string, value: number | bigint) => GGUFEntry,
  f64: scalar(GGUFValueType.FLOAT64) as (key: string, value: number) => GGUFEntry,
  arr: (itemType: GGUFValueType, key: string, items: readonly (Scalar | GGUFTypedArray)[]): GGUFEntry => ({
    key, type: GGUFValueType.ARRAY, itemType, items,
  }),
  /** an array to put inside an ARRAY-of-ARRAY entry */
  nested: (itemType: GGUFValueType, items: readonly (Scalar | GGUFTypedArray)[]): GGUFTypedArray => ({ itemType, items }),
};

/** Growable little-endian byte sink for the header. */
class Sink {
  buf = Buffer.alloc(1 << 16);
  len = 0;
  private room(n: number): number {
    if (this.len + n > this.buf.length) {
      const next = Buffer.alloc(Math.max(this.buf.length * 2, this.len + n));
      this.buf.copy(next, 0, 0, this.len);
      this.buf = next;
    }
    const at = this.len;
    this.len += n;
    return at;
  }
  // room() may replace this.buf, so it runs before the buffer is read
  private put(n: number, write: (buf: Buffer, at: number) => void): void {
    const at = this.room(n);
    write(this.buf, at);
  }
  u8(v: number): void { this.put(1, (b, at) => b.writeUInt8(v, at)); }
  i8(v: number): void { this.put(1, (b, at) => b.writeInt8(v, at)); }
  u16(v: number): void { this.put(2, (b, at) => b.writeUInt16LE(v, at)); }
  i16(v: number): void { this.put(2, (b, at) => b.writeInt16LE(v, at)); }
  u32(v: number): void { this.put(4, (b, at) => b.writeUInt32LE(v, at)); }
  i32(v: number): void { this.put(4, (b, at) => b.writeInt32LE(v, at)); }
  f32(v: number): void { this.put(4, (b, at) => b.writeFloatLE(v, at)); }
  f64(v: number): void { this.put(8, (b, at) => b.writeDoubleLE(v, at)); }
  u64(v: number | bigint): void { this.put(8, (b, at) => b.writeBigUInt64LE(BigInt(v), at)); }
  i64(v: number | bigint): void { this.put(8, (b, at) => b.writeBigInt64LE(BigInt(v), at)); }
  str(s: string): void {
    const bytes = Buffer.from(s, 'utf8');
    this.u64(bytes.length);
    this.put(bytes.length, (b, at) => bytes.copy(b, at));
  }
  pad(alignment: number): void {
    const n = (alignment - (this.len % alignment)) % alignment;
    this.put(n, (b, at) => b.fill(0, at, at + n));
  }
}

function bad(key: string, problem: string): never {
  throw new InvalidArgumentError(`GGUF metadata ${key}: ${problem}`);
}

function writeValue(s: Sink, key: string, type: GGUFValueType, v: Scalar | GGUFTypedArray): void {
  const num = (): number => (typeof v === 'number' ? v : bad(key, `expected a number for ${GGUFValueType[type]}, got ${String(v)}`));
  const int = (): number => (Number.isInteger(num()) ? (v as number) : bad(key, `${String(v)} is not an integer`));
  const big = (): number | bigint => (typeof v === 'bigint' ? v : int());
  try {
    switch (type) {
      case GGUFValueType.UINT8: return s.u8(int());
      case GGUFValueType.INT8: return s.i8(int());
      case GGUFValueType.UINT16: return s.u16(int());
      case GGUFValueType.INT16: return s.i16(int());
      case GGUFValueType.UINT32: return s.u32(int());
      case GGUFValueType.INT32: return s.i32(int());
      case GGUFValueType.FLOAT32: return s.f32(num());
      case GGUFValueType.FLOAT64: return s.f64(num());
      case GGUFValueType.UINT64: return s.u64(big());
      case GGUFValueType.INT64: return s.i64(big());
      case GGUFValueType.BOOL: return s.u8(typeof v === 'boolean' ? Number(v) : bad(key, `expected a boolean, got ${String(v)}`));
      case GGUFValueType.STRING: return s.str(typeof v === 'string' ? v : bad(key, `expected a string, got ${String(v)}`));
      case GGUFValueType.ARRAY: {
        if (typeof v !== 'object') bad(key, `expected an array, got ${String(v)}`);
        s.u32(v.itemType);
        s.u64(v.items.length);
        for (const item of v.items) writeValue(s, key, v.itemType, item);
        return;
      }
      default: bad(key, `unknown value type ${String(type)}`);
    }
  } catch (e) {
    if (e instanceof RangeError) bad(key, `${String(v)} does not fit ${GGUFValueType[type]}`);
    throw e;
  }
}

/** Writes a GGUF file (version 3 and alignment 32 unless given). */
export function writeGGUF(path: string, spec: GGUFWriteSpec): void {
  const version = spec.version ?? 3;
  const alignment = spec.alignment ?? GGUF_DEFAULT_ALIGNMENT;
  if (!Number.isInteger(alignment) || alignment <= 0 || (alignment & (alignment - 1)) !== 0) {
    throw new InvalidArgumentError(`GGUF alignment ${alignment} is not a power of two`);
  }
  const metadata = [...spec.metadata];
  const given = metadata.find((e) => e.key === 'general.alignment');
  if (given && !(given.type === GGUFValueType.UINT32 && given.value === alignment)) {
    throw new InvalidArgumentError(`general.alignment must be a u32 equal to the alignment ${alignment}`);
  }
  if (!given && alignment !== GGUF_DEFAULT_ALIGNMENT) metadata.push(kv.u32('general.alignment', alignment));
  const keys = new Set<string>();
  for (const e of metadata) {
    if (keys.has(e.key)) bad(e.key, 'given twice');
    keys.add(e.key);
  }

  const s = new Sink();
  s.u32(GGUF_MAGIC);
  s.u32(version);
  s.u64(spec.tensors.length);
  s.u64(metadata.length);
  for (const e of metadata) {
    s.str(e.key);
    s.u32(e.type);
    writeValue(s, e.key, e.type, e.type === GGUFValueType.ARRAY ? { itemType: e.itemType, items: e.items } : e.value);
  }
  let offset = 0;
  const names = new Set<string>();
  for (const t of spec.tensors) {
    const n = t.dims.reduce((a, b) => a * b, 1);
    const want = rowBytes(t.type, t.dims[0] ?? 1);
    if (names.has(t.name)) throw new InvalidArgumentError(`GGUF tensor ${t.name} given twice`);
    names.add(t.name);
    if (want === undefined || want * (n / (t.dims[0] ?? 1)) !== t.data.length) {
      throw new InvalidArgumentError(`GGUF tensor ${t.name}: ${typeName(t.type)} [${t.dims.join(', ')}] needs ${want === undefined ? 'whole blocks' : want * (n / (t.dims[0] ?? 1)) + ' bytes'}, got ${t.data.length} bytes`);
    }
    s.str(t.name);
    s.u32(t.dims.length);
    for (const d of t.dims) s.u64(d);
    s.u32(t.type);
    s.u64(offset);
    offset += Math.ceil(t.data.length / alignment) * alignment;
  }
  s.pad(alignment);

  const fd = openSync(path, 'w');
  try {
    writeAll(fd, s.buf.subarray(0, s.len));
    const zeros = new Uint8Array(alignment);
    for (const t of spec.tensors) {
      writeAll(fd, t.data);
      const pad = (alignment - (t.data.length % alignment)) % alignment;
      if (pad > 0) writeAll(fd, zeros.subarray(0, pad));
    }
  } finally {
    closeSync(fd);
  }
}

function writeAll(fd: number, bytes: Uint8Array): void {
  let done = 0;
  while (done < bytes.length) done += writeSync(fd, bytes, done, bytes.length - done);
}
