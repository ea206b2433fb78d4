// A streaming GGUF writer for generated benchmark models: the header (in the layout of
// model/gguf-writer.ts: v3, alignment 32, tensor data aligned and zero-padded) goes out
// first, then each tensor's bytes as its producer makes them, so only one tensor (or one
// chunk of it) is in memory at a time. Metadata values are the few kinds a generated model needs.
import { closeSync, ftruncateSync, openSync, writeSync } from 'node:fs';
import { InvalidArgumentError } from '../errors.js';
import { rowBytes, typeName } from '../tensor/weight-types.js';
import type { GGMLType } from '../tensor/weight-types.js';
import { GGUFValueType, GGUF_DEFAULT_ALIGNMENT, GGUF_MAGIC } from '../model/gguf-values.js';

export type StreamEntry =
  | { readonly key: string; readonly type: GGUFValueType.UINT32 | GGUFValueType.FLOAT32; readonly value: number }
  | { readonly key: string; readonly type: GGUFValueType.BOOL; readonly value: boolean }
  | { readonly key: string; readonly type: GGUFValueType.STRING; readonly value: string }
  | { readonly key: string; readonly type: GGUFValueType.ARRAY; readonly itemType: GGUFValueType.STRING; readonly value: readonly string[] }
  | { readonly key: string; readonly type: GGUFValueType.ARRAY; readonly itemType: GGUFValueType.INT32; readonly value: readonly number[] }
  | { readonly key: string; readonly type: GGUFValueType.ARRAY; readonly itemType: GGUFValueType.BOOL; readonly value: readonly boolean[] }
  | { readonly key: string; readonly type: GGUFValueType.ARRAY; readonly itemType: GGUFValueType.FLOAT32; readonly value: readonly number[] };

export const entry = {
  u32: (key: string, value: number): StreamEntry => ({ key, type: GGUFValueType.UINT32, value }),
  f32: (key: string, value: number): StreamEntry => ({ key, type: GGUFValueType.FLOAT32, value }),
  bool: (key: string, value: boolean): StreamEntry => ({ key, type: GGUFValueType.BOOL, value }),
  str: (key: string, value: string): StreamEntry => ({ key, type: GGUFValueType.STRING, value }),
  strings: (key: string, value: readonly string[]): StreamEntry => ({ key, type: GGUFValueType.ARRAY, itemType: GGUFValueType.STRING, value }),
  i32s: (key: string, value: readonly number[]): StreamEntry => ({ key, type: GGUFValueType.ARRAY, itemType: GGUFValueType.INT32, value }),
  bools: (key: string, value: readonly boolean[]): StreamEntry => ({ key, type: GGUFValueType.ARRAY, itemType: GGUFValueType.BOOL, value }),
  f32s: (key: string, value: readonly number[]): StreamEntry => ({ key, type: GGUFValueType.ARRAY, itemType: GGUFValueType.FLOAT32, value }),
};

export interface StreamTensor {
  readonly name: string;
  readonly type: GGMLType;
  /** ggml order: dims[0] contiguous */
  readonly dims: readonly number[];
  /** the tensor's bytes, called once, in file order: whole, or in chunks (a tensor of any size in bounded memory) */
  readonly produce: () => Uint8Array | Iterable<Uint8Array>;
}

/** Little-endian chunks collected in order, joined once. */
class Chunks {
  readonly parts: Buffer[] = [];
  length = 0;
  private push(b: Buffer): void {
    this.parts.push(b);
    this.length += b.length;
  }
  u32(v: number): void { const b = Buffer.alloc(4); b.writeUInt32LE(v); this.push(b); }
  i32(v: number): void { const b = Buffer.alloc(4); b.writeInt32LE(v); this.push(b); }
  u64(v: number): void { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt(v)); this.push(b); }
  f32(v: number): void { const b = Buffer.alloc(4); b.writeFloatLE(v); this.push(b); }
  u8(v: number): void { this.push(Buffer.from([v])); }
  str(s: string): void {
    const b = Buffer.from(s, 'utf8');
    this.u64(b.length);
    this.push(b);
  }
  pad(alignment: number): void { this.push(Buffer.alloc((alignment - (this.length % alignment)) % alignment)); }
}

