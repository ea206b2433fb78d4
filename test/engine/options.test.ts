// resolveEngineConfig: the context fitted to the KV cache when --max-model-len is not given.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MIN_FITTED_CONTEXT, resolveEngineConfig } from '../../src/engine/options.js';
import { KvCache } from '../../src/model/kv-cache.js';
import { fixtureModel } from '../fixtures/engine-run.js';

const FIXTURE = 'llama-q8_0';

describe('the context without --max-model-len', () => {
  const base = fixtureModel(FIXTURE).config;
  // a model whose own context (131,072 tokens, as Llama 3.2's) is more than the cache holds
  const long = { ...base, contextLength: 131072 };
  const perBlock = KvCache.bytesPerToken(long, 'f16') * 16;

  it('is lowered to the whole blocks the cache holds, with a note giving both numbers and how to get more', () => {
    const c = resolveEngineConfig({ model: '', kvCacheMemory: perBlock * 600 + 7, blockSize: 16 }, long, []);
    assert.equal(c.maxModelLen, 600 * 16);
    assert.equal(c.numBlocks, 600);
    assert.match(c.contextNote ?? '', /context 9600 tokens, lowered from the model's 131072 .*raise --kv-cache-memory to at least .* MiB, or set --max-model-len/);
  });

  it('stays the model\'s when the cache holds it (no note)', () => {
    const c = resolveEngineConfig({ model: '', kvCacheMemory: perBlock * 8192, blockSize: 16 }, long, []);
    assert.equal(c.maxModelLen, 131072);
    assert.equal(c.contextNote, undefined);
  });

  it(`is never fitted below ${MIN_FITTED_CONTEXT} tokens: a smaller cache is refused`, () => {
    assert.throws(
      () => resolveEngineConfig({ model: '', kvCacheMemory: perBlock * (MIN_FITTED_CONTEXT / 16 - 1), blockSize: 16 }, long, []),
      /fewer than one context of 131072 tokens.*never below 4096 tokens/,
    );
    assert.equal(resolveEngineConfig({ model: '', kvCacheMemory: perBlock * (MIN_FITTED_CONTEXT / 16), blockSize: 16 }, long, []).maxModelLen, MIN_FITTED_CONTEXT);
  });

  it('an explicit --max-model-len that does not fit is still refused', () => {
    assert.throws(
      () => resolveEngineConfig({ model: '', kvCacheMemory: perBlock * 600, blockSize: 16, maxModelLen: 131072 }, long, []),
      /the KV cache holds 9600 tokens .*fewer than one context of 131072 tokens/,
    );
  });
});

describe('--kv-cache-dtype', () => {
  const model = { ...fixtureModel(FIXTURE).config, contextLength: 131072 };
  const memory = 64 * 2 ** 20;
  const resolve = (kvCacheDtype?: string) => resolveEngineConfig({ model: '', kvCacheMemory: memory, blockSize: 16, maxModelLen: 512, ...(kvCacheDtype !== undefined && { kvCacheDtype: kvCacheDtype as 'auto' }) }, model, []);

  it("auto is f16, today's cache; the default", () => {
    assert.equal(resolve('auto').kvDtype, 'f16');
    assert.equal(resolve().kvDtype, 'f16');
    assert.equal(resolve().numBlocks, resolve('f16').numBlocks);
  });

  it('q8_0 (34 bytes a 32 values) holds 64/34 ≈ 1.88× the tokens of f16 in the same memory', () => {
    const [f16, q8] = [resolve('f16').numBlocks, resolve('q8_0').numBlocks];
    // bytes a token: 2 (k and v) · layers · kv heads · head size · 2 for f16, · 34/32 for q8_0
    const values = 2 * model.numLayers * model.numKvHeads * model.headDim;
    assert.equal(KvCache.bytesPerToken(model, 'f16'), values * 2);
    assert.equal(KvCache.bytesPerToken(model, 'q8_0'), (values / 32) * 34);
    assert.equal(f16, Math.floor(memory / (values * 2 * 16)));
    assert.equal(q8, Math.floor(memory / ((values / 32) * 34 * 16)));
    assert.ok(Math.abs(q8 / f16 - 64 / 34) < 0.01, `${q8} / ${f16}`);
    // the cache built for it takes the bytes the budget counted
    const kv = KvCache.forModel(model, 4, 16, 'q8_0');
    assert.equal(kv.bytes, 4 * 16 * KvCache.bytesPerToken(model, 'q8_0'));
  });

  it('q4_0 (18 bytes a 32 values) holds 64/18 ≈ 3.56× the tokens of f16', () => {
    const values = 2 * model.numLayers * model.numKvHeads * model.headDim;
    assert.equal(KvCache.bytesPerToken(model, 'q4_0'), (values / 32) * 18);
    // (never more than --max-num-seqs 256 contexts of 512 need: 8192 blocks)
    assert.equal(resolve('q4_0').numBlocks, Math.min(8192, Math.floor(memory / ((values / 32) * 18 * 16))));
    assert.equal(KvCache.forModel(model, 4, 16, 'q4_0').bytes, 4 * 16 * KvCache.bytesPerToken(model, 'q4_0'));
  });

  it('refuses other values in one line naming the choices', () => {
    assert.throws(() => resolve('fp8'), (e: Error) => e.message === '--kv-cache-dtype must be one of auto, f16, f32, q8_0, q4_0, got "fp8"');
  });

  it('refuses q8_0 for head sizes that are not whole blocks of 32, as llama.cpp does (stories260K: 8)', () => {
    assert.throws(() => resolveEngineConfig({ model: '', kvCacheMemory: memory, kvCacheDtype: 'q8_0', maxModelLen: 512 }, { ...model, headDim: 8 }, []), /--kv-cache-dtype q8_0 needs attention head sizes that are a multiple of 32 .*head size is 8: use f16/);
    assert.throws(() => resolveEngineConfig({ model: '', kvCacheMemory: memory, kvCacheDtype: 'q4_0', maxModelLen: 512 }, { ...model, headDim: 48 }, []), /--kv-cache-dtype q4_0 needs .*head size is 48/);
  });
});
