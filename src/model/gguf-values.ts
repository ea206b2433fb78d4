// GGUF's little-endian values as the reader (gguf.ts) meets them in a file's header: the value
// types, a cursor reading through a window over a file descriptor (files may exceed Buffer
// limits), and one typed value (arrays nested, counts and lengths checked against corruption).
import { readSync } from 'node:fs';
import type { GGUFValue } from './gguf-metadata.js';

export enum GGUFValueType {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
}

export const GGUF_MAGIC = 0x46554747; // "GGUF" read as a little-endian u32
export const GGUF_DEFAULT_ALIGNMENT = 32;
export const MAX_COUNT = 2 ** 32; // tensor/kv/array counts above this are corruption, not data
const MAX_STRING = 2 ** 29; // about Node's longest string
const MAX_NESTING = 8;
const CHUNK = 1 << 20;

/** Sequential little-endian reads through a 1 MiB window over a file descriptor. */
export class Cursor {
  pos = 0;
  /** what is being read, for truncation messages ("metadata key X") */
  what = 'the header';
  private buf = Buffer.alloc(CHUNK);
  private bufStart = 0;
  private bufLen = 0;

  constructor(
    private readonly fd: number,
    readonly fileSize: number,
    readonly fail: (problem: string) => never,
  ) {}

  /** makes n bytes at pos available; returns their index in buf and advances pos */
  take(n: number): number {
    if (this.pos + n > this.fileSize) this.fail(`file is truncated while reading ${this.what}`);
    if (this.pos < this.bufStart || this.pos + n > this.bufStart + this.bufLen) {
      if (n > this.buf.length) this.buf = Buffer.alloc(n);
      const want = Math.min(this.buf.length, this.fileSize - this.pos);
      let got = 0;
      while (got < want) {
        const r = readSync(this.fd, this.buf, got, want - got, this.pos + got);
        if (r === 0) break;
        got += r;
      }
      if (got < n) this.fail(`file is truncated while reading ${this.what}`);
      this.bufStart = this.pos;
      this.bufLen = got;
    }
    const at = this.pos - this.bufStart;
    this.pos += n;
    return at;
  }

  u8(): number { return this.buf.readUInt8(this.take(1)); }
  i8(): number { return this.buf.readInt8(this.take(1)); }
  u16(): number { return this.buf.readUInt16LE(this.take(2)); }
  i16(): number { return this.buf.readInt16LE(this.take(2)); }
  u32(): number { return this.buf.readUInt32LE(this.take(4)); }
  i32(): number { return this.buf.readInt32LE(this.take(4)); }
  f32(): number { return this.buf.readFloatLE(this.take(4)); }
  f64(): number { return this.buf.readDoubleLE(this.take(8)); }
  u64(): bigint { return this.buf.readBigUInt64LE(this.take(8)); }
  i64(): bigint { return this.buf.readBigInt64LE(this.take(8)); }

  /** a u64 count or size that must stay below `limit` (else the file is corrupt) */
  count(label: string, limit: number): number {
    const v = this.u64();
    if (v > BigInt(limit)) this.fail(`file is corrupt: ${label} ${v} is absurd (limit ${limit})`);
    return Number(v);
  }

  string(label: string): string {
    const len = this.count(`${label} length`, MAX_STRING);
    if (len === 0) return '';
    const at = this.take(len);
    return this.buf.toString('utf8', at, at + len);
  }
}

const int64Value = (v: bigint): number | bigint =>
  v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(v) : v;

export function readValue(c: Cursor, type: number, depth: number): GGUFValue {
  switch (type) {
    case GGUFValueType.UINT8: return c.u8();
    case GGUFValueType.INT8: return c.i8();
    case GGUFValueType.UINT16: return c.u16();
    case GGUFValueType.INT16: return c.i16();
    case GGUFValueType.UINT32: return c.u32();
    case GGUFValueType.INT32: return c.i32();
    case GGUFValueType.FLOAT32: return c.f32();
    case GGUFValueType.BOOL: return c.u8() !== 0;
    case GGUFValueType.STRING: return c.string('string');
    case GGUFValueType.UINT64: return int64Value(c.u64());
    case GGUFValueType.INT64: return int64Value(c.i64());
    case GGUFValueType.FLOAT64: return c.f64();
    case GGUFValueType.ARRAY: {
      if (depth >= MAX_NESTING) c.fail(`file is corrupt: arrays nested deeper than ${MAX_NESTING} in ${c.what}`);
      const itemType = c.u32();
      const n = c.count('array length', MAX_COUNT);
      const items: GGUFValue[] = [];
      for (let i = 0; i < n; i++) items.push(readValue(c, itemType, depth + 1));
      if (n === 0 && !(itemType in GGUFValueType)) c.fail(`file is corrupt: unknown value type ${itemType} in ${c.what}`);
      return items;
    }
    default:
      return c.fail(`file is corrupt: unknown value type ${type} in ${c.what}`);
  }
}
