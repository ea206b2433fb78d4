// Qwen3.5-MoE (qwen35moe): the Gated DeltaNet hybrid with routed experts and a sigmoid-gated
// shared expert in every layer. Against llama.cpp's goldens on both kernel sets (greedy tokens
// equal, logits within the weight type's tolerance, every router margin above 1), the
// multi-token-prediction block of the Q8_0 file skipped, and in the engine: llama.cpp's greedy
// tokens inside a batch of other sequences (batch invariance), whatever the token budget.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Kernels } from '../../../src/kernels/index.js';
import { loadNativeKernels } from '../../../src/kernels/native.js';
import { referenceKernels } from '../../../src/kernels/reference.js';
import type { Qwen35Architecture } from '../../../src/model/arch/qwen35.js';
import { EngineCore } from '../../../src/engine/engine.js';
import { GOLDEN_DIR } from '../../fixtures/index.js';
import { fixtureEngine, fixtureModel, runGreedy } from '../../fixtures/engine-run.js';
import { readGolden } from '../../fixtures/golden.js';
import { GGUF_FIXTURES, QWEN35MOE_FIXTURE_CONFIG } from '../../fixtures/recipe.js';
import { LLAMA_CPP_TOLERANCE } from '../../fixtures/tolerance.js';

const native = loadNativeKernels();
const KERNELS: [string, Kernels | undefined][] = [['reference', referenceKernels], ['native', native]];
const FIXTURES = GGUF_FIXTURES.filter((f) => f.shape.arch === 'qwen35moe');

/** the architecture an engine runs (the hybrid's MoE counters and routing margin) */
const archOf = (e: EngineCore): Qwen35Architecture => e.runner.arch as Qwen35Architecture;

describe('qwen35moe: config', () => {
  it('the Q8_0 file has 5 blocks, the last a multi-token-prediction block, which loom skips', () => {
    const c = fixtureModel('qwen35moe-q8_0').config;
    assert.equal(c.arch, 'qwen35moe');
    assert.equal(c.numLayers, 4);
    assert.deepEqual(c.linearAttention?.layers, [true, true, true, false]);
    const x = QWEN35MOE_FIXTURE_CONFIG;
    assert.deepEqual(c.moe, { numExperts: x.expertCount, numExpertsUsed: x.expertUsedCount, expertFfnSize: x.expertFfnSize, normTopK: true, sharedFfnSize: x.sharedFfnSize });
  });
});

describe("qwen35moe: llama.cpp's greedy tokens and logits", () => {
  for (const f of FIXTURES) {
    for (const [name, kernels] of KERNELS) {
      it(`${f.name} (${name})`, { skip: kernels ? false : 'native core unavailable' }, (t) => {
        const model = fixtureModel(f.name);
        const tolerance = LLAMA_CPP_TOLERANCE[f.weightType];
        let worst = 0;
        for (const g of readGolden(GOLDEN_DIR, f.name).prompts) {
          assert.deepEqual(model.tokenizer.encode(g.prompt, { addSpecial: true }), g.promptIds);
          const run = runGreedy(model, kernels!, g.promptIds, g.tokens.length);
          run.tokens.forEach((id, step) => {
            const s = g.steps[step]!;
            const scale = Math.max(...s.values.map(Math.abs));
            const error = Math.max(...s.ids.map((tok, i) => Math.abs(run.logits[step]![tok]! - s.values[i]!))) / scale;
            worst = Math.max(worst, error);
            assert.ok(error <= tolerance, `step ${step}: logits differ by ${error.toExponential(2)} of max |logit| (allowed ${tolerance})`);
            assert.equal(id, g.tokens[step], `greedy token ${step}`);
          });
        }
        t.diagnostic(`worst logit error ${worst.toExponential(2)} of max |logit| (tolerance ${tolerance})`);
      });
    }
  }
});

describe('qwen35moe under batching (qwen35moe-q8_0: tokens of several sequences share experts)', () => {
  const MOE = 'qwen35moe-q8_0';
  /** other traffic: prompts of assorted lengths */
  const noise = (i: number): number[] => Array.from({ length: 3 + ((i * 37) % 41) }, (_, k) => 3 + ((i * 131 + k * 17) % 500));
  for (const [name, kernels] of KERNELS) {
    for (const budget of [2048, 7]) {
      it(`${name}: llama.cpp's greedy tokens inside a batch of 7 others (token budget ${budget})`, { skip: kernels ? false : 'native core unavailable' }, () => {
        const prompts = readGolden(GOLDEN_DIR, MOE).prompts;
        const e = fixtureEngine(MOE, kernels!, { kvCacheMemory: '64MiB', maxNumBatchedTokens: budget });
        archOf(e).resetExpertLoad();
        const add = (id: string, promptIds: readonly number[], maxTokens: number): void => {
          const refused = e.add({ type: 'add', id, promptIds: Int32Array.from(promptIds), params: { temperature: 0, maxTokens, ignoreEos: true }, arrivalTime: 0 });
          assert.equal(refused, undefined, refused?.error);
        };
        prompts.forEach((g, i) => add(`g${i}`, g.promptIds, g.tokens.length));
        for (let i = 0; i < 7; i++) add(`n${i}`, noise(i), 5 + i * 3);
        const out = new Map<string, number[]>();
        for (let step = 0; e.hasWork; step++) {
          for (const d of e.step()?.deltas ?? []) out.set(d.id, [...(out.get(d.id) ?? []), ...d.tokenIds]);
          assert.ok(step < 5000, 'the engine keeps making progress');
        }
        prompts.forEach((g, i) => assert.deepEqual(out.get(`g${i}`), g.tokens));
        const arch = archOf(e);
        const load = arch.expertLoad!.map((l) => l.reduce((a, b) => a + b, 0));
        assert.equal(load.length, 4);
        assert.ok(load.every((tokens) => tokens > 0 && tokens === load[0]), `every layer routed the same tokens: ${load.join(', ')}`);
        assert.ok(arch.expertLoad!.every((l) => l.every((tokens) => tokens > 0)), 'every expert was used');
        assert.ok(arch.minRoutingGap > 1, `routing margin ${arch.minRoutingGap}`);
        assert.equal(e.blocks.usage(), 0, 'no block is held');
      });
    }
  }
});
