// The engine under batching gives each request the tokens it would get alone: checked
// against llama.cpp's goldens (greedy) and against runs alone (seeded sampling), with
// small token budgets (chunked prefill), prefix-cache hits, preemption, aborts and n > 1.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { referenceKernels } from '../../src/kernels/reference.js';
import { loadNativeKernels } from '../../src/kernels/native.js';
import type { Qwen3MoeArchitecture } from '../../src/model/arch/qwen3moe.js';
import type { LoadedModel } from '../../src/model/load.js';
import { EngineCore } from '../../src/engine/engine.js';
import type { EngineOptions } from '../../src/engine/options.js';
import type { RequestDelta } from '../../src/engine/protocol.js';
import type { SamplingParamsInput } from '../../src/engine/sampling-params.js';
import { GOLDEN_DIR } from '../fixtures/index.js';
import { fixtureEngine, fixtureModel } from '../fixtures/engine-run.js';
import { readGolden } from '../fixtures/golden.js';
import { resolveSamplingParams } from '../../src/engine/sampling-params.js';

const FIXTURE = 'llama-q8_0';
const model = (): LoadedModel => fixtureModel(FIXTURE);

function engine(opts: Partial<EngineOptions> = {}): EngineCore {
  return fixtureEngine(FIXTURE, referenceKernels, { kvCacheMemory: '64MiB', ...opts });
}

interface Outcome {
  tokens: number[];
  finishReason?: string;
  cachedPromptTokens?: number;
  newlyCachedPromptTokens?: number;
  error?: string;
}

/** Steps the engine until idle; per request id and completion index, what came out. */
function runToEnd(e: EngineCore, onStep?: (step: number) => void): Map<string, Outcome> {
  const out = new Map<string, Outcome>();
  const record = (d: RequestDelta) => {
    const key = `${d.id}#${d.index}`;
    const o = out.get(key) ?? { tokens: [] };
    o.tokens.push(...d.tokenIds);
    o.finishReason ??= d.finishReason;
    o.cachedPromptTokens ??= d.cachedPromptTokens;
    o.newlyCachedPromptTokens ??= d.newlyCachedPromptTokens;
    o.error ??= d.error;
    out.set(key, o);
  };
  for (let step = 0; e.hasWork; step++) {
    onStep?.(step);
    e.step()?.deltas.forEach(record);
    assert.ok(step < 10_000, 'the engine keeps making progress');
  }
  return out;
}

let nextId = 0;
function add(e: EngineCore, promptIds: readonly number[], params: SamplingParamsInput, id = `r${nextId++}`): string {
  const refused = e.add({ type: 'add', id, promptIds: Int32Array.from(promptIds), params: resolveSamplingParams(params), arrivalTime: 0 });
  assert.equal(refused, undefined, refused?.error);
  return id;
}

const greedy = (maxTokens: number): SamplingParamsInput => ({ temperature: 0, maxTokens, ignoreEos: true });
const goldens = () => readGolden(GOLDEN_DIR, FIXTURE).prompts;
/** other traffic: prompts of assorted lengths */
const noise = (i: number) => Array.from({ length: 3 + ((i * 37) % 41) }, (_, k) => 3 + ((i * 131 + k * 17) % 500));

function assertAllBlocksFree(e: EngineCore): void {
  assert.equal(e.blocks.usage(), 0, 'no block is held');
  assert.equal(e.blocks.numFreeBlocks, e.blocks.numBlocks, 'every block is free or evictable');
}

