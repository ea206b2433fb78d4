// Logprobs against a log-softmax and a full sort written here: every mode, raw vs processed
// exactly as defined (processed = the distribution sampling drew from), top-N order and ties,
// ranks, uniform rows, prompt logprobs, the columnar form, and `none` refusing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidArgumentError } from '../../src/errors.js';
import {
  LOGPROBS_MODES,
  allocLogprobsColumns,
  checkLogprobsRequest,
  parseLogprobsMode,
  promptLogprobs,
  tokenLogprobs,
  writeTokenLogprobs,
} from '../../src/engine/logprobs.js';
import { RequestSampler } from '../../src/engine/sampler.js';
import { resolveSamplingParams } from '../../src/engine/sampling-params.js';
import { topN } from '../../src/engine/top-n.js';
import { gaussian } from '../fixtures/random.js';


/** float64 log-softmax, −∞ entries stay −∞ */
function logSoftmax(x: ArrayLike<number>): number[] {
  const a = Array.from(x);
  const m = Math.max(...a);
  const lse = m + Math.log(a.reduce((s, v) => s + Math.exp(v - m), 0));
  return a.map((v) => v - lse);
}

/** ids by value desc, id asc */
const sortedIds = (x: ArrayLike<number>): number[] => Array.from(x, (_, i) => i).sort((a, b) => x[b]! - x[a]! || a - b);

const close = (a: number, b: number, tol = 1e-5): boolean => a === b || Math.abs(a - b) <= tol * Math.max(1, Math.abs(b));

describe('top-N selection', () => {
  it('matches a full sort, ties by id', () => {
    for (let seed = 0; seed < 20; seed++) {
      const row = Float32Array.from(gaussian(1000, seed), (v) => Math.round(v * 4) / 4); // many ties
      for (const n of [1, 5, 20]) {
        const ids = new Int32Array(n);
        assert.equal(topN(row, n, ids), n);
        assert.deepEqual(Array.from(ids), sortedIds(row).slice(0, n));
      }
    }
  });
});

describe('token logprobs', () => {
  it('of a uniform row are −log V, ranked 1, top ids in id order', () => {
    for (const v of [1, 7, 32_000]) {
      const row = new Float32Array(v).fill(0.25);
      const lp = tokenLogprobs('raw_logprobs', row, row, v - 1, Math.min(5, v));
      assert.ok(close(lp.logprob, -Math.log(v), 1e-6), `${lp.logprob} vs ${-Math.log(v)}`);
      assert.equal(lp.rank, 1);
      assert.deepEqual(Array.from(lp.topIds), Array.from({ length: Math.min(5, v) }, (_, i) => i));
      for (const x of lp.topLogprobs) assert.ok(close(x, -Math.log(v), 1e-6));
    }
  });

  it('raw_logprobs: log-softmax of the model row, rank, top-N sorted desc', () => {
    const row = gaussian(5000, 3, 3);
    const ref = logSoftmax(row);
    const order = sortedIds(row);
    const token = order[7]!;
    const lp = tokenLogprobs('raw_logprobs', row, new Float32Array(5000), token, 20);
    assert.ok(close(lp.logprob, ref[token]!));
    assert.equal(lp.rank, 8);
    assert.deepEqual(Array.from(lp.topIds), order.slice(0, 20));
    lp.topIds.forEach((id, j) => assert.ok(close(lp.topLogprobs[j]!, ref[id]!)));
    for (let j = 1; j < 20; j++) assert.ok(lp.topLogprobs[j - 1]! >= lp.topLogprobs[j]!);
  });

  it('raw_logits: the model logits themselves', () => {
    const row = gaussian(100, 4);
    const lp = tokenLogprobs('raw_logits', row, new Float32Array(100), 10, 3);
    assert.equal(lp.logprob, row[10]);
    assert.deepEqual(Array.from(lp.topLogprobs), sortedIds(row).slice(0, 3).map((i) => row[i]!));
  });

  it('processed modes report the distribution sampled from: bias, penalties, temperature, truncation', () => {
    const row = gaussian(50, 5, 2);
    const params = { temperature: 0.5, topK: 10, logitBias: { '3': 4 }, presencePenalty: 1, seed: 17 };
    const sampler = new RequestSampler(resolveSamplingParams(params));
    sampler.accept(order(row)[0]!); // penalise the best token
    const best = order(row)[0]!;
    const token = sampler.sample(row);
    // independent: bias, presence penalty, /T, then keep the top 10
    const shaped = Array.from(row, (x, i) => (x + (i === 3 ? 4 : 0) - (i === best ? 1 : 0)) / 0.5);
    const kth = [...shaped].sort((a, b) => b - a)[9]!;
    const expectedLogits = shaped.map((x) => (x >= kth ? x : -Infinity));
    const raw = tokenLogprobs('raw_logprobs', row, sampler.lastProcessedLogits(), token, 5);
    const procLogprobs = tokenLogprobs('processed_logprobs', row, sampler.lastProcessedLogits(), token, 5);
    const procLogits = tokenLogprobs('processed_logits', row, sampler.lastProcessedLogits(), token, 5);
    assert.ok(close(raw.logprob, logSoftmax(row)[token]!));
    assert.ok(close(procLogprobs.logprob, logSoftmax(expectedLogits)[token]!));
    assert.ok(close(procLogits.logprob, expectedLogits[token]!));
    assert.deepEqual(Array.from(procLogprobs.topIds), sortedIds(expectedLogits).slice(0, 5));
    assert.deepEqual(Array.from(raw.topIds), sortedIds(row).slice(0, 5));
    // the processed distribution sums to 1 over the kept tokens
    const full = tokenLogprobs('processed_logprobs', row, sampler.lastProcessedLogits(), token, 20);
    const mass = Array.from(full.topLogprobs).reduce((s, x) => s + Math.exp(x), 0);
    assert.ok(close(mass, 1, 1e-5));
    assert.equal(full.topLogprobs[10], -Infinity, 'tokens removed by top-k are −∞');
  });

  it('processed equals raw for a greedy request with nothing to apply', () => {
    const row = gaussian(30, 6);
    const s = new RequestSampler(resolveSamplingParams({ temperature: 0 }));
    const token = s.sample(row);
    assert.deepEqual(tokenLogprobs('processed_logprobs', row, s.lastProcessedLogits(), token, 4), tokenLogprobs('raw_logprobs', row, row, token, 4));
  });

  it('fill missing top entries with −1 / −∞ when the vocabulary is smaller than N', () => {
    const lp = tokenLogprobs('raw_logprobs', Float32Array.from([0, 1]), new Float32Array(2), 0, 4);
    assert.deepEqual(Array.from(lp.topIds), [1, 0, -1, -1]);
    assert.equal(lp.topLogprobs[3], -Infinity);
  });

  it('write the columnar form a delta transfers', () => {
    const rows = [gaussian(64, 7), gaussian(64, 8), gaussian(64, 9)];
    const out = allocLogprobsColumns(3, 2);
    rows.forEach((r, t) => writeTokenLogprobs(r, true, t * 10, out, t));
    rows.forEach((r, t) => {
      const one = tokenLogprobs('raw_logprobs', r, r, t * 10, 2);
      assert.equal(out.tokenIds[t], t * 10);
      assert.equal(out.logprobs[t], one.logprob);
      assert.equal(out.ranks[t], one.rank);
      assert.deepEqual(Array.from(out.topIds.subarray(2 * t, 2 * t + 2)), Array.from(one.topIds));
      assert.deepEqual(Array.from(out.topLogprobs.subarray(2 * t, 2 * t + 2)), Array.from(one.topLogprobs));
    });
  });
});

