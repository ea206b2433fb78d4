// GGUF: writer → reader round trips, the writer's exact bytes, lazy tensor reads, the two
// real model files, and one clear error (naming the file) for each way a file can be wrong.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { ModelFormatError, UnsupportedModelError } from '../../src/errors.js';
import { GGMLType } from '../../src/tensor/weight-types.js';
import { GGUFValueType, kv, writeGGUF } from '../../src/model/gguf-writer.js';
import type { GGUFEntry, GGUFTensorSpec } from '../../src/model/gguf-writer.js';
import { openGGUF } from '../../src/model/gguf.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url)); // dist/test/model → project root
const MODELS = join(ROOT, '..', 'shared', 'models');
const tmp = mkdtempSync(join(tmpdir(), 'loom-gguf-'));
process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));
let fileNo = 0;
const tmpPath = (): string => join(tmp, `f${fileNo++}.gguf`);

function randomBytes(n: number, seed: number): Uint8Array {
  const out = new Uint8Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s >>> 24;
  }
  return out;
}

/** every value type, with edge values */
const ALL_TYPES: GGUFEntry[] = [
  kv.u8('t.u8', 255),
  kv.i8('t.i8', -128),
  kv.u16('t.u16', 65535),
  kv.i16('t.i16', -32768),
  kv.u32('t.u32', 4294967295),
  kv.i32('t.i32', -2147483648),
  kv.f32('t.f32', 0.1),
  kv.bool('t.true', true),
  kv.bool('t.false', false),
  kv.str('t.str', 'héllo ✓ 世界'),
  kv.str('t.empty', ''),
  kv.u64('t.u64.small', 12345678901234),
  kv.u64('t.u64.big', 2n ** 64n - 1n),
  kv.i64('t.i64.small', -5),
  kv.i64('t.i64.big', -(2n ** 63n)),
  kv.f64('t.f64', Math.PI),
  kv.arr(GGUFValueType.FLOAT32, 't.arr.f32', [0.5, -2, 1e-3]),
  kv.arr(GGUFValueType.STRING, 't.arr.str', ['a', '', 'ünï', '<0x0A>']),
  kv.arr(GGUFValueType.INT32, 't.arr.empty', []),
  kv.arr(GGUFValueType.BOOL, 't.arr.bool', [true, false]),
  kv.arr(GGUFValueType.UINT64, 't.arr.u64', [1, 2n ** 60n]),
  kv.arr(GGUFValueType.ARRAY, 't.arr.nested', [
    kv.nested(GGUFValueType.INT32, [1, -2, 3]),
    kv.nested(GGUFValueType.STRING, ['x', 'yz']),
    kv.nested(GGUFValueType.ARRAY, [kv.nested(GGUFValueType.UINT8, [7])]),
  ]),
];

const EXPECTED_VALUES: Record<string, unknown> = {
  't.u8': 255, 't.i8': -128, 't.u16': 65535, 't.i16': -32768, 't.u32': 4294967295, 't.i32': -2147483648,
  't.f32': Math.fround(0.1), 't.true': true, 't.false': false, 't.str': 'héllo ✓ 世界', 't.empty': '',
  't.u64.small': 12345678901234, 't.u64.big': 2n ** 64n - 1n, 't.i64.small': -5, 't.i64.big': -(2n ** 63n),
  't.f64': Math.PI, 't.arr.f32': [0.5, -2, Math.fround(1e-3)], 't.arr.str': ['a', '', 'ünï', '<0x0A>'],
  't.arr.empty': [], 't.arr.bool': [true, false], 't.arr.u64': [1, 2n ** 60n],
  't.arr.nested': [[1, -2, 3], ['x', 'yz'], [[7]]],
};

const TENSORS: GGUFTensorSpec[] = [
  { name: 'a.f32', type: GGMLType.F32, dims: [8, 3], data: randomBytes(8 * 3 * 4, 1) },
  { name: 'b.f16', type: GGMLType.F16, dims: [5], data: randomBytes(10, 2) }, // 10 bytes: padding follows
  { name: 'c.q8_0', type: GGMLType.Q8_0, dims: [64, 2], data: randomBytes(4 * 34, 3) },
  { name: 'd.q4_k', type: GGMLType.Q4_K, dims: [256, 1, 1], data: randomBytes(144, 4) },
];