describe('engine correctness under batching', () => {
  for (const budget of [2048, 7, 16]) {
    it(`greedy tokens equal llama.cpp's inside a batch of others (token budget ${budget})`, () => {
      const e = engine({ maxNumBatchedTokens: budget });
      const ids = goldens().map((g) => add(e, g.promptIds, greedy(g.tokens.length)));
      for (let i = 0; i < 9; i++) add(e, noise(i), greedy(5 + i * 3));
      const out = runToEnd(e);
      goldens().forEach((g, i) => assert.deepEqual(out.get(`${ids[i]}#0`)!.tokens, g.tokens));
      assertAllBlocksFree(e);
    });
  }

  it('prefix-cache hits give the same tokens and are reported', () => {
    const e = engine();
    const g = goldens()[1]!;
    const first = add(e, g.promptIds, greedy(g.tokens.length));
    const before = runToEnd(e);
    const second = add(e, g.promptIds, greedy(g.tokens.length));
    const after = runToEnd(e);
    assert.deepEqual(before.get(`${first}#0`)!.tokens, g.tokens);
    assert.deepEqual(after.get(`${second}#0`)!.tokens, g.tokens);
    const blockSize = e.config.blockSize;
    assert.equal(after.get(`${second}#0`)!.cachedPromptTokens, Math.floor((g.promptIds.length - 1) / blockSize) * blockSize);
    assert.ok(e.blocks.stats.hits > 0);
  });

  it('the first delta says how many prompt tokens entered the prefix cache: full blocks not cached before, counted across prefill chunks', () => {
    for (const enablePrefixCaching of [true, false]) {
      const e = engine({ maxNumBatchedTokens: 7, enablePrefixCaching });
      const bs = e.config.blockSize;
      const prompt = Array.from({ length: 3 * bs }, (_, k) => 3 + ((k * 29) % 400)); // whole blocks
      const run = (ids: number[]): Outcome => {
        const id = add(e, ids, greedy(2));
        return runToEnd(e).get(`${id}#0`)!;
      };
      // [prompt, cached, newly cached]
      const cases: [number[], number, number][] = enablePrefixCaching
        ? [
            [prompt, 0, 3 * bs], // fresh: every block enters
            [prompt, 2 * bs, 0], // again: the last block is computed anew (a hit leaves a token to compute), but it was cached
            [[...prompt, 7, 8, 9], 3 * bs, 0], // a partial block more: nothing enters
            [[...prompt, ...prompt.slice(0, bs)], 3 * bs, bs], // a full block more: it enters
          ]
        : [[prompt, 0, 0], [prompt, 0, 0]];
      for (const [ids, cached, newly] of cases) {
        const o = run(ids);
        assert.deepEqual([o.cachedPromptTokens, o.newlyCachedPromptTokens], [cached, newly], `${ids.length} tokens, prefix caching ${enablePrefixCaching}`);
      }
    }
  });

  it('preempted requests are recomputed and still give their tokens', () => {
    // 20 blocks of 4 tokens (1 KiB of K/V a token) hold one request to its end, not both
    const e = engine({ kvCacheMemory: 20 * 4 * 1024, blockSize: 4, maxModelLen: 80 });
    const ids = goldens().map((g) => add(e, g.promptIds, greedy(g.tokens.length)));
    const out = runToEnd(e);
    goldens().forEach((g, i) => assert.deepEqual(out.get(`${ids[i]}#0`)!.tokens, g.tokens));
    assert.ok(e.scheduler.numPreemptions > 0, 'the cache was small enough to preempt');
    assertAllBlocksFree(e);
  });

  it('a seeded sampled request is reproducible in any batch', () => {
    const sampled: SamplingParamsInput = { temperature: 1.5, topK: 0, topP: 1, seed: 1234, maxTokens: 20, ignoreEos: true };
    const alone = engine();
    const a = add(alone, noise(3), sampled);
    const aloneOut = runToEnd(alone).get(`${a}#0`)!.tokens;
    const busy = engine({ maxNumBatchedTokens: 9 });
    for (let i = 0; i < 6; i++) add(busy, noise(i + 10), { ...sampled, seed: i });
    const b = add(busy, noise(3), sampled);
    assert.deepEqual(runToEnd(busy).get(`${b}#0`)!.tokens, aloneOut);
  });

  it('aborting while waiting, mid-prefill and mid-decode returns every block', () => {
    const e = engine({ maxNumBatchedTokens: 8, maxNumSeqs: 2 });
    const long = Array.from({ length: 40 }, (_, k) => 5 + k);
    const decoding = add(e, noise(1), greedy(50));
    const prefilling = add(e, long, greedy(50));
    const waiting = add(e, noise(2), greedy(50));
    const out = runToEnd(e, (step) => {
      if (step === 2) e.abort([prefilling, waiting]);
      if (step === 6) e.abort([decoding]);
    });
    for (const id of [decoding, prefilling, waiting]) assert.equal(out.get(`${id}#0`)?.finishReason, 'abort', id);
    assert.ok(out.get(`${decoding}#0`)!.tokens.length > 0, 'the decode had started');
    assertAllBlocksFree(e);
  });

  it('n > 1 completions share the prompt blocks', () => {
    const e = engine({ enablePrefixCaching: false });
    const prompt = Array.from({ length: 40 }, (_, k) => 7 + k);
    const id = add(e, prompt, { temperature: 1, seed: 5, n: 3, maxTokens: 6, ignoreEos: true });
    let mostInUseWithThree = 0;
    const out = runToEnd(e, (step) => {
      // from the second step on, three sequences of 41+ tokens (3 blocks each) are live
      if (step >= 2 && e.scheduler.numRunning === 3) {
        mostInUseWithThree = Math.max(mostInUseWithThree, e.blocks.numBlocks - e.blocks.numFreeBlocks);
      }
    });
    assert.ok(mostInUseWithThree > 0, 'three completions ran together');
    // shared: 2 full prompt blocks + 3 own tail blocks (copy-on-write) = 5, not 9
    assert.ok(mostInUseWithThree <= 5, `${mostInUseWithThree} blocks in use`);
    for (let i = 0; i < 3; i++) assert.equal(out.get(`${id}#${i}`)!.tokens.length, 6);
    assertAllBlocksFree(e);
  });

  it('refuses what can never run with an error, and keeps serving', () => {
    const e = engine({ maxModelLen: 64 });
    const refused = e.add({ type: 'add', id: 'long', promptIds: new Int32Array(64).fill(5), params: resolveSamplingParams(greedy(4)), arrivalTime: 0 });
    assert.match(refused?.error ?? '', /64 tokens/);
    const ok = add(e, noise(4), greedy(3));
    assert.equal(runToEnd(e).get(`${ok}#0`)!.tokens.length, 3);
  });

  it('refuses at start a KV cache smaller than one context, naming both sizes and the options', () => {
    // 1 KiB of K/V per token (as above): 160 tokens of cache against a 512-token context
    assert.throws(
      () => engine({ kvCacheMemory: 160 * 1024, blockSize: 16 }),
      /the KV cache holds 160 tokens .*--kv-cache-memory 163840.*fewer than one context of 512 tokens.*raise --kv-cache-memory to at least 0\.5 MiB or lower --max-model-len to at most 160/,
    );
    assert.equal(engine({ kvCacheMemory: 160 * 1024, blockSize: 16, maxModelLen: 160 }).config.numBlocks, 10);
  });
});

