// GGUF reader (v2, v3; little-endian). Layout:
//   "GGUF" u32 version, u64 tensorCount, u64 kvCount,
//   kvCount × { string key, u32 valueType, value },
//   tensorCount × { string name, u32 nDims, u64 dims[nDims], u32 ggmlType, u64 offset },
//   padding to `general.alignment` (default 32), then the data section; each tensor's offset
//   is relative to the data section and a multiple of the alignment.
//   string = u64 byteLength + UTF-8 bytes; array = u32 itemType, u64 count, items.
// The header is read progressively from a file descriptor (files may exceed Buffer limits),
// and every tensor's range is checked against the file's size before any is used, so a file
// truncated beyond what its header promises is one error naming it, never a fault on a
// mapped page. A tensor's bytes are served when first asked for: in place (a view of the
// mapped file, when `inPlace` offers one) or read once into bytes of their own.
import { constants as bufferConstants } from 'node:buffer';
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { ModelFormatError, UnsupportedModelError } from '../errors.js';
import { GGMLType, blockGeometry, computeTypes, typeName, weightType } from '../tensor/weight-types.js';
import { r16TypeFor } from '../tensor/quant/r16.js';
import type { R16Interleaver } from '../tensor/quant/r16.js';
import type { GGUFValue } from './gguf-metadata.js';
import { Cursor, GGUFValueType, GGUF_DEFAULT_ALIGNMENT, GGUF_MAGIC, MAX_COUNT, readValue } from './gguf-values.js';
import type { TensorSource } from './weights.js';
import type { InPlaceBytes } from './model-memory.js';
import type { WeightTensor } from '../tensor/weight-tensor.js';

const MAX_DIMS = 4;

export interface GGUFTensorInfo {
  readonly name: string;
  readonly type: GGMLType;
  /** ggml order: dims[0] is contiguous */
  readonly dims: readonly number[];
  /** absolute byte offset in the file */
  readonly offset: number;
  readonly byteLength: number;
}

export class GGUFFile implements TensorSource {
  readonly version: 2 | 3;
  readonly metadata = new Map<string, GGUFValue>();
  readonly tensorInfos = new Map<string, GGUFTensorInfo>();
  readonly alignment: number;
  readonly fileSize: number;
  /** absolute offset of the data section */
  readonly dataOffset: number;
  private fd: number | undefined;
  private readonly cache = new Map<string, WeightTensor>();
  private tensorBytes = 0;
  private inPlaceBytes = 0;