describe('GGUF writer → reader', () => {
  for (const version of [2, 3] as const) {
    for (const alignment of [undefined, 64, 8]) {
      it(`round-trips every metadata type and the tensors (v${version}, alignment ${alignment ?? 'default'})`, () => {
        const path = tmpPath();
        writeGGUF(path, { version, alignment, metadata: ALL_TYPES, tensors: TENSORS });
        const g = openGGUF(path);
        try {
          assert.equal(g.version, version);
          assert.equal(g.alignment, alignment ?? 32);
          for (const [key, want] of Object.entries(EXPECTED_VALUES)) assert.deepEqual(g.metadata.get(key), want, key);
          assert.equal(g.metadata.get('general.alignment'), alignment); // written only when not 32
          assert.equal(g.metadata.size, ALL_TYPES.length + (alignment === undefined ? 0 : 1));
          assert.deepEqual([...g.tensorInfos.keys()], TENSORS.map((t) => t.name));
          const bytes = readFileSync(path);
          for (const t of TENSORS) {
            const info = g.tensorInfos.get(t.name)!;
            assert.equal(info.offset % (alignment ?? 32), 0, `${t.name} aligned`);
            assert.equal(info.byteLength, t.data.length);
            assert.deepEqual(info.dims, t.dims);
            assert.equal(info.type, t.type);
            // the bytes on disk at the stated offset are the tensor's, and tensor() returns them
            assert.deepEqual(new Uint8Array(bytes.subarray(info.offset, info.offset + t.data.length)), t.data);
            const w = g.tensor(t.name);
            assert.deepEqual(w.data, t.data);
            assert.deepEqual(w.dims, t.dims);
          }
          assert.equal(bytes.length % (alignment ?? 32), 0, 'file padded to the alignment');
        } finally {
          g.close();
        }
      });
    }
  }

  it('writes exactly the bytes the format defines', () => {
    const path = tmpPath();
    const data = new Uint8Array(new Float32Array([1, 2, 3, 4]).buffer);
    writeGGUF(path, { metadata: [kv.u32('test', 7)], tensors: [{ name: 'w', type: GGMLType.F32, dims: [4], data }] });
    const e = Buffer.alloc(128); // 24 header + 20 kv + 33 tensor info = 77 → 96, + 16 data → 128
    e.write('GGUF', 0, 'latin1');
    e.writeUInt32LE(3, 4);
    e.writeBigUInt64LE(1n, 8); // tensors
    e.writeBigUInt64LE(1n, 16); // kvs
    e.writeBigUInt64LE(4n, 24); e.write('test', 32, 'latin1'); e.writeUInt32LE(4, 36); e.writeUInt32LE(7, 40);
    e.writeBigUInt64LE(1n, 44); e.write('w', 52, 'latin1'); e.writeUInt32LE(1, 53); e.writeBigUInt64LE(4n, 57);
    e.writeUInt32LE(0, 65); e.writeBigUInt64LE(0n, 69);
    for (let i = 0; i < 4; i++) e.writeFloatLE(i + 1, 96 + 4 * i);
    assert.deepEqual(readFileSync(path), e);
    const g = openGGUF(path);
    assert.equal(g.dataOffset, 96);
    assert.equal(g.fileSize, 128);
    g.close();
  });

  it('reads each tensor lazily, once', () => {
    const path = tmpPath();
    writeGGUF(path, { metadata: [], tensors: TENSORS });
    const g = openGGUF(path);
    assert.equal(g.bytesRead, 0, 'opening reads no tensor data');
    const a = g.get('c.q8_0');
    assert.equal(g.bytesRead, 4 * 34);
    assert.equal(g.get('c.q8_0'), a, 'cached');
    assert.equal(g.bytesRead, 4 * 34, 'not read twice');
    assert.ok(g.has('a.f32') && !g.has('nope'));
    g.tensor('a.f32');
    assert.equal(g.bytesRead, 4 * 34 + 96);
    g.close();
    g.close(); // twice is fine
  });

  it('writes headers larger than its first buffer (a 50k-token vocabulary)', () => {
    const path = tmpPath();
    const tokens = Array.from({ length: 50_000 }, (_, i) => `token-${i}-ü`);
    writeGGUF(path, { metadata: [kv.arr(GGUFValueType.STRING, 'tokenizer.ggml.tokens', tokens), kv.u32('after', 7)], tensors: TENSORS });
    const g = openGGUF(path);
    assert.deepEqual(g.metadata.get('tokenizer.ggml.tokens'), tokens);
    assert.equal(g.metadata.get('after'), 7);
    assert.deepEqual(g.get('c.q8_0').data, TENSORS.find((t) => t.name === 'c.q8_0')!.data);
    g.close();
  });

  it('rejects malformed writer input', () => {
    assert.throws(() => writeGGUF(tmpPath(), { alignment: 24, metadata: [], tensors: [] }), /power of two/);
    assert.throws(() => writeGGUF(tmpPath(), { metadata: [kv.u8('x', 256)], tensors: [] }), /x/);
    assert.throws(() => writeGGUF(tmpPath(), { metadata: [kv.u32('x', 1), kv.u32('x', 2)], tensors: [] }), /twice/);
    assert.throws(
      () => writeGGUF(tmpPath(), { metadata: [], tensors: [{ name: 'w', type: GGMLType.Q8_0, dims: [32], data: new Uint8Array(33) }] }),
      /needs 34 bytes/,
    );
  });
});

