// Speculative decoding (prompt lookup): the config as vLLM reads it, the drafter, the
// verifier's output distribution, and the engine: greedy output token for token the same as
// without speculation (and as llama.cpp's goldens) alone, in batches, with chunked prefill,
// prefix-cache hits, stops, logprobs, n > 1 and aborts; seeded sampling draws the same tokens.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { join } from 'node:path';
import { referenceKernels } from '../../../src/kernels/reference.js';
import { loadModel } from '../../../src/model/load.js';
import type { LoadedModel } from '../../../src/model/load.js';
import { EngineCore } from '../../../src/engine/engine.js';
import { resolveEngineConfig } from '../../../src/engine/options.js';
import type { EngineOptions } from '../../../src/engine/options.js';
import type { SamplingParamsInput } from '../../../src/engine/sampling-params.js';
import { parseSpeculativeConfig, DEFAULT_DISABLE_BY_BATCH_SIZE } from '../../../src/engine/spec/config.js';
import type { SpeculativeConfigInput } from '../../../src/engine/spec/config.js';
import { proposeNgram } from '../../../src/engine/spec/ngram-drafter.js';
import { RequestState } from '../../../src/engine/request-state.js';
import { Rng } from '../../../src/engine/rng.js';
import { GOLDEN_DIR, PROJECT_ROOT, ggufFixturePath } from '../../fixtures/index.js';
import { readGolden } from '../../fixtures/golden.js';
import { addRequest as add, runToEnd } from '../../fixtures/spec-run.js';
import type { SpecRun } from '../../fixtures/spec-run.js';
import { GGUF_FIXTURES } from '../../fixtures/recipe.js';
import { resolveSamplingParams } from '../../../src/engine/sampling-params.js';

const NGRAM: SpeculativeConfigInput = { method: 'ngram', num_speculative_tokens: 4, prompt_lookup_max: 4, prompt_lookup_min: 1, disable_by_batch_size: 64 };