describe('prompt logprobs', () => {
  it('are the same in any chunking, skip the prefix cache, and agree with llama.cpp at the last position', () => {
    const g = goldens()[0]!;
    const prompt = [...g.promptIds, g.tokens[0]!]; // the last prompt token is llama.cpp's first greedy token
    const results = [2048, 5].map((budget) => {
      const e = engine({ maxNumBatchedTokens: budget });
      // a cached copy of the prompt must not be used: every position needs its logits
      add(e, prompt, greedy(1));
      runToEnd(e);
      const id = add(e, prompt, { ...greedy(1), promptLogprobs: 2 });
      let lp: Float32Array | undefined;
      let top: Int32Array | undefined;
      for (let step = 0; e.hasWork; step++) {
        for (const d of e.step()?.deltas ?? []) {
          if (d.id === id && d.promptLogprobs) {
            lp = d.promptLogprobs;
            top = d.promptTopIds;
          }
        }
      }
      return { lp: lp!, top: top! };
    });
    assert.equal(results[0]!.lp.length, prompt.length - 1);
    assert.deepEqual([...results[1]!.lp].map((x) => x.toFixed(4)), [...results[0]!.lp].map((x) => x.toFixed(4)), 'chunked prefill gives the same');
    // llama.cpp's logits after the golden prompt, log-softmaxed, at its greedy token
    const { ids, values } = g.steps[0]!;
    const max = Math.max(...values);
    const logZ = max + Math.log(values.reduce((s, v) => s + Math.exp(v - max), 0));
    const expected = values[ids.indexOf(g.tokens[0]!)]! - logZ;
    assert.ok(Math.abs(results[0]!.lp[prompt.length - 2]! - expected) < 0.05, `${results[0]!.lp[prompt.length - 2]} vs ${expected}`);
    assert.equal(results[0]!.top[(prompt.length - 2) * 2], g.tokens[0], 'greedy token is the top alternative');
  });
});

describe('mixture of experts under batching (qwen3moe-q8_0: tokens of several sequences share experts)', () => {
  const MOE = 'qwen3moe-q8_0';
  const native = loadNativeKernels();
  for (const [name, kernels] of [['reference', referenceKernels], ['native', native]] as const) {
    for (const budget of [2048, 7]) {
      it(`${name}: greedy tokens equal llama.cpp's (alone: the agreement tests) inside a batch of others (token budget ${budget})`, { skip: kernels ? false : 'native core unavailable' }, () => {
        const prompts = readGolden(GOLDEN_DIR, MOE).prompts;
        const e = fixtureEngine(MOE, kernels!, { kvCacheMemory: '64MiB', maxNumBatchedTokens: budget });
        const ids = prompts.map((g) => add(e, g.promptIds, greedy(g.tokens.length)));
        for (let i = 0; i < 7; i++) add(e, noise(i), greedy(5 + i * 3));
        const out = runToEnd(e);
        prompts.forEach((g, i) => assert.deepEqual(out.get(`${ids[i]}#0`)!.tokens, g.tokens));
        const arch = e.runner.arch as Qwen3MoeArchitecture; // expertLoad is on every Architecture; minRoutingGap on this one
        const load = arch.expertLoad.map((l) => l.reduce((a, b) => a + b, 0));
        assert.ok(load.every((tokens) => tokens > 0 && tokens === load[0]), `every layer routed the same tokens: ${load.join(', ')}`);
        assert.ok(arch.expertLoad.every((l) => l.every((tokens) => tokens > 0)), 'every expert was used');
        assert.ok(arch.minRoutingGap > 1, `routing margin ${arch.minRoutingGap}`);
        assertAllBlocksFree(e);
      });
    }
  }
});
