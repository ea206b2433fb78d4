// The sampler, step by step, against straightforward computations written here: parameter
// validation, logit bias, min_tokens, penalties (by hand on small vocabularies), greedy,
// temperature, min-p/top-k/top-p kept sets (vs a full-sort reference, as vLLM computes
// them), draws' support and distribution (chi-square, seeded), per-request seeds.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidArgumentError } from '../../src/errors.js';
import { GREEDY, RequestSampler, Sampler, argmax } from '../../src/engine/sampler.js';
import { childSamplingParams, resolveSamplingParams } from '../../src/engine/sampling-params.js';
import type { SamplingParamsInput } from '../../src/engine/sampling-params.js';
import { topPCut, kthLargest, getScratch } from '../../src/engine/truncation.js';
import { gaussian } from '../fixtures/random.js';


const softmax = (x: ArrayLike<number>): number[] => {
  const m = Math.max(...Array.from(x));
  const e = Array.from(x, (v) => Math.exp(v - m));
  const s = e.reduce((a, b) => a + b, 0);
  return e.map((v) => v / s);
};

/** vLLM's order with full sorts: temperature → min-p → top-k → top-p; −∞ where removed. */
function referenceFilter(logits: Float32Array, p: { temperature: number; topK?: number; topP?: number; minP?: number }): number[] {
  let x = Array.from(logits, (v) => v / p.temperature);
  const minP = p.minP ?? 0;
  if (minP > 0) {
    const probs = softmax(x);
    const top = Math.max(...probs);
    x = x.map((v, i) => (probs[i]! >= minP * top ? v : -Infinity));
  }
  const order = x.map((_, i) => i).sort((a, b) => x[b]! - x[a]! || a - b);
  const k = p.topK ?? 0;
  if (k > 0 && k < order.length) {
    const kth = x[order[k - 1]!]!;
    x = x.map((v) => (v >= kth ? v : -Infinity));
  }
  const topP = p.topP ?? 1;
  if (topP < 1) {
    const probs = softmax(x);
    let before = 0;
    for (const i of order) {
      if (before >= topP) x[i] = -Infinity;
      before += probs[i]!;
    }
  }
  return x;
}

const finiteSet = (row: ArrayLike<number>): number[] => Array.from(row).flatMap((v, i) => (v > -Infinity ? [i] : []));

function processed(params: SamplingParamsInput, logits: Float32Array, ctx = {}): { token: number; row: Float32Array } {
  const s = new RequestSampler(resolveSamplingParams(params), ctx);
  const token = s.sample(logits);
  return { token, row: s.lastProcessedLogits().slice() };
}

describe('sampling parameters', () => {
  it('fill defaults and take logit_bias as a record or a map', () => {
    const p = resolveSamplingParams({ logitBias: { '3': 2, '7': -1 } }, 10);
    assert.equal(p.temperature, 1);
    assert.equal(p.topK, 0);
    assert.equal(p.repetitionPenalty, 1);
    assert.equal(p.n, 1);
    assert.equal(p.logprobs, null);
    assert.deepEqual([...p.logitBias], [[3, 2], [7, -1]]);
    assert.deepEqual([...resolveSamplingParams({ logitBias: new Map([[1, 5]]) }).logitBias], [[1, 5]]);
  });

  it('refuse bad values with an error naming the parameter', () => {
    const cases: [SamplingParamsInput, string][] = [
      [{ temperature: -1 }, 'temperature'],
      [{ temperature: NaN }, 'temperature'],
      [{ topK: 1.5 }, 'top_k'],
      [{ topP: 0 }, 'top_p'],
      [{ topP: 1.1 }, 'top_p'],
      [{ minP: -0.1 }, 'min_p'],
      [{ repetitionPenalty: 0 }, 'repetition_penalty'],
      [{ frequencyPenalty: 2.5 }, 'frequency_penalty'],
      [{ presencePenalty: -3 }, 'presence_penalty'],
      [{ logitBias: { '10': 1 } }, 'logit_bias'],
      [{ logitBias: { abc: 1 } }, 'logit_bias'],
      [{ logitBias: { '2': 101 } }, 'logit_bias'],
      [{ seed: 1.5 }, 'seed'],
      [{ stopTokenIds: [10] }, 'stop_token_ids'],
      [{ minTokens: -1 }, 'min_tokens'],
      [{ minTokens: 5, maxTokens: 4 }, 'min_tokens'],
      [{ maxTokens: 0 }, 'max_tokens'],
      [{ n: 0 }, 'n'],
      [{ logprobs: 21 }, 'logprobs'],
      [{ promptLogprobs: -1 }, 'prompt_logprobs'],
    ];
    for (const [input, name] of cases) {
      assert.throws(() => resolveSamplingParams(input, 10), (e: unknown) => e instanceof InvalidArgumentError && e.message.startsWith(`${name} `), name);
    }
  });

  it('give the children of an n > 1 seeded request seed + index', () => {
    const p = resolveSamplingParams({ n: 3, seed: 100 });
    assert.deepEqual([0, 1, 2].map((i) => childSamplingParams(p, i).seed), [100, 101, 102]);
    assert.equal(childSamplingParams(p, 2).n, 1);
    assert.equal(childSamplingParams(resolveSamplingParams({ n: 2 }), 1).seed, null);
  });
});

