import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { ModelFormatError, UnsupportedModelError } from '../../src/errors.js';
import { GGMLType } from '../../src/tensor/weight-types.js';
import { openSafetensors } from '../../src/model/safetensors.js';
import { openSafetensorsModel } from '../../src/model/safetensors-folder.js';
import { writeSafetensors, writeShardedSafetensors } from '../../src/model/safetensors-writer.js';
import type { SafetensorsWriteTensor } from '../../src/model/safetensors-writer.js';

const root = mkdtempSync(join(tmpdir(), 'loom-st-'));
after(() => rmSync(root, { recursive: true, force: true }));
let serial = 0;
const fresh = (name = 'x'): string => join(root, `${serial++}-${name}`);

function f32(values: number[]): Uint8Array {
  const out = new Uint8Array(values.length * 4);
  const view = new DataView(out.buffer);
  values.forEach((v, i) => view.setFloat32(i * 4, v, true));
  return out;
}
/** little-endian bytes of 16-bit patterns */
function u16(patterns: number[]): Uint8Array {
  return Uint8Array.from(patterns.flatMap((p) => [p & 0xff, p >> 8]));
}

// F16: 1.0 = 0x3c00, -2.0 = 0xc000, 0.5 = 0x3800, 65504 = 0x7bff
// BF16: 1.0 = 0x3f80, -2.0 = 0xc000, 0.5 = 0x3f00, 3.0 = 0x4040, 0.25 = 0x3e80, -1 = 0xbf80
const A: SafetensorsWriteTensor = { name: 'a', dtype: 'F32', shape: [2, 3], data: f32([1, 2, 3, 4, 5, 6]) };
const B: SafetensorsWriteTensor = { name: 'b', dtype: 'F16', shape: [4], data: u16([0x3c00, 0xc000, 0x3800, 0x7bff]) };
const C: SafetensorsWriteTensor = { name: 'c', dtype: 'BF16', shape: [3, 2], data: u16([0x3f80, 0xc000, 0x3f00, 0x4040, 0x3e80, 0xbf80]) };

/** a file from a literal header object and data bytes, built without the writer */
function handMade(header: unknown, data: Uint8Array, lengthOverride?: bigint): string {
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const len = new Uint8Array(8);
  new DataView(len.buffer).setBigUint64(0, lengthOverride ?? BigInt(json.length), true);
  const path = fresh('hand.safetensors');
  writeFileSync(path, Buffer.concat([len, json, data]));
  return path;
}

function throwsWith(fn: () => unknown, type: new (...args: never[]) => Error, ...parts: string[]): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof type, `expected ${type.name}, got ${String(e)}`);
    for (const p of parts) assert.ok(e.message.includes(p), `message ${JSON.stringify(e.message)} lacks ${JSON.stringify(p)}`);
    return true;
  });
}

describe('writer layout', () => {
  test('header length, 8-byte aligned data start, offsets and bytes follow the spec', () => {
    const path = fresh('w.safetensors');
    writeSafetensors(path, [A, B, C], { format: 'pt' });
    const raw = readFileSync(path);
    const n = Number(raw.readBigUInt64LE(0));
    assert.equal((8 + n) % 8, 0);
    const header = JSON.parse(raw.subarray(8, 8 + n).toString('utf8')) as Record<string, { data_offsets: number[]; shape: number[]; dtype: string }>;
    assert.deepEqual(header['__metadata__'], { format: 'pt' });
    assert.deepEqual(header['a'], { dtype: 'F32', shape: [2, 3], data_offsets: [0, 24] });
    assert.deepEqual(header['b'], { dtype: 'F16', shape: [4], data_offsets: [24, 32] });
    assert.deepEqual(header['c'], { dtype: 'BF16', shape: [3, 2], data_offsets: [32, 44] });
    assert.equal(raw.length, 8 + n + 44);
    assert.deepEqual(new Uint8Array(raw.subarray(8 + n + 24, 8 + n + 32)), B.data);
  });
});