  /** use openGGUF */
  constructor(
    readonly path: string,
    fd: number,
    /** where tensor bytes go (a WeightArena's take, for one) */
    private readonly allocate: (bytes: number) => Uint8Array = (n) => new Uint8Array(n),
    /** given: Q4_0 and Q8_0 matrices of whole groups of 16 rows are read into their layouts
     *  interleaved by 16 rows with it */
    private readonly interleaveR16?: R16Interleaver,
    /** given: tensors are used where they lie in the file when it offers a view (a mapping) */
    private readonly inPlace?: InPlaceBytes,
  ) {
    this.fd = fd;
    const fail = (problem: string): never => {
      throw new ModelFormatError(path, problem);
    };
    const stat = fstatSync(fd);
    if (!stat.isFile()) fail('not a regular file');
    this.fileSize = stat.size;
    const c = new Cursor(fd, this.fileSize, fail);
    if (this.fileSize < 4 || c.u32() !== GGUF_MAGIC) fail('not a GGUF file (bad magic)');
    const version = c.u32();
    if (version === 1) throw new UnsupportedModelError(path, 'GGUF version 1 is not supported (only versions 2 and 3)');
    if (version !== 2 && version !== 3) {
      const swapped = Buffer.alloc(4);
      swapped.writeUInt32BE(version);
      if ([1, 2, 3].includes(swapped.readUInt32LE())) {
        throw new UnsupportedModelError(path, 'big-endian GGUF files are not supported');
      }
      throw new UnsupportedModelError(path, `GGUF version ${version} is not supported (only versions 2 and 3)`);
    }
    this.version = version;
    const tensorCount = c.count('tensor count', MAX_COUNT);
    const kvCount = c.count('metadata count', MAX_COUNT);

    for (let i = 0; i < kvCount; i++) {
      c.what = `metadata entry ${i}`;
      const key = c.string('metadata key');
      c.what = `metadata key ${key}`;
      const type = c.u32();
      if (type !== GGUFValueType.ARRAY && !(type in GGUFValueType)) fail(`file is corrupt: metadata key ${key} has unknown value type ${type}`);
      const value = readValue(c, type, 0);
      if (this.metadata.has(key)) fail(`file is corrupt: duplicate metadata key ${key}`);
      this.metadata.set(key, value);
    }
    this.alignment = this.readAlignment(fail);

    const infos: GGUFTensorInfo[] = [];
    const names = new Set<string>();
    const relOffsets: number[] = [];
    for (let i = 0; i < tensorCount; i++) {
      c.what = `tensor info ${i}`;
      const name = c.string('tensor name');
      c.what = `tensor info ${i} (${name})`;
      const nDims = c.u32();
      if (nDims > MAX_DIMS) fail(`file is corrupt: tensor ${name} has ${nDims} dims (at most ${MAX_DIMS})`);
      const dims: number[] = [];
      for (let d = 0; d < nDims; d++) dims.push(c.count(`tensor ${name} dim`, Number.MAX_SAFE_INTEGER));
      const type = c.u32() as GGMLType;
      const rel = c.count(`tensor ${name} offset`, Number.MAX_SAFE_INTEGER);
      if (names.has(name)) fail(`file is corrupt: duplicate tensor ${name}`);
      names.add(name);
      infos.push({ name, type, dims, offset: 0, byteLength: this.tensorByteLength(name, type, dims, fail) });
      relOffsets.push(rel);
    }
    this.dataOffset = Math.ceil(c.pos / this.alignment) * this.alignment;

    let n = 0;
    for (const info of infos) {
      const rel = relOffsets[n++]!;
      if (rel % this.alignment !== 0) {
        fail(`tensor ${info.name} has offset ${rel}, which is not a multiple of the alignment ${this.alignment}`);
      }
      const offset = this.dataOffset + rel;
      const end = offset + info.byteLength;
      if (end > this.fileSize) {
        fail(`file is truncated: tensor ${info.name} needs bytes ${offset}..${end} but the file has ${this.fileSize} bytes`);
      }
      this.tensorInfos.set(info.name, { ...info, offset });
    }
    const sorted = [...this.tensorInfos.values()].sort((a, b) => a.offset - b.offset);
    for (let i = 1; i < sorted.length; i++) {
      const prev = sorted[i - 1]!, cur = sorted[i]!;
      if (cur.offset < prev.offset + prev.byteLength) fail(`file is corrupt: tensors ${prev.name} and ${cur.name} overlap`);
    }
  }

  private readAlignment(fail: (problem: string) => never): number {
    const a = this.metadata.get('general.alignment');
    if (a === undefined) return GGUF_DEFAULT_ALIGNMENT;
    if (typeof a !== 'number' || !Number.isInteger(a) || a <= 0 || (a & (a - 1)) !== 0) {
      return fail(`general.alignment is ${String(a)}, not a power of two`);
    }
    return a;
  }

  private tensorByteLength(name: string, type: GGMLType, dims: number[], fail: (problem: string) => never): number {
    const g = blockGeometry(type);
    if (!g) return fail(`unknown tensor type id ${type} for tensor ${name}`);
    const n0 = dims[0] ?? 1;
    if (n0 % g.blockSize !== 0) {
      fail(`tensor ${name} has dims [${dims.join(', ')}] but ${typeName(type)} packs ${g.blockSize} values per block; dims[0] must be a multiple of ${g.blockSize}`);
    }
    let bytes = (n0 / g.blockSize) * g.typeSize;
    for (let d = 1; d < dims.length; d++) bytes *= dims[d]!;
    if (!Number.isSafeInteger(bytes)) fail(`file is corrupt: tensor ${name} dims [${dims.join(', ')}] are absurd`);
    return bytes;
  }

  /** tensor bytes read from disk into memory so far (each tensor is read at most once) */
  get bytesRead(): number {
    return this.tensorBytes;
  }