describe('--speculative-config', () => {
  it('reads vLLM\'s ngram fields and defaults', () => {
    assert.deepEqual(parseSpeculativeConfig('{"method": "ngram", "num_speculative_tokens": 3}'), {
      method: 'ngram',
      numSpeculativeTokens: 3,
      promptLookupMax: 5,
      promptLookupMin: 5,
      disableByBatchSize: DEFAULT_DISABLE_BY_BATCH_SIZE,
      notes: [],
    });
    const onlyMax = parseSpeculativeConfig({ method: 'ngram', num_speculative_tokens: 2, prompt_lookup_max: 3 });
    assert.equal(onlyMax.method === 'ngram' && onlyMax.promptLookupMin, 3);
    const onlyMin = parseSpeculativeConfig({ method: 'ngram', num_speculative_tokens: 2, prompt_lookup_min: 2 });
    assert.equal(onlyMin.method === 'ngram' && onlyMin.promptLookupMax, 2);
  });

  it('refuses bad input naming the option and the field', () => {
    const bad: [string, RegExp][] = [
      ['{', /--speculative-config: not valid JSON/],
      ['[1]', /--speculative-config must be a JSON object/],
      ['{"num_speculative_tokens": 3}', /"method" is required/],
      ['{"method": "eagle", "num_speculative_tokens": 3}', /"method" must be "ngram" or "draft_model", got "eagle"/],
      ['{"method": "ngram"}', /"num_speculative_tokens" is required/],
      ['{"method": "ngram", "num_speculative_tokens": 0}', /"num_speculative_tokens" must be an integer in \[1, 64\], got 0/],
      ['{"method": "ngram", "num_speculative_tokens": 2.5}', /"num_speculative_tokens" must be an integer/],
      ['{"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_max": "4"}', /"prompt_lookup_max" must be an integer in \[1, ∞\], got "4"/],
      ['{"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_min": 5, "prompt_lookup_max": 3}', /"prompt_lookup_min" \(5\) must not exceed "prompt_lookup_max" \(3\)/],
      ['{"method": "ngram", "num_speculative_tokens": 2, "lookahead": 3}', /unknown field "lookahead"/],
      ['{"method": "ngram", "num_speculative_tokens": 2, "model": "x.gguf"}', /"model" does not apply to method "ngram"/],
      ['{"method": "ngram", "num_speculative_tokens": 2, "draft_tensor_parallel_size": 1}', /"draft_tensor_parallel_size" does not apply to method "ngram"/],
      ['{"method": "ngram", "num_speculative_tokens": 2, "disable_by_batch_size": 0}', /"disable_by_batch_size" must be an integer in \[1/],
    ];
    for (const [json, re] of bad) assert.throws(() => parseSpeculativeConfig(json), re, json);
  });
});

describe('prompt lookup', () => {
  const lookup = { max: 3, min: 1 };
  it('proposes what followed the latest occurrence of the longest recurring suffix with k followers', () => {
    //            0  1  2  3  4  5  6  7  8  9
    const toks = [1, 2, 3, 9, 9, 1, 2, 3, 7, 5, 1, 2, 3];
    // suffix [1,2,3] last occurred at 5..7, followed by 7, 5, 1, 2
    assert.deepEqual(proposeNgram(toks, lookup, 4), [7, 5, 1, 2]);
    assert.deepEqual(proposeNgram(toks, lookup, 2), [7, 5]);
    // only a shorter suffix recurs: [4] → none; [.., 2, 4]: [4] never seen before, so nothing
    assert.deepEqual(proposeNgram([1, 2, 3, 4], lookup, 3), []);
    // n = 1 fallback: suffix [2] occurred at 1, followed by 3
    assert.deepEqual(proposeNgram([1, 2, 3, 5, 2], lookup, 3), [3, 5, 2]);
    // the follower may run up to the end of the sequence, not past it
    assert.deepEqual(proposeNgram([4, 4, 4], { max: 2, min: 2 }, 5), [4]);
    // a repeating pattern: not the overlapping latest match (one period), the latest with k followers
    assert.deepEqual(proposeNgram([5, 4, 4, 4, 4, 4, 4], { max: 2, min: 2 }, 3), [4, 4, 4]);
    assert.deepEqual(proposeNgram([1, 2, 1, 2, 1, 2, 1, 2], { max: 2, min: 2 }, 4), [1, 2, 1, 2]);
    // the latest match has too few followers: an earlier one with k
    assert.deepEqual(proposeNgram([7, 8, 9, 7, 8, 0, 7, 8], { max: 2, min: 2 }, 4), [9, 7, 8, 0]);
    // no match has k followers: the one with the most
    assert.deepEqual(proposeNgram([7, 8, 9, 7, 8], { max: 2, min: 2 }, 4), [9, 7, 8]);
    assert.deepEqual(proposeNgram([1, 2, 3, 1, 2], { max: 2, min: 2 }, 0), []);
    // min above what recurs: nothing
    assert.deepEqual(proposeNgram([1, 2, 3, 5, 2], { max: 3, min: 2 }, 3), []);
  });
});

describe('verifying a draft (point-mass rejection sampling)', () => {
  // a Markov chain over 4 tokens: the logits of the next token depend on the last one
  const T = [
    [2.0, 0.5, -1.0, 0.1],
    [-0.5, 1.5, 0.7, 0.0],
    [0.3, 0.3, 0.3, 1.2],
    [1.0, -2.0, 0.5, 0.8],
  ];
  const probs = T.map((row) => {
    const z = row.reduce((a, x) => a + Math.exp(x), 0);
    return row.map((x) => Math.exp(x) / z);
  });

  it('emits sequences with the target distribution whatever the drafts (chi-square over 3-token outputs)', () => {
    const draws = 12_000;
    const counts = new Array<number>(64).fill(0);
    const draftRng = new Rng(99);
    for (let d = 0; d < draws; d++) {
      const state = new RequestState({ type: 'add', id: `c${d}`, promptIds: Int32Array.from([0]), params: resolveSamplingParams({ temperature: 1, topK: 0, topP: 1, seed: d, maxTokens: 3, ignoreEos: true }), arrivalTime: 0 }, 4, { maxModelLen: 64, eosTokenIds: [], logprobsMode: 'raw_logprobs' });
      const seq = state.sequences[0]!;
      while (seq.numOutput < 3 && !state.finishReason(seq)) {
        // arbitrary drafts, chosen before the target's draw: 1 to 3 tokens
        const draft = Array.from({ length: 1 + (draftRng.nextUint32() % 3) }, () => draftRng.nextUint32() % 4);
        const rows = new Float32Array((draft.length + 1) * 4);
        [seq.tokens[seq.tokens.length - 1]!, ...draft].forEach((prev, i) => rows.set(T[prev]!, i * 4));
        state.sampleDraft(seq, rows, draft, 0);
      }
      const out = seq.tokens.slice(1);
      assert.equal(out.length, 3, 'max_tokens holds inside a draft');
      counts[out[0]! * 16 + out[1]! * 4 + out[2]!]!++;
    }
    let chi2 = 0;
    for (let k = 0; k < 64; k++) {
      const [a, b, c] = [k >> 4, (k >> 2) & 3, k & 3];
      const expected = draws * probs[0]![a]! * probs[a]![b]! * probs[b]![c]!;
      chi2 += (counts[k]! - expected) ** 2 / expected;
    }
    // 63 degrees of freedom: the 0.999 quantile is about 103 (Wilson–Hilferty)
    assert.ok(chi2 < chiSquareQuantile(63, 3.09), `chi-square ${chi2.toFixed(1)}`);
  });

  it('greedy accepts the argmax only and stops at the first mismatch', () => {
    const state = new RequestState({ type: 'add', id: 'g', promptIds: Int32Array.from([0]), params: resolveSamplingParams({ temperature: 0, maxTokens: 10, ignoreEos: true }), arrivalTime: 0 }, 4, { maxModelLen: 64, eosTokenIds: [], logprobsMode: 'raw_logprobs' });
    const seq = state.sequences[0]!;
    // argmax chain from 0: 0 → 0 → 0; draft [0, 2, 0] is right once, then wrong
    const draft = [0, 2, 0];
    const rows = new Float32Array(16);
    [0, ...draft].forEach((prev, i) => rows.set(T[prev]!, i * 4));
    assert.equal(state.sampleDraft(seq, rows, draft, 0), 1);
    assert.deepEqual(seq.tokens, [0, 0, 0]);
  });
});

/** the upper quantile of chi-square with k degrees of freedom at z standard deviations (Wilson–Hilferty) */
function chiSquareQuantile(k: number, z: number): number {
  const h = 2 / (9 * k);
  return k * (1 - h + z * Math.sqrt(h)) ** 3;
}

let stories: LoadedModel | undefined;
const storiesModel = (): LoadedModel => (stories ??= loadModel(join(PROJECT_ROOT, 'models', 'stories260K.gguf')));
let biased: LoadedModel | undefined;
const biasedModel = (): LoadedModel => (biased ??= loadModel(ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === 'llama-q8_0')!)));

