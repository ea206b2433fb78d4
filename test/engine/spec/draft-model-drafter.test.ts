// Speculative decoding with a draft model (vLLM's "draft_model"): the config, the vocabulary
// check, rejection sampling against a draft distribution q (chi-square), and the engine:
// greedy output token for token as without speculation (and as llama.cpp's goldens) with a
// draft that agrees often (the target's weights quantized to Q4_0), one that rarely agrees (a
// different random model) and the target itself (every draft accepted); composed with
// chunked prefill, batches, preemption, prefix caching, logprobs, stops, abort and n > 1,
// the draft cache's blocks all returned.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { testKernels } from '../../fixtures/native.js';
import type { LoadedModel } from '../../../src/model/load.js';
import { EngineCore } from '../../../src/engine/engine.js';
import { createEngineCore } from '../../../src/engine/create.js';
import { resolveEngineConfig } from '../../../src/engine/options.js';
import type { EngineOptions } from '../../../src/engine/options.js';
import type { SamplingParamsInput } from '../../../src/engine/sampling-params.js';
import { RequestSampler } from '../../../src/engine/sampler.js';
import { parseSpeculativeConfig } from '../../../src/engine/spec/config.js';
import type { SpeculativeConfigInput } from '../../../src/engine/spec/config.js';
import { checkDraftVocabulary } from '../../../src/engine/spec/draft-vocab.js';
import { RequestState } from '../../../src/engine/request-state.js';
import { Rng } from '../../../src/engine/rng.js';
import { KvCache } from '../../../src/model/kv-cache.js';
import { GOLDEN_DIR, ggufFixturePath, hfFixturePaths } from '../../fixtures/index.js';
import { fixtureModel } from '../../fixtures/engine-run.js';
import { readGolden } from '../../fixtures/golden.js';
import { addRequest as add, runToEnd } from '../../fixtures/spec-run.js';
import type { SpecRun } from '../../fixtures/spec-run.js';
import { HF_FIXTURES, SHAPES } from '../../fixtures/recipe.js';
import type { GGUFFixture } from '../../fixtures/recipe.js';
import type { FixtureTensor } from '../../fixtures/weights.js';
import { loadModel } from '../../../src/model/load.js';
import { resolveSamplingParams } from '../../../src/engine/sampling-params.js';

/** the target: llama-q8_0 (seed 1003, spm vocabulary), with llama.cpp goldens */
const TARGET = 'llama-q8_0';
/**
 * The target's weights in Q4_0 with output rows t+1 and t+2 swapped for every t ≡ 0 (mod 3):
 * the fixtures follow "next = current + 1", so this draft agrees with the target after
 * about half the tokens and disagrees after the rest (a variant of the recipe, named so).
 */
const TWIN: GGUFFixture = { name: 'draft-llama-q4_0-swapped-rows', shape: SHAPES.llama, weightType: 'Q4_0', tokenizer: 'spm', seed: 1003 };
const swapRows = (tensors: FixtureTensor[]): void => {
  const out = tensors.find((t) => t.name === 'output.weight')!;
  const [d, vocab] = out.dims as [number, number];
  for (let t = 0; t + 2 < vocab; t += 3) {
    const a = out.values.slice((t + 1) * d, (t + 2) * d);
    out.values.copyWithin((t + 1) * d, (t + 2) * d, (t + 3) * d);
    out.values.set(a, (t + 2) * d);
  }
};
/** another random model with one layer, tied output (no successor pattern) and the same vocabulary: rarely agrees */
const STRANGER: GGUFFixture = { name: 'draft-llama-1layer-tied', shape: { ...SHAPES.llama, numLayers: 1, tied: true }, weightType: 'F16', tokenizer: 'spm', seed: 4242 };

const loaded = new Map<string, LoadedModel>();
const draftModel = (f: GGUFFixture): LoadedModel => {
  let m = loaded.get(f.name);
  if (!m) loaded.set(f.name, (m = loadModel(ggufFixturePath(f, f === TWIN ? swapRows : undefined))));
  return m;
};

