// Safetensors reader. File layout: [u64 LE header length N][N bytes of JSON header][data].
// The header maps tensor names to {dtype, shape (row-major, outermost first), data_offsets
// [begin, end) relative to the start of data}; `__metadata__` is an optional string map.
// Only the header is read at open (every tensor's range checked against the file's size);
// each tensor's bytes are served when first asked for: in place where `inPlace` offers a view
// of the mapped file, else read.
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { ModelFormatError, UnsupportedModelError } from '../errors.js';
import { GGMLType } from '../tensor/weight-types.js';
import type { WeightTensor } from '../tensor/weight-tensor.js';
import type { InPlaceBytes } from './model-memory.js';

/** dtypes loom computes with, and their ggml types */
const GGML_OF: Readonly<Record<string, GGMLType>> = { F32: GGMLType.F32, F16: GGMLType.F16, BF16: GGMLType.BF16 };

/** bytes per element of every fixed-width safetensors dtype, to check spans of tensors we never read */
const DTYPE_SIZE: Readonly<Record<string, number>> = {
  BOOL: 1, U8: 1, I8: 1, F8_E5M2: 1, F8_E4M3: 1, F8_E8M0: 1,
  I16: 2, U16: 2, F16: 2, BF16: 2,
  I32: 4, U32: 4, F32: 4,
  I64: 8, U64: 8, F64: 8,
};

/** larger headers are refused as corrupt (the reference implementation's limit too) */
const MAX_HEADER_BYTES = 100_000_000;

/** One tensor entry of the header, with offsets made absolute within the file. */
export interface SafetensorsEntry {
  readonly name: string;
  readonly dtype: string;
  /** row-major, outermost first (PyTorch order) */
  readonly shape: readonly number[];
  /** absolute byte range [begin, end) in the file */
  readonly begin: number;
  readonly end: number;
}

export interface ReadOptions {
  /** keep the bytes for later calls (default true) */
  readonly cache?: boolean;
  /** read a dtype loom does not compute with as plain bytes (gpt-oss's U8 MXFP4 blocks and scales) */
  readonly anyDtype?: boolean;
}

/** An opened safetensors file: header parsed, data read lazily. */
export interface SafetensorsFile {
  readonly path: string;
  readonly metadata: Readonly<Record<string, string>>;
  /** bytes read from disk so far (header and tensor data) */
  readonly bytesRead: number;
  names(): string[];
  has(name: string): boolean;
  entry(name: string): SafetensorsEntry | undefined;
  /** the tensor's raw bytes (a view of the mapped file, or an owned, 8-byte aligned buffer); throws if absent */
  read(name: string, options?: ReadOptions): Uint8Array;
  /** the tensor as loom sees it: ggml dims (shape reversed), bytes in the file's dtype */
  tensor(name: string, options?: ReadOptions): WeightTensor;
}

export function openSafetensors(path: string, inPlace?: InPlaceBytes): SafetensorsFile {
  return SafetensorsReader.open(path, inPlace);
}

/** ggml type of a safetensors dtype loom can compute with; UnsupportedModelError otherwise */
export function ggmlTypeOf(file: string, entry: SafetensorsEntry): GGMLType {
  const type = GGML_OF[entry.dtype];
  if (type === undefined) {
    throw new UnsupportedModelError(
      file,
      `tensor ${entry.name} has dtype ${entry.dtype}; loom reads only F32, F16 and BF16 safetensors`,
    );
  }
  return type;
}

class SafetensorsReader implements SafetensorsFile {
  private readRaw = 0;
  private readonly cache = new Map<string, Uint8Array>();

  private constructor(
    readonly path: string,
    readonly metadata: Readonly<Record<string, string>>,
    private readonly entries: ReadonlyMap<string, SafetensorsEntry>,
    headerBytes: number,
    private readonly fileSize: number,
    private readonly inPlace: InPlaceBytes | undefined,
  ) {
    this.readRaw = headerBytes;
  }

  static open(path: string, inPlace?: InPlaceBytes): SafetensorsReader {
    const fd = openFile(path);
    try {
      const fileSize = fstatSync(fd).size;
      if (fileSize < 8) throw new ModelFormatError(path, `file is truncated: ${fileSize} bytes, less than the 8-byte header length`);
      const lenBytes = readExactly(fd, path, 0, 8);
      const headerLen = new DataView(lenBytes.buffer).getBigUint64(0, true);
      if (headerLen > BigInt(MAX_HEADER_BYTES)) {
        throw new ModelFormatError(path, `header length ${headerLen} is absurd (limit ${MAX_HEADER_BYTES}); not a safetensors file?`);
      }
      const n = Number(headerLen);
      if (8 + n > fileSize) {
        throw new ModelFormatError(path, `header length ${n} goes beyond the file (${fileSize} bytes); truncated or not a safetensors file`);
      }
      const text = new TextDecoder('utf-8').decode(readExactly(fd, path, 8, n));
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch (e) {
        throw new ModelFormatError(path, `header is not valid JSON (${(e as Error).message})`);
      }
      const { metadata, entries } = parseHeader(path, json, 8 + n, fileSize);
      return new SafetensorsReader(path, metadata, entries, 8 + n, fileSize, inPlace);
    } finally {
      closeSync(fd);
    }
  }