describe('greedy', () => {
  it('is the argmax, lowest id on ties, with no copy when nothing applies', () => {
    assert.equal(argmax(Float32Array.from([1, 3, 3, 2])), 1);
    const row = Float32Array.from([0.5, -1, 2, 2, 1]);
    const s = new Sampler(GREEDY);
    assert.equal(s.leavesRowUnchanged, true);
    assert.equal(s.sample(row), 2);
    assert.equal(s.lastProcessedLogits(), row);
  });

  it('applies logit bias first (temperature 0 still biases) and leaves the model row alone', () => {
    const row = Float32Array.from([1, 2, 3, 0]);
    const { token, row: out } = processed({ temperature: 0, logitBias: { '0': 2.5, '2': -1 } }, row);
    assert.equal(token, 0);
    assert.deepEqual(Array.from(out), [3.5, 2, 2, 0]);
    assert.deepEqual(Array.from(row), [1, 2, 3, 0]);
  });

  it('suppresses stop and EOS ids until min_tokens are generated', () => {
    const row = Float32Array.from([0, 1, 5, 4, 2]); // 2 = EOS (best), 3 = a stop id (second)
    const s = new RequestSampler(resolveSamplingParams({ temperature: 0, minTokens: 3, stopTokenIds: [3] }), { eosTokenIds: [2] });
    const got = [0, 1, 2, 3].map(() => s.sample(row));
    assert.deepEqual(got, [4, 4, 4, 2]);
    // with ignore_eos only the stop ids are suppressed
    const t = new RequestSampler(resolveSamplingParams({ temperature: 0, minTokens: 1, stopTokenIds: [3], ignoreEos: true }), { eosTokenIds: [2] });
    assert.equal(t.sample(Float32Array.from([0, 1, 4, 5, 2])), 2);
  });
});

describe('penalties', () => {
  it('match repetition (prompt ∪ output), frequency and presence (output) computed by hand', () => {
    const logits = Float32Array.from([1, -1, 2, 0.5, -2, 3, 0]);
    const prompt = [1, 2, 1];
    const output = [2, 3, 3, 6];
    const r = 1.5;
    const f = 0.5;
    const pr = 0.25;
    const s = new RequestSampler(resolveSamplingParams({ temperature: 0, repetitionPenalty: r, frequencyPenalty: f, presencePenalty: pr }), { promptIds: prompt });
    for (const id of output) s.accept(id);
    s.sample(logits);
    const expected = Array.from(logits, (x, id) => {
      if (prompt.includes(id) || output.includes(id)) x = x > 0 ? x / r : x * r;
      const count = output.filter((t) => t === id).length;
      return x - f * count - (count > 0 ? pr : 0);
    });
    const got = s.lastProcessedLogits();
    expected.forEach((e, i) => assert.ok(Math.abs(got[i]! - e) < 1e-6, `token ${i}: ${got[i]} vs ${e}`));
  });

  it('count each sampled token as it is accepted', () => {
    // a frequency penalty of 2 makes greedy cycle through the near-tied tokens
    const logits = Float32Array.from([3, 2.9, 2.8, -5]);
    const s = new RequestSampler(resolveSamplingParams({ temperature: 0, frequencyPenalty: 2 }));
    const got = Array.from({ length: 6 }, () => s.sample(logits));
    assert.deepEqual(got, [0, 1, 2, 0, 1, 2]);
    assert.equal(s.numGenerated, 6);
  });

  it('apply bias before penalties: repetition divides the biased logit', () => {
    const s = new RequestSampler(resolveSamplingParams({ temperature: 0, logitBias: { '0': 1 }, repetitionPenalty: 2 }), { promptIds: [0] });
    s.sample(Float32Array.from([1, 0]));
    assert.equal(s.lastProcessedLogits()[0], 1); // (1 + 1) / 2
  });
});

