// The KV cache's element types through whole models: a q8_0 cache (--kv-cache-dtype q8_0; q4_0 too) in
// every architecture that keeps a paged cache gives the f16 cache's greedy tokens on the
// fixtures (their margins are wide: kv-dtype-accuracy.ts measures how far the distributions
// move), keeps a sequence's tokens the same alone and in a batch, and is sized in bytes as
// the budget counts it; copy-on-write copies whole q8_0 blocks.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EngineCore, now } from '../../src/engine/engine.js';
import type { EngineOptions } from '../../src/engine/options.js';
import { GREEDY } from '../../src/engine/sampler.js';
import type { KvDtype } from '../../src/kernels/index.js';
import { loadNativeKernels } from '../../src/kernels/native.js';
import { KvCache } from '../../src/model/kv-cache.js';
import { fixtureEngine, fixtureModel } from '../fixtures/engine-run.js';
import { readGolden } from '../fixtures/golden.js';
import { GOLDEN_DIR } from '../fixtures/index.js';
import { rngFor } from '../fixtures/kernel-cases.js';

const native = loadNativeKernels();
const skip = native ? false : 'native core unavailable';

/** one fixture of every architecture family with a paged KV cache: dense, GQA, GELU and
 *  partial RoPE, soft-caps and sliding windows (Gemma 2/3, in their own pool), Gemma 4's two
 *  head sizes and shared KV, Qwen3.5's attention layers beside its recurrent ones, MoE */
const FIXTURES = ['llama-q8_0', 'qwen3-q8_0', 'gpt2-f16', 'phi3-q8_0', 'gemma2-q8_0', 'gemma3-q8_0', 'gemma4-q8_0', 'qwen35-q8_0', 'qwen3moe-q8_0', 'qwen35moe-q8_0', 'gemma4moe-q8_0'];

/** greedy tokens of each prompt, all in one engine (`together`) or each in an engine of its own */
function greedy(name: string, dtype: KvDtype, prompts: readonly (readonly number[])[], maxTokens: number, together: boolean, opts: Partial<EngineOptions> = {}): number[][] {
  const run = (ps: readonly (readonly number[])[]): number[][] => {
    const e: EngineCore = fixtureEngine(name, native!, { kvCacheMemory: '64MiB', kvCacheDtype: dtype, ...opts });
    const out = ps.map((): number[] => []);
    ps.forEach((ids, i) => {
      const refused = e.add({ type: 'add', id: `r${i}`, promptIds: Int32Array.from(ids), params: { ...GREEDY, ignoreEos: true, maxTokens }, arrivalTime: now() });
      assert.equal(refused, undefined);
    });
    while (e.hasWork) for (const d of e.step()?.deltas ?? []) out[Number(d.id.slice(1))]!.push(...d.tokenIds);
    return out;
  };
  return together ? run(prompts) : prompts.flatMap((p) => run([p]));
}

describe('a q8_0 KV cache in whole models', { skip }, () => {
  for (const name of FIXTURES) {
    it(`${name}: the f16 cache's greedy tokens`, () => {
      const prompts = readGolden(GOLDEN_DIR, name).prompts.map((g) => g.promptIds);
      assert.deepEqual(greedy(name, 'q8_0', prompts, 32, false), greedy(name, 'f16', prompts, 32, false));
    });
  }

  // q4_0 moves the distributions ~10-1000× more than q8_0 (kv-dtype-accuracy.ts; as llama.cpp's
  // q4_0 does): gpt2-f16's greedy path parts from f16's (a top-1 change teacher-forced in both)
  for (const name of FIXTURES.filter((n) => n !== 'gpt2-f16')) {
    it(`${name}: a q4_0 cache gives the f16 cache's greedy tokens too`, () => {
      const prompts = readGolden(GOLDEN_DIR, name).prompts.map((g) => g.promptIds);
      assert.deepEqual(greedy(name, 'q4_0', prompts, 32, false), greedy(name, 'f16', prompts, 32, false));
    });
  }

  // a token budget of 7 cuts the prompts into chunks that share steps with the other's decodes
  for (const name of ['llama-q8_0', 'gemma3-q8_0', 'gemma4-q8_0', 'qwen35-q8_0', 'qwen3moe-q8_0']) {
    it(`${name}: each sequence's tokens the same alone and in a batch (token budget 7)`, () => {
      const goldens = readGolden(GOLDEN_DIR, name).prompts.map((g) => g.promptIds);
      const noise = [3, 17, 40].map((n, i) => Array.from({ length: n }, (_, k) => 5 + ((i * 131 + k * 17) % 200)));
      const prompts = [...goldens, ...noise];
      assert.deepEqual(greedy(name, 'q8_0', prompts, 24, true, { maxNumBatchedTokens: 7 }), greedy(name, 'q8_0', prompts, 24, false));
    });
  }
  it('gpt2-f16, q4_0: each sequence\'s tokens the same alone and in a batch (token budget 7)', () => {
    const prompts = [...readGolden(GOLDEN_DIR, 'gpt2-f16').prompts.map((g) => g.promptIds), [5, 9, 13, 200, 7]];
    assert.deepEqual(greedy('gpt2-f16', 'q4_0', prompts, 24, true, { maxNumBatchedTokens: 7 }), greedy('gpt2-f16', 'q4_0', prompts, 24, false));
  });
});

describe('the q8_0 cache arrays', () => {
  const config = fixtureModel('gemma4-q8_0').config;

  it('are block_q8_0 bytes: 34 a 32 values, as bytesPerToken counts them (both pools, shared-KV layers once)', () => {
    const kv = KvCache.forModel(config, 6, 16, 'q8_0', 4);
    const global = KvCache.bytesPerToken(config, 'q8_0', 'global');
    const sliding = KvCache.bytesPerToken(config, 'q8_0', 'sliding');
    assert.equal(kv.bytes, 6 * 16 * global + 4 * 16 * sliding);
    assert.ok(kv.layers.every((l) => l.k instanceof Uint8Array && l.v instanceof Uint8Array));
    assert.equal(KvCache.bytesPerToken(config, 'f16') * 34, KvCache.bytesPerToken(config, 'q8_0') * 64);
  });

  it('copy-on-write copies whole blocks of every layer', { skip }, () => {
    const kv = KvCache.forModel(config, 4, 16, 'q8_0');
    const li = kv.layers.findIndex((_, i) => kv.layerShape(i).numKvHeads > 0);
    const s = kv.layerShape(li);
    const width = s.numKvHeads * s.headDim;
    const rng = rngFor('q8 cow');
    const slots = Int32Array.from({ length: 16 }, (_, i) => 16 + i); // block 1
    native!.writeKv(kv.layers[li]!, s, rng.fill(16 * width, 1), rng.fill(16 * width, 1), slots);
    kv.copyBlocks([{ src: 1, dst: 3 }]);
    const blockBytes = (16 * width / 32) * 34;
    for (const a of [kv.layers[li]!.k, kv.layers[li]!.v]) {
      assert.deepEqual(a.subarray(3 * blockBytes, 4 * blockBytes), a.subarray(blockBytes, 2 * blockBytes));
      assert.ok(a.subarray(blockBytes, 2 * blockBytes).some((b) => b !== 0));
    }
  });
});