describe('openSafetensors', () => {
  test('reads back F32/F16/BF16 bytes exactly, ggml dims reversed', () => {
    const path = fresh('rt.safetensors');
    writeSafetensors(path, [A, B, C], { format: 'pt' });
    const file = openSafetensors(path);
    assert.deepEqual(file.names().sort(), ['a', 'b', 'c']);
    assert.deepEqual(file.metadata, { format: 'pt' });
    const a = file.tensor('a');
    assert.equal(a.type, GGMLType.F32);
    assert.deepEqual(a.dims, [3, 2]);
    assert.deepEqual([...new Float32Array(a.data.buffer, a.data.byteOffset, 6)], [1, 2, 3, 4, 5, 6]);
    const b = file.tensor('b');
    assert.equal(b.type, GGMLType.F16);
    assert.deepEqual(b.dims, [4]);
    assert.deepEqual([...b.data], [0x00, 0x3c, 0x00, 0xc0, 0x00, 0x38, 0xff, 0x7b]);
    const c = file.tensor('c');
    assert.equal(c.type, GGMLType.BF16);
    assert.deepEqual(c.dims, [2, 3]);
    assert.deepEqual([...c.data], [0x80, 0x3f, 0x00, 0xc0, 0x00, 0x3f, 0x40, 0x40, 0x80, 0x3e, 0x80, 0xbf]);
  });

  test('reads a hand-made file with an unpadded header and tensors stored out of name order', () => {
    const data = new Uint8Array([...f32([7, 8]), ...u16([0x3c00])]);
    const path = handMade(
      { z: { dtype: 'F32', shape: [2], data_offsets: [0, 8] }, __metadata__: { k: 'v' }, y: { dtype: 'F16', shape: [1, 1], data_offsets: [8, 10] } },
      data,
    );
    const file = openSafetensors(path);
    assert.deepEqual(file.metadata, { k: 'v' });
    assert.deepEqual([...file.read('z')], [...f32([7, 8])]);
    assert.deepEqual(file.tensor('y').dims, [1, 1]);
    assert.deepEqual([...file.read('y')], [0x00, 0x3c]);
  });

  test('reads lazily: the header at open, each tensor once when asked', () => {
    const path = fresh('lazy.safetensors');
    writeSafetensors(path, [A, B, C]);
    const headerEnd = 8 + Number(readFileSync(path).readBigUInt64LE(0));
    const file = openSafetensors(path);
    assert.equal(file.bytesRead, headerEnd);
    file.tensor('b');
    assert.equal(file.bytesRead, headerEnd + 8);
    file.tensor('b');
    assert.equal(file.bytesRead, headerEnd + 8, 'cached');
    file.read('c', { cache: false });
    file.read('c', { cache: false });
    assert.equal(file.bytesRead, headerEnd + 8 + 12 + 12, 'uncached reads go to disk each time');
  });

  test('zero-element tensors are fine', () => {
    const path = handMade({ e: { dtype: 'F32', shape: [0, 4], data_offsets: [0, 0] }, s: { dtype: 'F32', shape: [], data_offsets: [0, 4] } }, f32([3]));
    const file = openSafetensors(path);
    assert.equal(file.read('e').length, 0);
    assert.deepEqual(file.tensor('s').dims, []);
  });
});

describe('openSafetensors errors name the file and the problem', () => {
  test('missing file', () => {
    const path = join(root, 'nope.safetensors');
    throwsWith(() => openSafetensors(path), ModelFormatError, path, 'no such file');
  });

  test('shorter than the length prefix', () => {
    const path = fresh('tiny.safetensors');
    writeFileSync(path, new Uint8Array(5));
    throwsWith(() => openSafetensors(path), ModelFormatError, path, 'truncated');
  });

  test('header length beyond the file', () => {
    const path = handMade({}, new Uint8Array(0), 1000n);
    throwsWith(() => openSafetensors(path), ModelFormatError, path, 'header length 1000 goes beyond the file');
  });

  test('absurd header length', () => {
    const path = handMade({}, new Uint8Array(0), 1n << 40n);
    throwsWith(() => openSafetensors(path), ModelFormatError, path, 'absurd');
  });

  test('header that is not JSON', () => {
    const path = fresh('bad.safetensors');
    const json = Buffer.from('{"a": {"dtype": ', 'utf8');
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(json.length));
    writeFileSync(path, Buffer.concat([len, json]));
    throwsWith(() => openSafetensors(path), ModelFormatError, path, 'not valid JSON');
  });

  test('truncated data: names the tensor, its byte range and the file size', () => {
    const path = fresh('trunc.safetensors');
    writeSafetensors(path, [A, B, C]);
    const full = readFileSync(path).length;
    const dataStart = full - 44;
    truncateSync(path, full - 3);
    throwsWith(
      () => openSafetensors(path),
      ModelFormatError,
      path,
      `file is truncated: tensor c needs bytes ${dataStart + 32}..${dataStart + 44} but the file has ${full - 3} bytes`,
    );
  });

  test('overlapping tensors', () => {
    const path = handMade(
      { p: { dtype: 'F32', shape: [2], data_offsets: [0, 8] }, q: { dtype: 'F32', shape: [2], data_offsets: [4, 12] } },
      new Uint8Array(12),
    );
    throwsWith(() => openSafetensors(path), ModelFormatError, path, 'overlap', 'p', 'q');
  });

  test('offsets out of order', () => {
    const path = handMade({ p: { dtype: 'F32', shape: [1], data_offsets: [8, 4] } }, new Uint8Array(8));
    throwsWith(() => openSafetensors(path), ModelFormatError, path, 'tensor p', 'out of order');
  });

  test('shape times dtype size differs from the byte span', () => {
    const path = handMade({ p: { dtype: 'F16', shape: [3], data_offsets: [0, 8] } }, new Uint8Array(8));
    throwsWith(() => openSafetensors(path), ModelFormatError, path, 'tensor p', 'takes 6 bytes but data_offsets span 8');
  });

  test('malformed entry', () => {
    const path = handMade({ p: { dtype: 'F32', shape: [-1], data_offsets: [0, 4] } }, new Uint8Array(4));
    throwsWith(() => openSafetensors(path), ModelFormatError, path, 'tensor p', 'shape');
  });

  test('unsupported dtype fails only when that tensor is read', () => {
    const path = handMade(
      { ids: { dtype: 'I64', shape: [2], data_offsets: [0, 16] }, w: { dtype: 'F32', shape: [1], data_offsets: [16, 20] } },
      new Uint8Array([...new Uint8Array(16), ...f32([2.5])]),
    );
    const file = openSafetensors(path);
    assert.deepEqual([...file.read('w')], [...f32([2.5])]);
    throwsWith(() => file.tensor('ids'), UnsupportedModelError, path, 'ids', 'I64');
  });

  test('absent tensor', () => {
    const path = fresh('abs.safetensors');
    writeSafetensors(path, [A]);
    throwsWith(() => openSafetensors(path).read('zz'), ModelFormatError, path, 'zz');
  });
});

