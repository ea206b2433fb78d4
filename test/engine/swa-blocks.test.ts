// The sliding-window pool (engine/swa-blocks.ts) on the gemma3 fixture (window 8, blocks of
// 4 here): a sequence far past its window holds only its window's blocks in that pool, and
// the engine still gives every request llama.cpp's greedy tokens (goldens) under chunked
// prefill, batching, preemption and n > 1.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { testKernels } from '../fixtures/native.js';
import { EngineCore } from '../../src/engine/engine.js';
import { resolveEngineConfig } from '../../src/engine/options.js';
import type { EngineOptions } from '../../src/engine/options.js';
import { SwaBlocks } from '../../src/engine/swa-blocks.js';
import { KvCache } from '../../src/model/kv-cache.js';
import { loadModel } from '../../src/model/load.js';
import type { LoadedModel } from '../../src/model/load.js';
import { GOLDEN_DIR, ggufFixturePath } from '../fixtures/index.js';
import { readGolden } from '../fixtures/golden.js';
import { GGUF_FIXTURES } from '../fixtures/recipe.js';
import { resolveSamplingParams } from '../../src/engine/sampling-params.js';

const FIXTURE = 'gemma3-q8_0';
let cached: LoadedModel | undefined;
const model = (): LoadedModel => (cached ??= loadModel(ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === FIXTURE)!)));
const kernels = testKernels();
const BLOCK = 4;

function engine(opts: Partial<EngineOptions>): EngineCore {
  const m = model();
  const config = resolveEngineConfig({ model: '', blockSize: BLOCK, ...opts }, m.config, [...m.tokenizer.stopIds]);
  return new EngineCore(m, kernels, config);
}

/** Runs requests (id → prompt) greedily to the end; returns each completion's tokens. */
function run(e: EngineCore, prompts: Map<string, readonly number[]>, maxTokens: number, n = 1, onStep?: () => void): Map<string, number[]> {
  for (const [id, promptIds] of prompts) {
    const refused = e.add({ type: 'add', id, promptIds: Int32Array.from(promptIds), params: resolveSamplingParams({ temperature: 0, maxTokens, ignoreEos: true, n }), arrivalTime: 0 });
    assert.equal(refused, undefined, refused?.error);
  }
  const out = new Map<string, number[]>();
  for (let step = 0; e.hasWork; step++) {
    for (const d of e.step()?.deltas ?? []) out.set(`${d.id}#${d.index}`, [...(out.get(`${d.id}#${d.index}`) ?? []), ...d.tokenIds]);
    e.scheduler.blocks.assertConsistent();
    e.swaBlocks?.manager.assertConsistent();
    onStep?.();
    assert.ok(step < 5000, 'the engine keeps making progress');
  }
  return out;
}

describe('sliding-window KV pool', () => {
  const golden = () => readGolden(GOLDEN_DIR, FIXTURE).prompts;

  it('sizes the pool for the windows (and the windows prefix caching pins)', () => {
    const m = model();
    const perSeq = SwaBlocks.blocksPerSequence(8, BLOCK); // 3
    const off = resolveEngineConfig({ model: '', blockSize: BLOCK, kvCacheMemory: '8MiB', maxNumSeqs: 4, maxNumBatchedTokens: 64, enablePrefixCaching: false }, m.config, []);
    assert.equal(off.swaBlocks, 4 * (perSeq + 1) + 64 / BLOCK);
    assert.equal(off.stateCheckpoints, undefined);
    // with prefix caching: window checkpoints, two per sequence, each pinning one window's blocks
    const on = resolveEngineConfig({ model: '', blockSize: BLOCK, kvCacheMemory: '8MiB', maxNumSeqs: 4, maxNumBatchedTokens: 64 }, m.config, []);
    assert.equal(on.enablePrefixCaching, true);
    assert.equal(on.stateCheckpoints, 8);
    assert.equal(on.swaBlocks, 4 * (perSeq + 1) + 64 / BLOCK + 8 * perSeq);
    const c = off;
    // 5 of 6 layers slide: the pool costs 5 layers × 16 blocks where a full cache would cost 5 × numBlocks
    const layerBlock = (KvCache.bytesPerToken(m.config, 'f16') / 6) * BLOCK;
    assert.ok(c.numBlocks * layerBlock + c.swaBlocks! * 5 * layerBlock <= 8 * 2 ** 20);
    assert.ok(c.numBlocks > 6 * c.swaBlocks!, `${c.numBlocks} global blocks, ${c.swaBlocks} sliding`);
    const shared = resolveEngineConfig({ model: '', blockSize: BLOCK, kvCacheMemory: '8MiB', swaPool: false }, m.config, []);
    assert.equal(shared.swaBlocks, 0);
    assert.equal(shared.enablePrefixCaching, true);
  });

  it("a sequence past its window holds only the window's blocks there; tokens stay llama.cpp's", () => {
    const e = engine({ kvCacheMemory: '8MiB', maxNumSeqs: 4, maxNumBatchedTokens: 7 });
    const prompts = golden();
    let most = 0;
    const out = run(e, new Map(prompts.map((p, i) => [`g${i}`, p.promptIds])), 32, 1, () => {
      for (const seq of [...(e.scheduler as unknown as { running: { swa: { blockTable: number[] }; numComputed: number }[] }).running]) {
        const held = seq.swa.blockTable.filter((b) => b >= 0).length;
        // between steps: the window before the next query, plus the block it writes into
        most = Math.max(most, held);
        assert.ok(held <= SwaBlocks.blocksPerSequence(8, BLOCK) + 1, `${held} sliding-window blocks held at ${seq.numComputed} tokens`);
      }
    });
    prompts.forEach((p, i) => assert.deepEqual(out.get(`g${i}#0`), p.tokens, `prompt ${i}`));
    assert.ok(most >= 3, 'the windows were reached');
    assert.ok(e.windowCheckpoints!.numUsed > 0, 'the prefix cache pins windows');
    e.resetPrefixCache();
    assert.equal(e.windowCheckpoints!.numUsed, 0);
    assert.equal(e.swaBlocks!.manager.numFreeBlocks, e.swaBlocks!.manager.numBlocks, 'every block back when done and the cache reset');
  });

  it('preemption when the pools run short, and n > 1 forks share the window blocks', () => {
    // 14 blocks in each pool (56 tokens): four 50-token sequences cannot all stay
    const layerBlock = (KvCache.bytesPerToken(model().config, 'f16') / 6) * BLOCK;
    const e = engine({ kvCacheMemory: 14 * 6 * layerBlock, maxNumSeqs: 4, maxNumBatchedTokens: 16, maxModelLen: 56 });
    assert.deepEqual([e.config.numBlocks, e.config.swaBlocks], [14, 14]);
    const p = golden()[1]!;
    const out = run(e, new Map([['a', p.promptIds], ['b', p.promptIds]]), 20, 2);
    for (const key of ['a#0', 'a#1', 'b#0', 'b#1']) assert.deepEqual(out.get(key), p.tokens.slice(0, 20), key);
    assert.ok(e.scheduler.numPreemptions > 0, 'some sequence was preempted');
  });
});