describe('prompt logprobs', () => {
  it('score each next prompt token from the previous position, raw in every mode', () => {
    const vocab = 40;
    const prompt = [5, 17, 3, 39, 0];
    const rows = new Float32Array((prompt.length - 1) * vocab);
    for (let r = 0; r < prompt.length - 1; r++) rows.set(gaussian(vocab, 70 + r, 2), r * vocab);
    const next = prompt.slice(1);
    const lp = promptLogprobs('raw_logprobs', rows, vocab, next, 3);
    assert.equal(lp.tokenIds.length, prompt.length - 1);
    next.forEach((id, r) => {
      const row = rows.subarray(r * vocab, (r + 1) * vocab);
      assert.equal(lp.tokenIds[r], id);
      assert.ok(close(lp.logprobs[r]!, logSoftmax(row)[id]!));
      assert.deepEqual(Array.from(lp.topIds.subarray(3 * r, 3 * r + 3)), sortedIds(row).slice(0, 3));
    });
    assert.deepEqual(promptLogprobs('processed_logprobs', rows, vocab, next, 3), lp);
    const logits = promptLogprobs('processed_logits', rows, vocab, next, 0);
    next.forEach((id, r) => assert.equal(logits.logprobs[r], rows[r * vocab + id]));
  });
});

describe('logprobs modes', () => {
  it('parse the five modes and refuse others', () => {
    for (const m of LOGPROBS_MODES) assert.equal(parseLogprobsMode(m), m);
    assert.throws(() => parseLogprobsMode('logprobs'), (e: unknown) => e instanceof InvalidArgumentError && /--logprobs-mode/.test(e.message));
  });

  it('none refuses requests that ask, naming the mode', () => {
    const none = (e: unknown): boolean => e instanceof InvalidArgumentError && /--logprobs-mode none/.test(e.message);
    assert.throws(() => checkLogprobsRequest('none', resolveSamplingParams({ logprobs: 0 })), none);
    assert.throws(() => checkLogprobsRequest('none', resolveSamplingParams({ promptLogprobs: 2 })), none);
    checkLogprobsRequest('none', resolveSamplingParams({}));
    checkLogprobsRequest('raw_logprobs', resolveSamplingParams({ logprobs: 5, promptLogprobs: 5 }));
    const row = new Float32Array(4);
    assert.throws(() => tokenLogprobs('none', row, row, 0, 1), none);
    assert.throws(() => promptLogprobs('none', row, 4, [1], 1), none);
  });
});

function order(row: Float32Array): number[] {
  return sortedIds(row);
}