describe('openSafetensorsModel', () => {
  const tensors = [A, B, C, { ...A, name: 'd' }, { ...B, name: 'e' }];

  test('single model.safetensors', () => {
    const dir = fresh('single');
    mkdirSync(dir);
    writeSafetensors(join(dir, 'model.safetensors'), tensors);
    const model = openSafetensorsModel(dir);
    assert.equal(model.files.length, 1);
    assert.deepEqual(model.names().sort(), ['a', 'b', 'c', 'd', 'e']);
    assert.deepEqual([...model.fileOf('c')!.read('c')], [...C.data]);
  });

  test('sharded through the index, lazily', () => {
    const dir = fresh('sharded');
    const shards = writeShardedSafetensors(dir, tensors, 3);
    assert.deepEqual(shards, ['model-00001-of-00003.safetensors', 'model-00002-of-00003.safetensors', 'model-00003-of-00003.safetensors']);
    const index = JSON.parse(readFileSync(join(dir, 'model.safetensors.index.json'), 'utf8')) as {
      metadata: { total_size: number };
      weight_map: Record<string, string>;
    };
    assert.equal(index.metadata.total_size, 24 + 8 + 12 + 24 + 8);
    // floor(s*5/3) splits: [a], [b, c], [d, e]
    assert.deepEqual(index.weight_map, { a: shards[0], b: shards[1], c: shards[1], d: shards[2], e: shards[2] });
    const model = openSafetensorsModel(dir);
    assert.equal(model.files.length, 3);
    const headers = model.bytesRead;
    for (const t of tensors) {
      const file = model.fileOf(t.name)!;
      assert.equal(file.path, join(dir, index.weight_map[t.name]!));
      assert.deepEqual([...file.read(t.name)], [...t.data]);
    }
    assert.equal(model.bytesRead - headers, index.metadata.total_size);
    assert.equal(model.has('nothing'), false);
  });

  test('missing shard is named', () => {
    const dir = fresh('missing-shard');
    const shards = writeShardedSafetensors(dir, tensors, 2);
    rmSync(join(dir, shards[1]!));
    throwsWith(() => openSafetensorsModel(dir), ModelFormatError, join(dir, shards[1]!), 'missing shard', 'model.safetensors.index.json');
  });

  test('index placing a tensor in a shard that lacks it', () => {
    const dir = fresh('bad-index');
    const shards = writeShardedSafetensors(dir, tensors, 2);
    const indexPath = join(dir, 'model.safetensors.index.json');
    const index = JSON.parse(readFileSync(indexPath, 'utf8')) as { weight_map: Record<string, string> };
    index.weight_map['a'] = shards[1]!;
    writeFileSync(indexPath, JSON.stringify(index));
    throwsWith(() => openSafetensorsModel(dir), ModelFormatError, join(dir, shards[1]!), 'no tensor a');
  });

  test('folder without weights', () => {
    const dir = fresh('empty');
    mkdirSync(dir);
    throwsWith(() => openSafetensorsModel(dir), ModelFormatError, dir, 'no model.safetensors or model.safetensors.index.json');
    writeFileSync(join(dir, 'pytorch_model.bin'), '');
    throwsWith(() => openSafetensorsModel(dir), ModelFormatError, 'PyTorch .bin');
  });

  test('missing folder', () => {
    const dir = join(root, 'no-such-folder');
    throwsWith(() => openSafetensorsModel(dir), ModelFormatError, dir, 'no such folder');
  });
});