/** the native core where it is built (the greedy comparisons hold on either) */
const kernels = testKernels();

const spec = (draft: LoadedModel, k = 4, extra: Partial<SpeculativeConfigInput> = {}): SpeculativeConfigInput => ({ method: 'draft_model', model: draft.path, num_speculative_tokens: k, disable_by_batch_size: 64, ...extra });

function engine(target: LoadedModel, draft: LoadedModel | undefined, opts: Partial<EngineOptions> = {}, k = 4): EngineCore {
  const o: EngineOptions = { model: '', kvCacheMemory: '64MiB', ...(draft && { speculativeConfig: spec(draft, k) }), ...opts };
  return new EngineCore(target, kernels, resolveEngineConfig(o, target.config, [...target.tokenizer.stopIds], draft?.config), draft);
}

const greedy = (maxTokens: number, extra: SamplingParamsInput = {}): SamplingParamsInput => ({ temperature: 0, maxTokens, ignoreEos: true, ...extra });
const tokensOf = (run: SpecRun, id: string): number[] => run.out.get(`${id}#0`)!.tokens;

function assertAllFree(e: EngineCore): void {
  assert.equal(e.blocks.usage(), 0, 'no target block is held');
  assert.equal(e.drafter!.blocks.usage(), 0, 'no draft block is held');
  assert.equal(e.drafter!.numSequences, 0, 'no draft state is left');
}

describe('--speculative-config with a draft model', () => {
  it('reads vLLM\'s draft_model fields; ignores the parallelism ones with a note', () => {
    assert.deepEqual(parseSpeculativeConfig('{"method": "draft_model", "model": "d.gguf", "num_speculative_tokens": 3}'), {
      method: 'draft_model', model: 'd.gguf', numSpeculativeTokens: 3, disableByBatchSize: 8, notes: [],
    });
    const implied = parseSpeculativeConfig({ model: 'd.gguf', num_speculative_tokens: 2, draft_tensor_parallel_size: 1 });
    assert.equal(implied.method, 'draft_model');
    assert.match(implied.notes[0]!, /"draft_tensor_parallel_size" is ignored/);
    const bad: [string, RegExp][] = [
      ['{"method": "draft_model", "num_speculative_tokens": 3}', /method "draft_model" needs "model"/],
      ['{"method": "draft_model", "model": "d.gguf"}', /"num_speculative_tokens" is required/],
      ['{"method": "draft_model", "model": "d.gguf", "num_speculative_tokens": 3, "prompt_lookup_max": 2}', /"prompt_lookup_max" does not apply to method "draft_model"/],
      ['{"method": "draft_model", "model": "d.gguf", "num_speculative_tokens": 3, "draft_model_path": 2}', /unknown field "draft_model_path"/],
    ];
    for (const [json, re] of bad) assert.throws(() => parseSpeculativeConfig(json), re, json);
  });

  it('refuses a draft model with another vocabulary, naming both files and the first token that differs', () => {
    const target = fixtureModel(TARGET);
    const other = fixtureModel('llama-f16'); // the llama-bpe vocabulary
    assert.throws(() => createEngineCore({ model: target.path, kvCacheMemory: '64MiB', backend: 'reference', speculativeConfig: spec(other) }, target), (err: Error) => {
      assert.match(err.message, /--speculative-config: the draft model .*llama-f16\.gguf does not share the vocabulary of .*llama-q8_0\.gguf/);
      return true;
    });
    const tok = (texts: string[]) => ({ vocabSize: texts.length, tokenText: (id: number) => texts[id] });
    const a = { path: 'a.gguf', config: { ...target.config, vocabSize: 3 }, tokenizer: tok(['<s>', '▁the', 'x']) };
    const b = { path: 'b.gguf', config: { ...target.config, vocabSize: 3 }, tokenizer: tok(['<s>', '▁The', 'x']) };
    assert.throws(() => checkDraftVocabulary(a, b), /the draft model b\.gguf does not share the vocabulary of a\.gguf: token 1 is "▁The" in the draft, "▁the" in the target/);
    checkDraftVocabulary(a, { ...b, tokenizer: tok(['<s>', '▁the', 'x']) });
  });

  it('counts the draft model\'s KV cache in --kv-cache-memory and refuses a recurrent draft model', () => {
    const target = fixtureModel(TARGET);
    const draft = draftModel(STRANGER);
    const memory = 32 * 2 ** 20;
    const plain = resolveEngineConfig({ model: '', kvCacheMemory: memory }, target.config, []);
    const both = resolveEngineConfig({ model: '', kvCacheMemory: memory, speculativeConfig: spec(draft) }, target.config, [], draft.config);
    const perBlock = (KvCache.bytesPerToken(target.config, 'f16') + KvCache.bytesPerToken(draft.config, 'f16')) * 16;
    assert.equal(both.numBlocks, Math.floor(memory / perBlock));
    assert.ok(both.numBlocks < plain.numBlocks);
    const hybrid = fixtureModel('qwen35-f16');
    assert.throws(() => resolveEngineConfig({ model: '', kvCacheMemory: memory, speculativeConfig: spec(hybrid) }, target.config, [], hybrid.config), /recurrent \(linear-attention\) layers/);
  });
});

