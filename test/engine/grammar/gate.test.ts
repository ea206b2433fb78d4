// The grammar gate alone (engine/grammar/gate.ts): which tokens the grammar sees, when its
// mask applies, and the start token let through at the first position.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SequenceGate } from '../../../src/engine/grammar/gate.js';

const END = [7, 8]; // a two-token end marker ("</" "think>")

describe('SequenceGate', () => {
  it('reasoning open from the start: unconstrained until the end marker ids, then every token is the grammar’s', () => {
    const g = new SequenceGate({ reasoningEnd: END });
    assert.equal(g.constrains, false);
    assert.deepEqual([5, 7, 9, 7].map((t) => g.observe(t)), [false, false, false, false]); // 7 then 9 is not the marker
    assert.equal(g.constrains, false);
    assert.equal(g.observe(8), false); // the marker's last token is still reasoning
    assert.equal(g.started, true);
    assert.equal(g.constrains, true);
    assert.deepEqual([7, 8, 1].map((t) => g.observe(t)), [true, true, true]);
  });

  it('a model that opens reasoning itself: the first token is the start token or the grammar’s', () => {
    const skip = new SequenceGate({ reasoningEnd: [9], reasoningStart: 40 });
    assert.equal(skip.constrains, true);
    const mask = new Int32Array(2);
    skip.widen(mask);
    assert.equal((mask[1]! >>> 8) & 1, 1, 'the start token (40) is allowed at the first position');
    assert.equal(skip.observe(3), true);
    assert.equal(skip.started, true);
    const widened = new Int32Array(2);
    skip.widen(widened);
    assert.deepEqual([...widened], [0, 0], 'only at the first position');
    const think = new SequenceGate({ reasoningEnd: [9], reasoningStart: 40 });
    assert.deepEqual([40, 3, 40, 9].map((t) => think.observe(t)), [false, false, false, false]);
    assert.equal(think.observe(2), true);
  });
});
