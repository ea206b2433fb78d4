// Gemma 4 through the serving engine on the gemma4 fixture (layers S,S,G,S,S,G; the last 3
// share the KV of layers 1 and 2, as llama.cpp's reuse rule says): the shared-KV layers take
// no cache memory, and every request gets llama.cpp's greedy tokens alone, in a batch, under
// chunked prefill, with the sliding-window pool and without it (tokens and logits).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { testKernels } from '../../fixtures/native.js';
import type { EngineCore } from '../../../src/engine/engine.js';
import { resolveEngineConfig } from '../../../src/engine/options.js';
import { KvCache } from '../../../src/model/kv-cache.js';
import { GOLDEN_DIR } from '../../fixtures/index.js';
import { fixtureEngine, fixtureModel } from '../../fixtures/engine-run.js';
import { readGolden } from '../../fixtures/golden.js';
import type { GoldenPrompt } from '../../fixtures/golden.js';
import { LLAMA_CPP_TOLERANCE } from '../../fixtures/tolerance.js';
import { GEMMA4_FIXTURE_CONFIG, SHAPES } from '../../fixtures/recipe.js';
import { resolveSamplingParams } from '../../../src/engine/sampling-params.js';

const FIXTURE = 'gemma4-q8_0';
const kernels = testKernels();
const BLOCK = 4;
const golden = () => readGolden(GOLDEN_DIR, FIXTURE).prompts;

/**
 * Runs requests (id → prompt) greedily to the end; returns each one's tokens, and checks the
 * logits of every step against llama.cpp's (`expected`, by request id): the tokens alone
 * barely move when a layer reads the wrong cache, the logits do.
 */
function run(e: EngineCore, prompts: Map<string, readonly number[]>, maxTokens: number, expected?: Map<string, GoldenPrompt>): Map<string, number[]> {
  const steps = new Map<string, number>();
  e.logitsTap = (id, _index, row) => {
    const golden = expected?.get(id);
    const step = steps.get(id) ?? 0;
    steps.set(id, step + 1);
    if (!golden) return;
    const g = golden.steps[step]!;
    const scale = Math.max(...g.values.map(Math.abs));
    const error = Math.max(...g.ids.map((t, i) => Math.abs(row[t]! - g.values[i]!))) / scale;
    assert.ok(error <= LLAMA_CPP_TOLERANCE.Q8_0, `${id} step ${step}: logits differ from llama.cpp's by ${error.toExponential(2)} of max |logit|`);
  };
  for (const [id, promptIds] of prompts) {
    const refused = e.add({ type: 'add', id, promptIds: Int32Array.from(promptIds), params: resolveSamplingParams({ temperature: 0, maxTokens, ignoreEos: true }), arrivalTime: 0 });
    assert.equal(refused, undefined, refused?.error);
  }
  const out = new Map<string, number[]>();
  for (let step = 0; e.hasWork; step++) {
    for (const d of e.step()?.deltas ?? []) out.set(d.id, [...(out.get(d.id) ?? []), ...d.tokenIds]);
    e.scheduler.blocks.assertConsistent();
    e.swaBlocks?.manager.assertConsistent();
    assert.ok(step < 5000, 'the engine keeps making progress');
  }
  return out;
}

describe('Gemma 4 in the engine', () => {
  it('shared-KV layers read layers 1 and 2 and take no KV memory', () => {
    const config = fixtureModel(FIXTURE).config;
    assert.deepEqual(config.kvSource, [0, 1, 2, 1, 1, 2]);
    // bytes per token from the fixture's recipe, f16 k and v: the 3 layers that keep KV
    // (2 sliding of 2 heads × 64, 1 global of 1 head × 128); all 6 would take twice that
    const c = GEMMA4_FIXTURE_CONFIG;
    const sliding = 2 * (2 * c.swaKvHeads * c.swaHeadDim * 2);
    const global = 2 * SHAPES.gemma4.numKvHeads * SHAPES.gemma4.headDim * 2;
    assert.equal(KvCache.bytesPerToken(config, 'f16'), sliding + global);
    assert.equal(KvCache.bytesPerToken(config, 'f16', 'sliding'), sliding);
    const memory = 160 * BLOCK * (sliding + global);
    const shared = resolveEngineConfig({ model: '', blockSize: BLOCK, kvCacheMemory: memory, swaPool: false }, config, []);
    assert.equal(shared.numBlocks, 160, "the budget holds 160 blocks of the 3 KV-keeping layers");
    // the arrays: shared layers alias their source's, so the cache holds exactly that memory
    const kv = KvCache.forModel(config, shared.numBlocks, BLOCK, 'f16');
    assert.equal(kv.layers[3], kv.layers[1]);
    assert.equal(kv.layers[4], kv.layers[1]);
    assert.equal(kv.layers[5], kv.layers[2]);
    const bytes = [...new Set(kv.layers)].reduce((sum, l) => sum + l.k.byteLength + l.v.byteLength, 0);
    assert.equal(bytes, memory);
    assert.deepEqual([kv.layerShape(1).headDim, kv.layerShape(1).numKvHeads, kv.layerShape(2).headDim, kv.layerShape(2).numKvHeads], [64, 2, 128, 1]);
  });

  it("alone, batched and with chunked prefill, in the sliding-window pool: llama.cpp's tokens", () => {
    const prompts = golden();
    for (const [i, p] of prompts.entries()) {
      const alone = run(fixtureEngine(FIXTURE, kernels, { blockSize: BLOCK, kvCacheMemory: '4MiB' }), new Map([[`a${i}`, p.promptIds]]), 32, new Map([[`a${i}`, p]]));
      assert.deepEqual(alone.get(`a${i}`), p.tokens, `prompt ${i} alone`);
    }
    // both at once, prefill in chunks of 5 tokens: chunks cross the window (12) and the blocks (4)
    const e = fixtureEngine(FIXTURE, kernels, { blockSize: BLOCK, kvCacheMemory: '4MiB', maxNumBatchedTokens: 5, maxNumSeqs: 2 });
    assert.ok(e.swaBlocks, 'the sliding-window layers have a pool of their own');
    const both = run(e, new Map(prompts.map((p, i) => [`b${i}`, p.promptIds])), 32, new Map(prompts.map((p, i) => [`b${i}`, p])));
    prompts.forEach((p, i) => assert.deepEqual(both.get(`b${i}`), p.tokens, `prompt ${i} batched, chunked`));
  });

  it("every layer in the global blocks (swaPool off), batched and chunked: llama.cpp's tokens", () => {
    const prompts = golden();
    const e = fixtureEngine(FIXTURE, kernels, { blockSize: BLOCK, kvCacheMemory: '4MiB', maxNumBatchedTokens: 7, swaPool: false });
    assert.equal(e.swaBlocks, undefined);
    const out = run(e, new Map(prompts.map((p, i) => [`c${i}`, p.promptIds])), 32, new Map(prompts.map((p, i) => [`c${i}`, p])));
    prompts.forEach((p, i) => assert.deepEqual(out.get(`c${i}`), p.tokens, `prompt ${i}`));
  });
});