function header(metadata: readonly StreamEntry[], tensors: readonly StreamTensor[], sizes: readonly number[]): Buffer {
  const c = new Chunks();
  c.u32(GGUF_MAGIC);
  c.u32(3);
  c.u64(tensors.length);
  c.u64(metadata.length);
  for (const e of metadata) {
    c.str(e.key);
    c.u32(e.type);
    switch (e.type) {
      case GGUFValueType.UINT32: c.u32(e.value); break;
      case GGUFValueType.FLOAT32: c.f32(e.value); break;
      case GGUFValueType.BOOL: c.u8(e.value ? 1 : 0); break;
      case GGUFValueType.STRING: c.str(e.value); break;
      case GGUFValueType.ARRAY:
        c.u32(e.itemType);
        c.u64(e.value.length);
        if (e.itemType === GGUFValueType.STRING) for (const s of e.value) c.str(s);
        else if (e.itemType === GGUFValueType.BOOL) for (const v of e.value) c.u8(v ? 1 : 0);
        else if (e.itemType === GGUFValueType.FLOAT32) for (const v of e.value) c.f32(v);
        else for (const v of e.value) c.i32(v);
        break;
    }
  }
  let offset = 0;
  tensors.forEach((t, i) => {
    c.str(t.name);
    c.u32(t.dims.length);
    for (const d of t.dims) c.u64(d);
    c.u32(t.type);
    c.u64(offset);
    offset += Math.ceil(sizes[i]! / GGUF_DEFAULT_ALIGNMENT) * GGUF_DEFAULT_ALIGNMENT;
  });
  c.pad(GGUF_DEFAULT_ALIGNMENT);
  return Buffer.concat(c.parts, c.length);
}

/**
 * Writes a GGUF v3 file (alignment 32), producing tensors one at a time; `layoutOnly` writes the
 * header and leaves the data a hole of the right size (a sparse file, for tools that read only
 * the tensor infos: scripts/quant-mix-goldens.mjs runs llama-quantize --dry-run on one).
 */
export function writeGGUFStream(path: string, metadata: readonly StreamEntry[], tensors: readonly StreamTensor[], layoutOnly = false): void {
  const sizes = tensors.map((t) => {
    const n = t.dims.reduce((a, b) => a * b, 1);
    const row = rowBytes(t.type, t.dims[0] ?? 1);
    if (row === undefined) throw new InvalidArgumentError(`GGUF tensor ${t.name}: ${typeName(t.type)} rows of ${t.dims[0]} values are not whole blocks`);
    return row * (n / (t.dims[0] ?? 1));
  });
  const fd = openSync(path, 'w');
  try {
    const head = header(metadata, tensors, sizes);
    writeAll(fd, head);
    if (layoutOnly) {
      ftruncateSync(fd, head.length + sizes.reduce((sum, n) => sum + Math.ceil(n / GGUF_DEFAULT_ALIGNMENT) * GGUF_DEFAULT_ALIGNMENT, 0));
      return;
    }
    const zeros = new Uint8Array(GGUF_DEFAULT_ALIGNMENT);
    tensors.forEach((t, i) => {
      const data = t.produce();
      let length = 0;
      for (const chunk of data instanceof Uint8Array ? [data] : data) {
        writeAll(fd, chunk);
        length += chunk.length;
      }
      if (length !== sizes[i]) throw new InvalidArgumentError(`GGUF tensor ${t.name}: produced ${length} bytes, expected ${sizes[i]}`);
      writeAll(fd, zeros.subarray(0, (GGUF_DEFAULT_ALIGNMENT - (length % GGUF_DEFAULT_ALIGNMENT)) % GGUF_DEFAULT_ALIGNMENT));
    });
  } finally {
    closeSync(fd);
  }
}

function writeAll(fd: number, bytes: Uint8Array): void {
  let done = 0;
  // one write takes at most 2 GiB − 1 bytes (Gemma 4 E2B's per-layer embedding is 2.5 GB)
  while (done < bytes.length) done += writeSync(fd, bytes, done, Math.min(bytes.length - done, 1 << 30));
}