  /** tensor bytes served in place (views of the mapped file) so far */
  get bytesInPlace(): number {
    return this.inPlaceBytes;
  }

  has(name: string): boolean {
    return this.tensorInfos.has(name);
  }

  get(name: string): WeightTensor {
    return this.tensor(name);
  }

  /** the tensor's exact bytes, served on first use (in place or read) and cached */
  tensor(name: string): WeightTensor {
    const cached = this.cache.get(name);
    if (cached) return cached;
    const info = this.tensorInfos.get(name);
    if (!info) throw new ModelFormatError(this.path, `no tensor named ${name}`);
    if (!weightType(info.type)?.compute) {
      const runs = computeTypes().map(typeName).join(', ');
      throw new UnsupportedModelError(this.path, `tensor ${name} has type ${typeName(info.type)}, which loom does not support; loom runs ${runs}`);
    }
    if (this.fd === undefined) throw new ModelFormatError(this.path, `file was closed before tensor ${name} was read`);
    if (info.byteLength > bufferConstants.MAX_LENGTH) {
      throw new UnsupportedModelError(this.path, `tensor ${name} is ${info.byteLength} bytes, more than one buffer can hold`);
    }
    let type = info.type;
    // a 3-D tensor (a MoE layer's experts, [K, N, experts]) is interleaved matrix by matrix,
    // so each expert's bytes stay one interleaved matrix (arch/moe.ts views them so)
    const matrices = info.dims.length === 3 ? info.dims[2]! : 1;
    // the token table beside a separate output matrix is only ever read a row a token: a 16-row
    // layout buys it nothing, so it stays mapped in the file's (gpt-oss: 0.6 GB not copied)
    const lookupOnly = name === 'token_embd.weight' && this.tensorInfos.has('output.weight');
    const r16 = this.interleaveR16 && !lookupOnly ? r16TypeFor(type, matrices > 1 ? info.dims.slice(0, 2) : info.dims) : undefined;
    // a tensor rewritten into a load-time layout needs bytes of its own, unless it is served in
    // place anyway (one read by rows): then it keeps the file's layout
    const mapped = this.inPlace?.({ path: this.path, fd: this.fd, fileSize: this.fileSize, name, offset: info.offset, length: info.byteLength, relayout: r16 !== undefined });
    const data = mapped ?? this.read(name, info);
    if (mapped) this.inPlaceBytes += mapped.length;
    if (r16 !== undefined && !mapped) {
      const bytes = data.length / matrices;
      for (let m = 0; m < matrices; m++) this.interleaveR16!(r16, data.subarray(m * bytes, (m + 1) * bytes), info.dims[0]!, info.dims[1]!);
      type = r16;
    }
    const t: WeightTensor = { name, type, dims: info.dims, data };
    this.cache.set(name, t);
    return t;
  }

  private read(name: string, info: GGUFTensorInfo): Uint8Array {
    const fd = this.fd!;
    const data = this.allocate(info.byteLength);
    let got = 0;
    while (got < data.length) {
      const r = readSync(fd, data, got, Math.min(data.length - got, 1 << 30), info.offset + got);
      if (r === 0) {
        throw new ModelFormatError(this.path, `file is truncated: tensor ${name} needs bytes ${info.offset}..${info.offset + info.byteLength} but reading stopped at ${info.offset + got}`);
      }
      got += r;
    }
    this.tensorBytes += got;
    return data;
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}

/** Opens and parses the header of a GGUF file; tensors are served lazily: in place where
 *  `inPlace` offers a view of them, else read into `allocate`'s bytes; Q4_0 and Q8_0 matrices
 *  are read into their layouts interleaved by 16 rows when `interleaveR16` is given. */
export function openGGUF(path: string, allocate?: (bytes: number) => Uint8Array, interleaveR16?: R16Interleaver, inPlace?: InPlaceBytes): GGUFFile {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new ModelFormatError(path, 'no such file');
    throw new ModelFormatError(path, `cannot open: ${(e as Error).message}`);
  }
  try {
    return new GGUFFile(path, fd, allocate, interleaveR16, inPlace);
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}
