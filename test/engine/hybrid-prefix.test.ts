// Prefix caching for hybrid models (Qwen3.5 dense and MoE): a hit restores the Gated DeltaNet
// layers' recurrent and conv state from a checkpoint (engine/state-checkpoints.ts). Every
// request run against a cache must give the tokens, logprobs and logits rows it gives on an
// engine with no prefix cache at all (the independent reference here: the same forward pass
// over the whole prompt from a zeroed state, itself checked against llama.cpp in hybrid.test.ts),
// at every block boundary a hit can land on, for the next turn of a chat, and under memory
// pressure where blocks and checkpoints are evicted. A corrupted checkpoint must show.
// With the reference kernels every row is computed the same whatever the batch, so a hit must
// give bit-identical logits; the native kernels round a Q8_0 row's activations per batch shape,
// so there (as for any other chunking) the rows agree within the bound they keep with llama.cpp.
import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import { EngineCore } from '../../src/engine/engine.js';
import type { EngineConfig } from '../../src/engine/engine.js';
import type { Kernels } from '../../src/kernels/index.js';
import { referenceKernels } from '../../src/kernels/reference.js';
import { testKernels } from '../fixtures/native.js';
import { fixtureModel } from '../fixtures/engine-run.js';
import { LLAMA_CPP_TOLERANCE } from '../fixtures/tolerance.js';
import { assertSameRun as assertSame, base, pressurePrompts, rowError, run, runTwoAtATime, tail } from '../fixtures/prefix-hit.js';
import type { Run } from '../fixtures/prefix-hit.js';

let kernels: Kernels = referenceKernels;
/** how far a hit's logits rows may be from the reference's (relative to the row's largest), by kernels */
let TOLERANCE = 0;
const FIXTURES = ['qwen35-q8_0', 'qwen35moe-q8_0'] as const;
const BS = 16;

function engine(fixture: string, opts: Partial<EngineConfig> = {}): EngineCore {
  const m = fixtureModel(fixture);
  return new EngineCore(m, kernels, {
    numBlocks: 64, blockSize: BS, kvDtype: 'f16', maxModelLen: 128, maxNumSeqs: 4, maxNumBatchedTokens: 256,
    enablePrefixCaching: true, stateCheckpoints: 8, logprobsMode: 'raw_logprobs', eosTokenIds: [...m.tokenizer.stopIds], ...opts,
  });
}

/** the same request on an engine without a prefix cache */
function reference(fixture: string, prompt: readonly number[], maxTokens: number): Run {
  return run(engine(fixture, { enablePrefixCaching: false, stateCheckpoints: 0 }), [prompt], maxTokens)[0]!;
}

const assertSameRun = (got: Run, want: Run, what: string) => assertSame(got, want, what, TOLERANCE);

for (const fixture of FIXTURES) {
  describe(`hybrid prefix caching (${fixture})`, () => {
    beforeEach(() => {
      kernels = referenceKernels;
      TOLERANCE = 0;
    });
    for (let k = 1; k <= 6; k++) {
      it(`a prompt sharing ${k} block${k > 1 ? 's' : ''} with an earlier one restores the state there: the same tokens, logprobs and logits`, () => {
        const e = engine(fixture);
        // the earlier prompt's checkpoint boundary is its last full block a lookup can reach: k blocks
        const first = base.slice(0, k * BS + 3);
        run(e, [first], 2);
        assert.equal(e.checkpoints!.stats.taken, 1, 'one checkpoint, at the end of the first prompt\'s last full block');
        const second = [...base.slice(0, k * BS), ...tail(7, k)];
        const [got] = run(e, [second], 8);
        assert.equal(got!.cached, k * BS, 'the hit covers the shared blocks');
        assert.equal(e.checkpoints!.stats.restored, 1);
        assertSameRun(got!, reference(fixture, second, 8), `hit at ${k * BS}`);
        e.checkpoints!.assertConsistent(e.blocks);
      });
    }

    it('the next turn of a chat hits at the last full block of the reply it resends', () => {
      const e = engine(fixture);
      const turn1 = base.slice(0, 20);
      const [reply] = run(e, [turn1], 40); // 60 tokens, 59 computed: generation crossed 32 and 48
      // the prompt's checkpoint (16) and the newest of the reply's (48; 32's was given up for it)
      assert.equal(e.checkpoints!.numUsed, 2);
      const turn2 = [...turn1, ...reply!.tokens, ...tail(6, 0)];
      const [got] = run(e, [turn2], 10);
      assert.equal(got!.cached, 48);
      assertSameRun(got!, reference(fixture, turn2, 10), 'turn 2');
    });

    it('a prompt whose blocks outlived their checkpoint takes one again when it is computed again', () => {
      const e = engine(fixture, { stateCheckpoints: 1 });
      const prompt = base.slice(0, 3 * BS + 3);
      run(e, [prompt], 2);
      // another prompt's checkpoint takes the only slot; the first prompt's blocks stay cached
      run(e, [tail(3 * BS + 3, 5)], 2);
      const [again] = run(e, [prompt], 2);
      assert.equal(again!.cached, 0, 'no checkpoint: no hit');
      // recomputed, its blocks are twins of the cached ones: the checkpoint goes on those
      const [third] = run(e, [prompt], 8);
      assert.equal(third!.cached, 3 * BS);
      assertSameRun(third!, reference(fixture, prompt, 8), 'hit on the recomputed prompt');
      e.checkpoints!.assertConsistent(e.blocks);
    });

    it('a corrupted checkpoint shows in the logits (the comparison can fail)', () => {
      const e = engine(fixture);
      run(e, [base.slice(0, 2 * BS + 3)], 2);
      const second = [...base.slice(0, 2 * BS), ...tail(7, 2)];
      // zero the one checkpoint's state (slot maxNumSeqs + 0): as if the hit started from nothing
      e.runner.kv.recurrent!.reset(e.config.maxNumSeqs);
      const [got] = run(e, [second], 8);
      assert.equal(got!.cached, 2 * BS);
      const error = rowError(got!, reference(fixture, second, 8));
      assert.ok(error > 1e-4, `a zeroed state gives other logits (${error.toExponential(2)})`);
    });
  });
}

describe('hybrid prefix caching under memory pressure', () => {
  // few checkpoints: they are given up for newer ones; few blocks: they leave with their blocks
  const cases = [
    { name: 'checkpoints run out', numBlocks: 14, stateCheckpoints: 3, gone: 'evicted' },
    { name: 'blocks run out', numBlocks: 12, stateCheckpoints: 16, gone: 'droppedWithBlock' },
  ] as const;
  for (const native of [false, true]) {
    for (const c of cases) {
      it(`${native ? '(native kernels) ' : ''}${c.name}: no request ever restores a wrong state`, () => {
        const fixture = 'qwen35-q8_0';
        kernels = native ? testKernels() : referenceKernels;
        TOLERANCE = native ? LLAMA_CPP_TOLERANCE.Q8_0 : 0;
        // up to 4 sequences of up to ~85 tokens, run two at a time
        const e = engine(fixture, { numBlocks: c.numBlocks, maxModelLen: 96, stateCheckpoints: c.stateCheckpoints });
        const ref = (p: readonly number[]) => reference(fixture, p, 12);
        const hits = runTwoAtATime(e, pressurePrompts(BS), 12, ref, TOLERANCE, () => e.checkpoints!.assertConsistent(e.blocks));
        const s = e.checkpoints!.stats;
        assert.ok(hits > 0 && s.restored > 0, `some requests hit (${hits})`);
        assert.ok(s[c.gone] > 0, `checkpoints went (${JSON.stringify(s)})`);
      });
    }
  }
});