  get bytesRead(): number {
    return this.readRaw;
  }

  names(): string[] {
    return [...this.entries.keys()];
  }

  has(name: string): boolean {
    return this.entries.has(name);
  }

  entry(name: string): SafetensorsEntry | undefined {
    return this.entries.get(name);
  }

  read(name: string, options?: ReadOptions): Uint8Array {
    const cached = this.cache.get(name);
    if (cached) return cached;
    const e = this.entries.get(name);
    if (!e) throw new ModelFormatError(this.path, `no tensor named ${name}`);
    if (!options?.anyDtype) ggmlTypeOf(this.path, e);
    const fd = openFile(this.path);
    let bytes: Uint8Array;
    try {
      const mapped = this.inPlace?.({ path: this.path, fd, fileSize: this.fileSize, name, offset: e.begin, length: e.end - e.begin });
      bytes = mapped ?? readExactly(fd, this.path, e.begin, e.end - e.begin, name);
      if (!mapped) this.readRaw += bytes.length;
    } finally {
      closeSync(fd);
    }
    if (options?.cache ?? true) this.cache.set(name, bytes);
    return bytes;
  }

  tensor(name: string, options?: ReadOptions): WeightTensor {
    const data = this.read(name, options);
    const e = this.entries.get(name)!; // read() threw if absent
    return { name, type: ggmlTypeOf(this.path, e), dims: [...e.shape].reverse(), data };
  }
}

function openFile(path: string): number {
  try {
    return openSync(path, 'r');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new ModelFormatError(path, code === 'ENOENT' ? 'no such file' : `cannot open (${code ?? String(e)})`);
  }
}

/** Reads exactly `length` bytes at `position` into a fresh buffer (own ArrayBuffer, offset 0). */
function readExactly(fd: number, path: string, position: number, length: number, tensor?: string): Uint8Array {
  const out = new Uint8Array(length);
  let done = 0;
  while (done < length) {
    const n = readSync(fd, out, done, Math.min(length - done, 1 << 30), position + done);
    if (n === 0) {
      const what = tensor === undefined ? '' : ` reading tensor ${tensor}`;
      throw new ModelFormatError(path, `file is truncated${what}: needs bytes ${position}..${position + length} but ended at ${position + done}`);
    }
    done += n;
  }
  return out;
}

function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

/** Validates the header and makes offsets absolute (dataStart = 8 + header length). */
function parseHeader(
  path: string,
  json: unknown,
  dataStart: number,
  fileSize: number,
): { metadata: Record<string, string>; entries: Map<string, SafetensorsEntry> } {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new ModelFormatError(path, 'header is not a JSON object');
  }
  const metadata: Record<string, string> = {};
  const list: SafetensorsEntry[] = [];
  for (const [name, value] of Object.entries(json as Record<string, unknown>)) {
    if (name === '__metadata__') {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        throw new ModelFormatError(path, '__metadata__ is not an object of strings');
      }
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
        if (typeof v !== 'string') throw new ModelFormatError(path, `__metadata__.${k} is not a string`);
        metadata[k] = v;
      }
      continue;
    }
    const info = value as { dtype?: unknown; shape?: unknown; data_offsets?: unknown } | null;
    const bad = (problem: string): ModelFormatError => new ModelFormatError(path, `tensor ${name}: ${problem}`);
    if (typeof info !== 'object' || info === null) throw bad('header entry is not an object');
    if (typeof info.dtype !== 'string') throw bad('dtype is missing or not a string');
    if (!Array.isArray(info.shape) || !info.shape.every(isCount)) throw bad('shape is not a list of non-negative integers');
    const offsets = info.data_offsets;
    if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every(isCount)) {
      throw bad('data_offsets is not a pair of non-negative integers');
    }
    const [b, e] = offsets as [number, number];
    if (b > e) throw bad(`data_offsets [${b}, ${e}] are out of order`);
    const shape = info.shape as number[];
    const size = DTYPE_SIZE[info.dtype];
    if (size !== undefined) {
      const elements = shape.reduce((p, d) => p * d, 1);
      if (elements * size !== e - b) {
        throw bad(`shape [${shape.join(', ')}] of ${info.dtype} takes ${elements * size} bytes but data_offsets span ${e - b}`);
      }
    }
    list.push({ name, dtype: info.dtype, shape, begin: dataStart + b, end: dataStart + e });
  }
  // sorted by position: no overlaps, nothing beyond the end of the file
  const sorted = [...list].sort((x, y) => x.begin - y.begin || x.end - y.end);
  let prev: SafetensorsEntry | undefined;
  for (const t of sorted) {
    if (prev && t.begin < prev.end && t.end > t.begin) {
      throw new ModelFormatError(path, `tensors ${prev.name} and ${t.name} overlap (bytes ${t.begin}..${prev.end})`);
    }
    if (t.end > fileSize) {
      throw new ModelFormatError(path, `file is truncated: tensor ${t.name} needs bytes ${t.begin}..${t.end} but the file has ${fileSize} bytes`);
    }
    if (t.end > t.begin) prev = t;
  }
  return { metadata, entries: new Map(list.map((t) => [t.name, t])) };
}
