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
