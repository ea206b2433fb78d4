// The prefill budget's arithmetic and its online cost model, against values worked by hand.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MIN_PREFILL_CHUNK, StepCostModel, prefillBudget } from '../../src/engine/step-budget.js';

describe('StepCostModel', () => {
  it('recovers a/b from steps of varied size (a = 12 ms, b = 0.4 ms: 30 tokens)', () => {
    const m = new StepCostModel();
    for (let i = 0; i < 200; i++) {
      const tokens = 16 + ((i * 37) % 300);
      m.observe(tokens, 12 + 0.4 * tokens);
    }
    assert.ok(Math.abs(m.overheadTokens() - 30) < 1e-6, String(m.overheadTokens()));
  });
  it('follows a change of machine speed (the old steps fade)', () => {
    const m = new StepCostModel();
    for (let i = 0; i < 200; i++) m.observe(16 + (i % 100), 12 + 0.4 * (16 + (i % 100)));
    for (let i = 0; i < 400; i++) m.observe(16 + (i % 100), 40 + 0.4 * (16 + (i % 100)));
    assert.ok(Math.abs(m.overheadTokens() - 100) < 2, String(m.overheadTokens()));
  });
  it('answers 0 (the cautious overhead) before it has seen steps of different sizes', () => {
    const m = new StepCostModel();
    assert.equal(m.overheadTokens(), 0);
    for (let i = 0; i < 50; i++) m.observe(64, 30);
    assert.equal(m.overheadTokens(), 0);
    m.observe(0, 1); // ignored: empty steps carry nothing
    m.observe(10, Number.NaN);
    assert.equal(m.overheadTokens(), 0);
  });
});

describe('prefillBudget', () => {
  const base = { maxNumBatchedTokens: 2048, stepTimeFactor: 2, overheadTokens: 30 };
  it('gives the whole budget when nothing decodes, or when the limit is off', () => {
    assert.equal(prefillBudget({ ...base, decoding: 0, expectedDecoding: 64 }), 2048);
    assert.equal(prefillBudget({ ...base, stepTimeFactor: 0, decoding: 64, expectedDecoding: 64 }), 2048 - 64);
  });
  it('sizes the prefill so the step costs f × a decode-only step of the expected decodes', () => {
    // f·(A + E) − (A + d) = 2·(30 + 64) − (30 + 64) = 94
    assert.equal(prefillBudget({ ...base, decoding: 64, expectedDecoding: 64 }), 94);
    // 16 decoding, 48 more on the way: 2·94 − 46 = 142
    assert.equal(prefillBudget({ ...base, decoding: 16, expectedDecoding: 64 }), 142);
    // f = 1.5: floor(1.5·94 − 94) = 47
    assert.equal(prefillBudget({ ...base, stepTimeFactor: 1.5, decoding: 64, expectedDecoding: 64 }), 47);
  });
  it('never goes under the least chunk, nor over the tokens the decodes leave', () => {
    assert.equal(prefillBudget({ ...base, stepTimeFactor: 1, decoding: 64, expectedDecoding: 64 }), MIN_PREFILL_CHUNK);
    assert.equal(prefillBudget({ ...base, maxNumBatchedTokens: 100, decoding: 64, expectedDecoding: 64 }), 36);
    assert.equal(prefillBudget({ ...base, maxNumBatchedTokens: 64, decoding: 64, expectedDecoding: 64 }), 0);
  });
});