describe('rejection sampling against a draft distribution q', () => {
  // target and draft: two Markov chains over 4 tokens (logits of the next token given the last)
  const T = [
    [2.0, 0.5, -1.0, 0.1],
    [-0.5, 1.5, 0.7, 0.0],
    [0.3, 0.3, 0.3, 1.2],
    [1.0, -2.0, 0.5, 0.8],
  ];
  const D = [
    [0.2, 1.5, 0.0, -1.0],
    [1.0, 1.0, -0.5, 0.5],
    [2.0, -1.0, 0.3, 0.0],
    [0.0, 0.0, 1.5, 0.2],
  ];
  const softmax = (row: number[], temp: number) => {
    const z = row.reduce((a, x) => a + Math.exp(x / temp), 0);
    return row.map((x) => Math.exp(x / temp) / z);
  };

  for (const params of [{ temperature: 1, topK: 0, topP: 1 }, { temperature: 0.7, topK: 3, topP: 1 }]) {
    it(`emits the target's distribution whatever q (chi-square over 3-token outputs, ${JSON.stringify(params)})`, () => {
      const draws = 12_000;
      const counts = new Array<number>(64).fill(0);
      const rng = new Rng(7);
      const draftSampler = new RequestSampler(resolveSamplingParams({ ...params, seed: 1 }), { vocabSize: 4 });
      let accepted = 0;
      let proposed = 0;
      for (let d = 0; d < draws; d++) {
        const state = new RequestState({ type: 'add', id: `c${d}`, promptIds: Int32Array.from([0]), params: resolveSamplingParams({ ...params, seed: d, maxTokens: 3, ignoreEos: true }), arrivalTime: 0 }, 4, { maxModelLen: 64, eosTokenIds: [], logprobsMode: 'raw_logprobs' });
        const seq = state.sequences[0]!;
        while (seq.numOutput < 3 && !state.finishReason(seq)) {
          // a draft of 1 to 3 tokens drawn from the draft chain, q kept (as the draft model does)
          const k = 1 + (rng.nextUint32() % 3);
          const draft: number[] = [];
          const q = new Float32Array(k * 4);
          let prev = seq.tokens[seq.tokens.length - 1]!;
          for (let i = 0; i < k; i++) {
            const row = q.subarray(i * 4, (i + 1) * 4);
            draftSampler.distribution(Float32Array.from(D[prev]!), row);
            let u = rng.next();
            let x = 0;
            while (x < 3 && u >= row[x]!) u -= row[x++]!;
            draft.push(x);
            prev = x;
          }
          const rows = new Float32Array((k + 1) * 4);
          [seq.tokens[seq.tokens.length - 1]!, ...draft].forEach((p, i) => rows.set(T[p]!, i * 4));
          accepted += state.sampleDraft(seq, rows, draft, 0, undefined, q);
          proposed += k;
        }
        const out = seq.tokens.slice(1);
        assert.equal(out.length, 3);
        counts[out[0]! * 16 + out[1]! * 4 + out[2]!]!++;
      }
      // the target's own processed distribution: temperature, then top-k
      const probs = T.map((row) => {
        const p = softmax(row, params.temperature);
        if (params.topK === 0) return p;
        const kth = [...p].sort((a, b) => b - a)[params.topK - 1]!;
        const kept = p.map((x) => (x >= kth ? x : 0));
        const z = kept.reduce((a, b) => a + b, 0);
        return kept.map((x) => x / z);
      });
      let chi2 = 0;
      let cells = 0;
      for (let c = 0; c < 64; c++) {
        const expected = draws * probs[0]![c >> 4]! * probs[c >> 4]![(c >> 2) & 3]! * probs[(c >> 2) & 3]![c & 3]!;
        if (expected === 0) {
          assert.equal(counts[c], 0, `output ${c} is impossible under the target`);
          continue;
        }
        cells++;
        chi2 += (counts[c]! - expected) ** 2 / expected;
      }
      const k = cells - 1;
      const h = 2 / (9 * k);
      assert.ok(chi2 < k * (1 - h + 3.09 * Math.sqrt(h)) ** 3, `chi-square ${chi2.toFixed(1)} over ${k} degrees of freedom`);
      // neither q = p nor disjoint: some drafts accepted, some not
      assert.ok(accepted > 0.05 * proposed && accepted < 0.9 * proposed, `${accepted} of ${proposed} accepted`);
    });
  }
});