describe('truncation', () => {
  const row = gaussian(200, 11, 2);

  it('divides by the temperature', () => {
    const { row: out } = processed({ temperature: 0.5, seed: 1 }, row);
    out.forEach((v, i) => assert.ok(Math.abs(v - row[i]! * 2) < 1e-5));
  });

  for (const params of [
    { temperature: 1, topK: 7 },
    { temperature: 0.8, topK: 1 },
    { temperature: 1.3, topP: 0.5 },
    { temperature: 1, topP: 0.9 },
    { temperature: 0.7, topP: 0.01 },
    { temperature: 1, minP: 0.1 },
    { temperature: 2, minP: 0.5 },
    { temperature: 0.9, minP: 0.05, topK: 20, topP: 0.8 },
    { temperature: 1.5, topK: 50, topP: 0.95 },
  ]) {
    it(`keeps exactly vLLM's set for ${JSON.stringify(params)}`, () => {
      for (let seed = 0; seed < 5; seed++) {
        const logits = gaussian(300, 1000 + seed, 2);
        const ref = referenceFilter(logits, params);
        const { token, row: out } = processed({ ...params, seed }, logits);
        assert.deepEqual(finiteSet(out), finiteSet(ref));
        assert.ok(out[token]! > -Infinity, 'the draw comes from the kept set');
      }
    });
  }

  it('keeps ties at the k-th logit, as vLLM', () => {
    const { row: out } = processed({ topK: 2, seed: 3 }, Float32Array.from([1, 3, 2, 2, 0]));
    assert.deepEqual(finiteSet(out), [1, 2, 3]);
  });

  it('selects top-k and top-p on a 50k vocabulary like a full sort does', () => {
    const logits = gaussian(50_000, 5, 3);
    for (const params of [{ topK: 40 }, { topP: 0.9 }, { topK: 1000, topP: 0.7 }]) {
      const { row: out } = processed({ ...params, seed: 9 }, logits);
      assert.deepEqual(finiteSet(out), finiteSet(referenceFilter(logits, { temperature: 1, ...params })));
    }
  });

  it('kthLargest and topPCut agree with sorting on rows with many ties', () => {
    const logits = Float32Array.from(gaussian(500, 8), (v) => Math.round(v * 2) / 2 + 0); // + 0: no −0
    const { idx, weight, value } = getScratch(500);
    const sorted = Array.from(logits).sort((a, b) => b - a);
    for (const k of [1, 2, 17, 250, 500]) {
      for (let i = 0; i < 500; i++) idx[i] = i;
      assert.equal(kthLargest(logits, idx, 500, k, value), sorted[k - 1]);
    }
    for (let i = 0; i < 500; i++) {
      idx[i] = i;
      weight[i] = Math.exp(logits[i]!);
    }
    const total = weight.subarray(0, 500).reduce((a, b) => a + b, 0);
    const kept = topPCut(logits, idx, weight, 500, 0.6 * total);
    const ref = referenceFilter(logits, { temperature: 1, topP: 0.6 });
    assert.deepEqual(Array.from(idx.subarray(0, kept)).sort((a, b) => a - b), finiteSet(ref));
  });
});

describe('draws', () => {
  it('stay inside the kept set and reach all of it', () => {
    const logits = gaussian(64, 21, 1);
    const s = new RequestSampler(resolveSamplingParams({ temperature: 2, topK: 4, seed: 5 }));
    const seen = new Set<number>();
    for (let i = 0; i < 2000; i++) seen.add(s.sample(logits));
    const ref = finiteSet(referenceFilter(logits, { temperature: 2, topK: 4 }));
    assert.deepEqual([...seen].sort((a, b) => a - b), ref);
  });

  it('follow the processed distribution (chi-square, seeded)', () => {
    const logits = gaussian(10, 31, 1);
    const params = { temperature: 0.7, minP: 0.02, topP: 0.97 };
    const probs = softmax(referenceFilter(logits, params));
    const s = new RequestSampler(resolveSamplingParams({ ...params, seed: 12345 }));
    const draws = 20_000;
    const counts = new Array<number>(10).fill(0);
    for (let i = 0; i < draws; i++) counts[s.sample(logits)]!++;
    let chi2 = 0;
    let df = -1;
    probs.forEach((p, i) => {
      if (p === 0) return assert.equal(counts[i], 0, `token ${i} was filtered out`);
      df++;
      chi2 += (counts[i]! - p * draws) ** 2 / (p * draws);
    });
    assert.ok(df >= 3, `degrees of freedom ${df}`);
    assert.ok(chi2 < 3 * df + 20, `chi-square ${chi2.toFixed(1)} with ${df} degrees of freedom`);
  });

  it('are reproducible per seed whatever other samplers do in between', () => {
    const rows = Array.from({ length: 30 }, (_, i) => gaussian(100, 500 + i, 1));
    const alone = new RequestSampler(resolveSamplingParams({ temperature: 1, topP: 0.95, seed: 42 }));
    const expected = rows.map((r) => alone.sample(r));
    const again = new RequestSampler(resolveSamplingParams({ temperature: 1, topP: 0.95, seed: 42 }));
    const others = [new RequestSampler(resolveSamplingParams({ temperature: 1.2, seed: 7 })), new RequestSampler(resolveSamplingParams({ temperature: 0.5, topK: 5 })), new RequestSampler(resolveSamplingParams({ temperature: 0 }))];
    const got = rows.map((r, i) => {
      for (const o of others.slice(0, (i % 3) + 1)) o.sample(gaussian(100, i, 2));
      return again.sample(r);
    });
    assert.deepEqual(got, expected);
    const other = new RequestSampler(resolveSamplingParams({ temperature: 1, topP: 0.95, seed: 43 }));
    assert.notDeepEqual(rows.map((r) => other.sample(r)), expected);
  });
});
