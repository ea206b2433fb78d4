// A KV block file is loaded only whole and only into the cache it was written from.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { chainHash, decodeBlockFile, encodeBlockFile, modelIdentity } from '../../src/engine/kv-block-file.js';

const KEY = { model: 'abc', dtype: 'f16', blockSize: 16, layout: '8,8' };
const PAYLOAD = [Uint8Array.from([1, 2, 3, 4, 5, 6, 7, 8]), Uint8Array.from([9, 10, 11, 12, 13, 14, 15, 16])];

describe('KV block files', () => {
  it('round-trip their payload', () => {
    const d = decodeBlockFile(encodeBlockFile(KEY, 'h1', PAYLOAD), KEY, 'h1');
    assert.ok('payload' in d);
    assert.deepEqual([...d.payload], Array.from({ length: 16 }, (_, i) => i + 1));
  });

  it('refuse a file written for another model, dtype, block size, layout or block', () => {
    const file = encodeBlockFile(KEY, 'h1', PAYLOAD);
    for (const [key, hash, why] of [
      [{ ...KEY, model: 'xyz' }, 'h1', /model abc/],
      [{ ...KEY, dtype: 'q8_0' }, 'h1', /dtype f16/],
      [{ ...KEY, blockSize: 32 }, 'h1', /blockSize 16/],
      [{ ...KEY, layout: '8,8,8,8' }, 'h1', /layout/],
      [KEY, 'h2', /holds block h1/],
    ] as const) {
      const d = decodeBlockFile(file, key, hash);
      assert.ok('refused' in d && why.test(d.refused), JSON.stringify(d));
    }
  });

  it('refuse partial, corrupt, other-version and foreign files', () => {
    const file = encodeBlockFile(KEY, 'h1', PAYLOAD);
    const refused = (f: Buffer) => {
      const d = decodeBlockFile(f, KEY, 'h1');
      return 'refused' in d ? d.refused : 'loaded';
    };
    for (let cut = 0; cut < file.length; cut += 7) assert.notEqual(refused(file.subarray(0, cut)), 'loaded', `cut at ${cut}`);
    for (let i = 0; i < file.length; i++) {
      const f = Buffer.from(file);
      f[i] = f[i]! ^ 1;
      assert.notEqual(refused(f), 'loaded', `byte ${i} flipped`);
    }
    const v2 = Buffer.from(file);
    v2.writeUInt32LE(2, 8);
    assert.match(refused(v2), /format version 2/);
    assert.match(refused(Buffer.from('GGUF and then something else entirely')), /not a loom KV block file/);
  });

  it('chain hashes name the whole prefix and its root', () => {
    const t = [1, 2, 3, 4, 5, 6, 7, 8];
    const a = chainHash(0, t, 0, 4);
    assert.equal(chainHash(0, t, 0, 4), a);
    assert.notEqual(chainHash(1, t, 0, 4), a, 'another salt root');
    assert.notEqual(chainHash(a, t, 4, 4), chainHash(chainHash(0, [9, 2, 3, 4], 0, 4), t, 4, 4), 'another parent');
    assert.notEqual(chainHash(0, [1, 2, 3, 5], 0, 4), a);
  });

  it("a model's identity follows its file's content and mtime", () => {
    const dir = mkdtempSync(join(tmpdir(), 'loom-modelid-'));
    try {
      const f = join(dir, 'm.gguf');
      writeFileSync(f, 'GGUF one');
      utimesSync(f, 1000, 1000);
      const id = modelIdentity(f);
      assert.equal(modelIdentity(f), id);
      utimesSync(f, 2000, 2000);
      assert.notEqual(modelIdentity(f), id);
      writeFileSync(f, 'GGUF two');
      utimesSync(f, 1000, 1000);
      assert.notEqual(modelIdentity(f), id);
      assert.match(modelIdentity(dir), /^[0-9a-f]{16}$/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