describe('real GGUF files', () => {
  const stories = join(MODELS, 'stories260K.gguf');
  const tiny = join(MODELS, 'llama-2-tiny-random.gguf');

  it('stories260K.gguf', { skip: !existsSync(stories) && `absent: ${stories}` }, () => {
    const g = openGGUF(stories);
    assert.equal(g.metadata.get('general.architecture'), 'llama');
    assert.equal(g.metadata.get('llama.embedding_length'), 64);
    assert.equal(g.metadata.get('llama.block_count'), 5);
    assert.equal((g.metadata.get('tokenizer.ggml.tokens') as string[]).length, 512);
    for (const t of g.tensorInfos.values()) assert.equal(t.type, GGMLType.F32, t.name);
    assert.deepEqual(g.tensorInfos.get('token_embd.weight')!.dims, [64, 512]);
    const norm = g.get('blk.0.attn_norm.weight');
    assert.equal(g.bytesRead, 64 * 4, 'only the tensor asked for');
    const v = new Float32Array(norm.data.buffer, norm.data.byteOffset, 64);
    assert.ok(v.every((x) => Number.isFinite(x)) && v.some((x) => x !== 0));
    g.close();
  });

  it('llama-2-tiny-random.gguf', { skip: !existsSync(tiny) && `absent: ${tiny}` }, () => {
    const g = openGGUF(tiny);
    assert.equal((g.metadata.get('tokenizer.ggml.tokens') as string[]).length, 32000);
    assert.equal((g.metadata.get('tokenizer.ggml.scores') as number[]).length, 32000);
    const embd = g.tensorInfos.get('token_embd.weight')!;
    assert.equal(embd.type, GGMLType.F16);
    assert.deepEqual(embd.dims, [8, 32000]);
    assert.ok([...g.tensorInfos.values()].some((t) => t.type === GGMLType.F16));
    assert.equal(g.get('token_embd.weight').data.length, 8 * 32000 * 2);
    g.close();
  });
});

/** the byte offset just after `name` in the tensor infos (its n_dims field) */
function afterName(bytes: Buffer, name: string): number {
  const at = bytes.indexOf(Buffer.from(name, 'utf8'));
  assert.ok(at > 0, `${name} in file`);
  return at + Buffer.byteLength(name);
}

function expectError(path: string, kind: typeof ModelFormatError | typeof UnsupportedModelError, problem: RegExp, read?: string): void {
  assert.throws(
    () => {
      const g = openGGUF(path);
      try {
        if (read !== undefined) g.tensor(read);
      } finally {
        g.close();
      }
    },
    (e: unknown) => {
      assert.ok(e instanceof kind, `${String(e)} is a ${kind.name}`);
      assert.ok(e.message.startsWith(`${path}: `), `names the file: ${e.message}`);
      assert.match(e.message, problem);
      return true;
    },
  );
}