describe('speculative decoding with a draft model in the engine', () => {
  for (const budget of [2048, 7]) {
    it(`greedy: llama.cpp's goldens in a batch, the Q4_0 twin as draft (token budget ${budget})`, () => {
      const target = fixtureModel(TARGET);
      const g = readGolden(GOLDEN_DIR, TARGET).prompts;
      const e = engine(target, draftModel(TWIN), { maxNumBatchedTokens: budget });
      const ids = g.map((x) => add(e, x.promptIds, greedy(x.tokens.length)));
      // a penalized request that never drafts, beside them
      add(e, g[0]!.promptIds, greedy(12, { repetitionPenalty: 1.3 }));
      const run = runToEnd(e);
      g.forEach((x, i) => assert.deepEqual(tokensOf(run, ids[i]!), x.tokens));
      assert.ok(run.accepted > 0 && run.accepted < run.draftTokens, `${run.accepted} of ${run.draftTokens} draft tokens accepted`);
      assertAllFree(e);
    });
  }

  it('greedy: a draft that rarely agrees changes nothing; the target as its own draft has every draft accepted', () => {
    const target = fixtureModel(TARGET);
    const g = readGolden(GOLDEN_DIR, TARGET).prompts[1]!;
    for (const [draft, check] of [
      [draftModel(STRANGER), (r: SpecRun) => r.accepted < 0.5 * r.draftTokens],
      [target, (r: SpecRun) => r.accepted === r.draftTokens],
    ] as const) {
      const e = engine(target, draft);
      const id = add(e, g.promptIds, greedy(g.tokens.length));
      const run = runToEnd(e);
      assert.deepEqual(tokensOf(run, id), g.tokens);
      assert.ok(run.drafts > 0 && check(run), `${draft.path}: ${run.accepted} of ${run.draftTokens} accepted`);
      assertAllFree(e);
    }
  });

  it('greedy under preemption, with prefix-cache hits, stops and n > 1: the same tokens as without speculation', () => {
    const target = fixtureModel(TARGET);
    const g = readGolden(GOLDEN_DIR, TARGET).prompts;
    const perBlock = (KvCache.bytesPerToken(target.config, 'f16') + KvCache.bytesPerToken(draftModel(TWIN).config, 'f16')) * 4;
    const workload = (e: EngineCore) => [
      ...g.map((x) => add(e, x.promptIds, greedy(32))),
      add(e, g[0]!.promptIds, greedy(32)), // the same prompt again: prefix-cache hits
      add(e, g[1]!.promptIds, greedy(32, { stopTokenIds: [g[1]!.tokens[9]!] })),
      add(e, g[1]!.promptIds, greedy(7)),
      add(e, g[0]!.promptIds, { temperature: 0, n: 2, maxTokens: 20, ignoreEos: true }),
    ];
    // 40 blocks of 4 tokens: fewer than the requests need together
    const opts = { blockSize: 4, kvCacheMemory: 40 * perBlock, maxModelLen: 64 };
    const plainEngine = engine(target, undefined, opts);
    const plainIds = workload(plainEngine);
    const plain = runToEnd(plainEngine);
    const e = engine(target, draftModel(TWIN), opts);
    const ids = workload(e);
    const run = runToEnd(e);
    ids.forEach((id, i) => {
      for (const index of [0, 1]) assert.deepEqual(run.out.get(`${id}#${index}`)?.tokens, plain.out.get(`${plainIds[i]}#${index}`)?.tokens, `request ${i} completion ${index}`);
    });
    assert.equal(run.out.get(`${ids[3]}#0`)!.finishReason, 'stop');
    assert.ok(e.scheduler.numPreemptions > 0 && run.accepted > 0, `${e.scheduler.numPreemptions} preemptions, ${run.accepted} accepted`);
    assertAllFree(e);
  });

  it('a Hugging Face folder drafts for its GGUF twin: the vocabularies agree across formats, the tokens are the same', () => {
    const { folder, gguf } = hfFixturePaths(HF_FIXTURES.find((f) => f.name === 'hf-llama')!);
    const target = loadModel(gguf);
    const draft = loadModel(folder);
    checkDraftVocabulary(target, draft);
    const prompt = target.tokenizer.encode('Once upon a time, in a small village', { addSpecial: true });
    const runs = [undefined, draft].map((d) => {
      const e = engine(target, d);
      const id = add(e, prompt, greedy(24));
      return { run: runToEnd(e), id };
    });
    assert.deepEqual(tokensOf(runs[1]!.run, runs[1]!.id), tokensOf(runs[0]!.run, runs[0]!.id));
    assert.ok(runs[1]!.run.accepted > 0.9 * runs[1]!.run.draftTokens, `${runs[1]!.run.accepted} of ${runs[1]!.run.draftTokens} accepted`);
  });

  it('logprobs of the accepted tokens are those without speculation', () => {
    const target = fixtureModel(TARGET);
    const g = readGolden(GOLDEN_DIR, TARGET).prompts[0]!;
    const results = [undefined, draftModel(TWIN)].map((draft) => {
      const e = engine(target, draft);
      const id = add(e, g.promptIds, greedy(24, { logprobs: 2 }));
      return runToEnd(e).out.get(`${id}#0`)!;
    });
    assert.deepEqual(results[1]!.tokens, results[0]!.tokens);
    results[1]!.logprobs.forEach((lp, i) => assert.ok(Math.abs(lp - results[0]!.logprobs[i]!) < 1e-4, `token ${i}: ${lp} vs ${results[0]!.logprobs[i]}`));
  });

  it('sampled requests draft from q and verify by rejection sampling; aborts return every draft block', () => {
    const target = fixtureModel(TARGET);
    const g = readGolden(GOLDEN_DIR, TARGET).prompts;
    const e = engine(target, draftModel(TWIN));
    const sampled = g.map((x, i) => add(e, x.promptIds, { temperature: 0.8, topP: 0.95, seed: 5 + i, maxTokens: 40, ignoreEos: true }));
    const aborted = g.map((x) => add(e, x.promptIds, greedy(200)));
    const run = runToEnd(e, (step) => {
      if (step === 6) e.abort([aborted[0]!]);
      if (step === 11) e.abort([aborted[1]!]);
    });
    for (const id of sampled) assert.equal(tokensOf(run, id).length, 40);
    for (const id of aborted) assert.equal(run.out.get(`${id}#0`)!.finishReason, 'abort');
    assert.ok(run.accepted > 0 && run.accepted < run.draftTokens, `${run.accepted} of ${run.draftTokens} accepted`);
    assertAllFree(e);
  });
});
