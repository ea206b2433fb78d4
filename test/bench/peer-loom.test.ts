// loom's side of `loom bench peer` at a long context: the prompt is prefilled in chunks (its
// time is every chunk's, up to the first token), then the decode window holds exactly the
// measured steps after the warm-up ones, each one token of one sequence.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LoomSide } from '../../src/bench/peer-loom.js';
import { fixtureModel } from '../fixtures/engine-run.js';

describe('bench peer: loom at a long context', () => {
  it('prefills a prompt longer than a step in chunks, then measures only the decode steps after the warm-up', async () => {
    const m = fixtureModel('llama-q8_0');
    // the fixture's 512 positions raised: RoPE has no limit, and the chunking is what is tested
    const model = { ...m, config: { ...m.config, contextLength: 8192 } };
    const prompt = Int32Array.from({ length: 2100 }, (_, i) => (i * 7919) % (m.config.vocabSize - 10) + 5);
    const side = new LoomSide(model, 2, 4, 2100 + 32);
    const r = await side.longContext(prompt, 3, 5);
    assert.equal(r.prefill.tokens, 2100);
    assert.equal(r.prefill.calls, 2, 'two chunks: 2048 tokens, then 52 and the first token');
    assert.ok(r.prefill.ms > 0);
    assert.equal(r.decode.tokens, 5);
    assert.equal(r.decode.calls, 5, 'the warm-up steps are not in the window');
    assert.ok(r.decode.profile && r.decode.profile['attention']! > 0, 'the window has an attention share');
    const d = await side.decode(prompt, 3, 5);
    assert.equal(d.tokens, 5);
    assert.equal(d.calls, 5);
    await side.close();
  });
});