describe('GGUF errors', () => {
  const good = (): { path: string; bytes: Buffer } => {
    const path = tmpPath();
    writeGGUF(path, {
      metadata: [kv.str('general.architecture', 'llama'), kv.arr(GGUFValueType.STRING, 'tokenizer.ggml.tokens', ['aaaa', 'bbbb', 'cccc'])],
      tensors: [
        { name: 'tok.weight', type: GGMLType.Q8_0, dims: [64, 1], data: randomBytes(68, 5) },
        { name: 'last.weight', type: GGMLType.F32, dims: [16], data: randomBytes(64, 6) },
      ],
    });
    return { path, bytes: readFileSync(path) };
  };
  const variant = (bytes: Buffer, change: (b: Buffer) => void): string => {
    const path = tmpPath();
    const b = Buffer.from(bytes);
    change(b);
    writeFileSync(path, b);
    return path;
  };

  it('missing file, not GGUF, a directory', () => {
    expectError(join(tmp, 'nope.gguf'), ModelFormatError, /no such file/);
    const text = tmpPath();
    writeFileSync(text, 'hello, this is not a model');
    expectError(text, ModelFormatError, /not a GGUF file/);
    const short = tmpPath();
    writeFileSync(short, 'GG');
    expectError(short, ModelFormatError, /not a GGUF file/);
    const dir = join(tmp, 'dir.gguf');
    mkdirSync(dir);
    expectError(dir, ModelFormatError, /not a regular file/);
  });

  it('unsupported versions and big-endian files', () => {
    const { bytes } = good();
    expectError(variant(bytes, (b) => b.writeUInt32LE(1, 4)), UnsupportedModelError, /version 1 is not supported/);
    expectError(variant(bytes, (b) => b.writeUInt32LE(99, 4)), UnsupportedModelError, /version 99 is not supported/);
    expectError(variant(bytes, (b) => b.writeUInt32BE(3, 4)), UnsupportedModelError, /big-endian/);
  });

  it('truncation anywhere: header, metadata, tensor infos, tensor data', () => {
    const { bytes } = good();
    const cut = (n: number): string => {
      const path = tmpPath();
      writeFileSync(path, bytes);
      truncateSync(path, n);
      return path;
    };
    expectError(cut(12), ModelFormatError, /file is truncated while reading the header/);
    const key = bytes.indexOf('general.architecture');
    expectError(cut(key + 3), ModelFormatError, /file is truncated while reading metadata entry 0/);
    const inValue = bytes.indexOf('bbbb');
    expectError(cut(inValue + 2), ModelFormatError, /file is truncated while reading metadata key tokenizer\.ggml\.tokens/);
    expectError(cut(afterName(bytes, 'tok.weight') + 6), ModelFormatError, /file is truncated while reading tensor info 0 \(tok\.weight\)/);
    expectError(cut(bytes.indexOf('last.weight') - 3), ModelFormatError, /file is truncated while reading tensor info 1/);
    // last.weight's 64 bytes end the file (64 is a multiple of 32, so no padding after it)
    const n = bytes.length - 10;
    expectError(cut(n), ModelFormatError, new RegExp(`file is truncated: tensor last\\.weight needs bytes ${bytes.length - 64}\\.\\.${bytes.length} but the file has ${n} bytes`));
  });

  it('absurd counts and lengths', () => {
    const { bytes } = good();
    expectError(variant(bytes, (b) => b.writeBigUInt64LE(2n ** 40n, 8)), ModelFormatError, /corrupt: tensor count/);
    expectError(variant(bytes, (b) => b.writeBigUInt64LE(2n ** 40n, 16)), ModelFormatError, /corrupt: metadata count/);
    expectError(variant(bytes, (b) => b.writeBigUInt64LE(2n ** 60n, 24)), ModelFormatError, /corrupt: metadata key length/);
    const arrLen = bytes.indexOf('tokenizer.ggml.tokens') + 'tokenizer.ggml.tokens'.length + 8; // after value type, item type
    expectError(variant(bytes, (b) => b.writeBigUInt64LE(2n ** 50n, arrLen)), ModelFormatError, /corrupt: array length/);
    const nDims = afterName(bytes, 'tok.weight');
    expectError(variant(bytes, (b) => b.writeUInt32LE(9, nDims)), ModelFormatError, /tensor tok\.weight has 9 dims/);
    expectError(variant(bytes, (b) => b.writeUInt32LE(77, bytes.indexOf('general.architecture') + 20)), ModelFormatError, /unknown value type 77/);
  });

  it('bad tensor infos: offset, type, dims; and unsupported types when read', () => {
    const { bytes } = good();
    const info = afterName(bytes, 'last.weight'); // n_dims u32, dims[1] u64, type u32, offset u64
    expectError(variant(bytes, (b) => b.writeBigUInt64LE(b.readBigUInt64LE(info + 16) + 16n, info + 16)), ModelFormatError,
      /tensor last\.weight has offset \d+, which is not a multiple of the alignment 32/);
    expectError(variant(bytes, (b) => b.writeUInt32LE(99, info + 12)), ModelFormatError, /unknown tensor type id 99 for tensor last\.weight/);
    const tok = afterName(bytes, 'tok.weight');
    expectError(variant(bytes, (b) => b.writeBigUInt64LE(48n, tok + 4)), ModelFormatError, /tok\.weight.*multiple of 32/);
    expectError(variant(bytes, (b) => b.writeBigUInt64LE(0n, info + 16)), ModelFormatError, /overlap/);

    const path = tmpPath();
    writeGGUF(path, {
      metadata: [],
      tensors: [
        { name: 'blk.0.ffn_up.weight', type: GGMLType.IQ2_XXS, dims: [256, 2], data: new Uint8Array(2 * 66) },
        { name: 'ok', type: GGMLType.F32, dims: [1], data: new Uint8Array(4) },
      ],
    });
    const g = openGGUF(path); // listing it is fine
    assert.equal(g.tensorInfos.get('blk.0.ffn_up.weight')!.byteLength, 132);
    g.close();
    expectError(path, UnsupportedModelError, /tensor blk\.0\.ffn_up\.weight has type IQ2_XXS, which loom does not support/, 'blk.0.ffn_up.weight');
    expectError(path, ModelFormatError, /no tensor named missing/, 'missing');
  });
});