function engine(m: LoadedModel, opts: Partial<EngineOptions> = {}): EngineCore {
  const config = resolveEngineConfig({ model: '', kvCacheMemory: '16MiB', ...opts }, m.config, [...m.tokenizer.stopIds]);
  return new EngineCore(m, referenceKernels, config);
}

const greedy = (maxTokens: number, extra: SamplingParamsInput = {}): SamplingParamsInput => ({ temperature: 0, maxTokens, ignoreEos: true, ...extra });
const tokensOf = (run: SpecRun, id: string): number[] => run.out.get(`${id}#0`)!.tokens;

function assertAllBlocksFree(e: EngineCore): void {
  assert.equal(e.blocks.usage(), 0, 'no block is held');
}

/** prompts that invite copying (stories260K's vocabulary) */
const COPY_PROMPTS = [
  'Once upon a time, there was a little girl named Lily. She loved to play with her toys. One day, Lily',
  'Tom had a red ball. Tom had a red ball. Tom had a red ball. Tom',
  'The cat sat on the mat. The dog sat on the log. The cat sat on the',
];

describe('speculative decoding in the engine', () => {
  it('greedy: the same tokens as without speculation, with drafts accepted and rejected', () => {
    const m = storiesModel();
    const prompts = COPY_PROMPTS.map((p) => m.tokenizer.encode(p, { addSpecial: true }));
    const plain = engine(m);
    const spec = engine(m, { speculativeConfig: NGRAM });
    for (const [i, p] of prompts.entries()) {
      add(plain, p, greedy(80), `p${i}`);
      const before = runToEnd(plain);
      add(spec, p, greedy(80), `p${i}`);
      const after = runToEnd(spec);
      assert.deepEqual(tokensOf(after, `p${i}`), tokensOf(before, `p${i}`), COPY_PROMPTS[i]);
      assert.ok(after.accepted > 0 && after.accepted < after.draftTokens, `${after.accepted} of ${after.draftTokens} draft tokens accepted`);
    }
    assertAllBlocksFree(spec);
  });

  it('frees the blocks taken only for rejected draft tokens after every step', () => {
    const m = storiesModel();
    const p = m.tokenizer.encode(COPY_PROMPTS[0]!, { addSpecial: true });
    const e = engine(m, { speculativeConfig: { ...NGRAM, num_speculative_tokens: 8 }, blockSize: 2, enablePrefixCaching: false });
    add(e, p, greedy(60));
    let emitted = 0;
    let rejectedSteps = 0;
    while (e.hasWork) {
      const out = e.step()!;
      emitted += out.deltas.reduce((n, d) => n + d.tokenIds.length, 0);
      if (out.deltas.some((d) => d.finishReason)) break;
      // K/V held for the prompt and every emitted token but the newest (computed next step)
      const held = e.blocks.numBlocks - e.blocks.numFreeBlocks;
      assert.equal(held, Math.ceil((p.length + emitted - 1) / 2), `after ${emitted} tokens`);
      if (out.stats.spec && out.stats.spec.numAcceptedTokens < out.stats.spec.numDraftTokens) rejectedSteps++;
    }
    assert.ok(rejectedSteps > 0, 'some drafts were rejected');
  });

  for (const budget of [2048, 7]) {
    it(`greedy: llama.cpp's goldens inside a batch of speculating and non-speculating requests (token budget ${budget})`, () => {
      const m = biasedModel();
      const g = readGolden(GOLDEN_DIR, 'llama-q8_0').prompts;
      const e = engine(m, { maxNumBatchedTokens: budget, speculativeConfig: NGRAM, kvCacheMemory: '64MiB' });
      const ids = g.map((x) => add(e, x.promptIds, greedy(x.tokens.length)));
      // repeating prompts (drafts from the prompt), and a penalized request that never drafts
      const loop = Array.from({ length: 30 }, (_, k) => 3 + (k % 6));
      for (let i = 0; i < 3; i++) add(e, loop.slice(i), greedy(20));
      add(e, loop, greedy(12, { repetitionPenalty: 1.3 }));
      const run = runToEnd(e);
      g.forEach((x, i) => assert.deepEqual(tokensOf(run, ids[i]!), x.tokens));
      assert.ok(run.drafts > 0, 'sequences drafted');
      assertAllBlocksFree(e);
    });
  }

  it('greedy with prefix-cache hits: the same tokens, and only accepted tokens are cached', () => {
    const m = storiesModel();
    const p = m.tokenizer.encode(COPY_PROMPTS[1]!, { addSpecial: true });
    const plain = engine(m);
    const pid = add(plain, p, greedy(60));
    const expected = tokensOf(runToEnd(plain), pid);
    const e = engine(m, { speculativeConfig: NGRAM, blockSize: 4 });
    const first = add(e, p, greedy(60));
    const a = runToEnd(e);
    // the whole first completion as a prompt: every cached block must hold the real tokens
    const again = add(e, [...p, ...expected.slice(0, 40)], greedy(20));
    const second = add(e, p, greedy(60));
    const b = runToEnd(e);
    assert.deepEqual(tokensOf(a, first), expected);
    assert.deepEqual(tokensOf(b, second), expected);
    assert.deepEqual(tokensOf(b, again), expected.slice(40, 60));
    assert.ok(b.out.get(`${again}#0`)!.cachedPromptTokens! >= 40, `${b.out.get(`${again}#0`)!.cachedPromptTokens} cached`);
    assertAllBlocksFree(e);
  });

  it('stops inside an accepted draft at max_tokens and at a stop id, emitting nothing past it', () => {
    const m = storiesModel();
    const p = m.tokenizer.encode(COPY_PROMPTS[1]!, { addSpecial: true });
    const plain = engine(m);
    const pid = add(plain, p, greedy(60));
    const full = tokensOf(runToEnd(plain), pid);
    const e = engine(m, { speculativeConfig: NGRAM });
    const lengths = [1, 2, 3, 5, 8, 13, 21];
    const ids = lengths.map((n) => add(e, p, greedy(n)));
    const stopAt = 17;
    const stopId = full[stopAt]!;
    const stopped = add(e, p, greedy(60, { stopTokenIds: [stopId] }));
    const run = runToEnd(e);
    lengths.forEach((n, i) => assert.deepEqual(tokensOf(run, ids[i]!), full.slice(0, n), `max_tokens ${n}`));
    const first = full.indexOf(stopId);
    assert.deepEqual(tokensOf(run, stopped), full.slice(0, first), 'ends at the first stop id, which is not sent');
    assert.equal(run.out.get(`${stopped}#0`)!.finishReason, 'stop');
    assert.ok(run.accepted > 0);
    assertAllBlocksFree(e);
  });

  it('logprobs of the accepted tokens are those without speculation', () => {
    const m = storiesModel();
    const p = m.tokenizer.encode(COPY_PROMPTS[2]!, { addSpecial: true });
    const results = [undefined, NGRAM].map((spec) => {
      const e = engine(m, spec ? { speculativeConfig: spec } : {});
      const id = add(e, p, greedy(40, { logprobs: 2 }));
      return runToEnd(e).out.get(`${id}#0`)!;
    });
    assert.deepEqual(results[1]!.tokens, results[0]!.tokens);
    assert.equal(results[1]!.logprobs.length, 40);
    results[1]!.logprobs.forEach((lp, i) => assert.ok(Math.abs(lp - results[0]!.logprobs[i]!) < 1e-4, `token ${i}: ${lp} vs ${results[0]!.logprobs[i]}`));
  });

  it('seeded sampling draws the same tokens with and without speculation, n > 1 included', () => {
    const m = storiesModel();
    const p = m.tokenizer.encode(COPY_PROMPTS[0]!, { addSpecial: true });
    const sampled: SamplingParamsInput = { temperature: 0.7, topK: 0, topP: 0.95, seed: 77, n: 3, maxTokens: 50, ignoreEos: true };
    const runs = [undefined, NGRAM].map((spec) => {
      const e = engine(m, spec ? { speculativeConfig: spec } : {});
      const id = add(e, p, sampled);
      const run = runToEnd(e);
      assertAllBlocksFree(e);
      return { run, id };
    });
    for (let i = 0; i < 3; i++) assert.deepEqual(runs[1]!.run.out.get(`${runs[1]!.id}#${i}`)!.tokens, runs[0]!.run.out.get(`${runs[0]!.id}#${i}`)!.tokens, `completion ${i}`);
    assert.ok(runs[1]!.run.accepted > 0, 'drafts were accepted');
  });

  it('greedy under preemption (a cache too small for all): the same tokens, drafts never preempt', () => {
    const m = storiesModel();
    const prompts = COPY_PROMPTS.map((p) => m.tokenizer.encode(p, { addSpecial: true }));
    const run = (spec?: SpeculativeConfigInput) => {
      // 40 blocks of 4 tokens: fewer than the three requests need together
      const e = engine(m, { blockSize: 4, kvCacheMemory: 40 * 4 * m.config.numLayers * m.config.numKvHeads * m.config.headDim * 2 * 2, maxModelLen: 160, ...(spec && { speculativeConfig: spec }) });
      const ids = prompts.map((p) => add(e, p, greedy(60)));
      const r = runToEnd(e);
      assertAllBlocksFree(e);
      return { tokens: ids.map((id) => tokensOf(r, id)), preemptions: e.scheduler.numPreemptions, accepted: r.accepted };
    };
    const plain = run();
    const spec = run(NGRAM);
    assert.ok(spec.preemptions > 0 && spec.accepted > 0, `${spec.preemptions} preemptions, ${spec.accepted} accepted`);
    assert.deepEqual(spec.tokens, plain.tokens);
  });

  it('aborting a speculating sequence returns every block', () => {
    const m = storiesModel();
    const e = engine(m, { speculativeConfig: NGRAM });
    const p = m.tokenizer.encode(COPY_PROMPTS[1]!, { addSpecial: true });
    const ids = [0, 1, 2].map(() => add(e, p, greedy(100)));
    const run = runToEnd(e, (step) => {
      if (step === 4) e.abort([ids[0]!]);
      if (step === 9) e.abort([ids[1]!, ids[2]!]);
    });
    for (const id of ids) assert.equal(run.out.get(`${id}#0`)!.finishReason, 'abort');
    assert.ok(run.drafts > 0);
    assertAllBlocksFree(e);
  });

  it('stops drafting above disable_by_batch_size running sequences', () => {
    const m = storiesModel();
    const e = engine(m, { speculativeConfig: { ...NGRAM, disable_by_batch_size: 2 } });
    const p = m.tokenizer.encode(COPY_PROMPTS[1]!, { addSpecial: true });
    for (let i = 0; i < 3; i++) add(e, p, greedy(30));
    let draftedWithThree = false;
    for (let step = 0; e.hasWork; step++) {
      const running = e.scheduler.numRunning;
      const out = e.step();
      if (running === 3 && out?.stats.spec) draftedWithThree = true;
    }
    assert.equal(draftedWithThree, false);
    const alone = add(e, p, greedy(30));
    assert.ok(runToEnd(e).drafts > 0, `${alone} drafts alone`);
  });

  it('is refused with a sliding-window pool of its own', () => {
    const m = storiesModel();
    const swa = { ...m.config, slidingWindow: { size: 8, layers: Array.from({ length: m.config.numLayers }, (_, i) => i % 2 === 0), ropeBase: 10000 } };
    assert.throws(() => resolveEngineConfig({ model: '', kvCacheMemory: '16MiB', speculativeConfig: NGRAM }, swa, []), /--speculative-config: not available while the sliding-window layers keep a pool/);
  });

  it('is refused for a hybrid model with recurrent layers', () => {
    const hybrid = loadModel(ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === 'qwen35-f16')!));
    assert.throws(() => resolveEngineConfig({ model: '', kvCacheMemory: '256MiB', speculativeConfig: NGRAM }, hybrid.config, []), /--speculative-config: not available for hybrid models/);
  });
});
