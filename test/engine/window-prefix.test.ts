// Prefix caching for models whose sliding-window layers keep a pool of their own (Gemma 3,
// Gemma 4): a hit forks the window its checkpoint pinned in that pool (window-checkpoints.ts).
// As hybrid-prefix.test.ts: every request run against a cache gives, with the reference
// kernels, bit-identical tokens, logprobs and logits to an engine without a prefix cache, at
// every block boundary a hit lands on (blocks of 4 against windows of 8 and 12), for the next
// turn of a chat, and under pressure on both pools; a stale window must show.
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
const FIXTURES = ['gemma3-q8_0', 'gemma4-q8_0'] as const;
const BS = 4;

function engine(fixture: string, opts: Partial<EngineConfig> = {}): EngineCore {
  const m = fixtureModel(fixture);
  return new EngineCore(m, kernels, {
    numBlocks: 64, swaBlocks: 40, blockSize: BS, kvDtype: 'f16', maxModelLen: 128, maxNumSeqs: 4, maxNumBatchedTokens: 256,
    enablePrefixCaching: true, stateCheckpoints: 8, logprobsMode: 'raw_logprobs', eosTokenIds: [...m.tokenizer.stopIds], ...opts,
  });
}

/** the same request on an engine without a prefix cache */
function reference(fixture: string, prompt: readonly number[], maxTokens: number): Run {
  return run(engine(fixture, { enablePrefixCaching: false, stateCheckpoints: 0 }), [prompt], maxTokens)[0]!;
}

const assertSameRun = (got: Run, want: Run, what: string) => assertSame(got, want, what, TOLERANCE);

for (const fixture of FIXTURES) {
  describe(`sliding-window prefix caching (${fixture})`, () => {
    beforeEach(() => {
      kernels = referenceKernels;
      TOLERANCE = 0;
    });
    for (let k = 1; k <= 6; k++) {
      it(`a prompt sharing ${k} block${k > 1 ? 's' : ''} with an earlier one forks the pinned window there: the same tokens, logprobs and logits`, () => {
        const e = engine(fixture);
        // the earlier prompt's checkpoint boundary is its last full block a lookup can reach: k blocks
        const first = base.slice(0, k * BS + 3);
        run(e, [first], 1); // ends at 4k + 3 computed: no boundary crossed while generating
        assert.equal(e.windowCheckpoints!.stats.taken, 1, 'one window pinned, at the end of the first prompt\'s last full block');
        const second = [...base.slice(0, k * BS), ...tail(7, k)];
        const [got] = run(e, [second], 8);
        assert.equal(got!.cached, k * BS, 'the hit covers the shared blocks');
        assert.equal(e.windowCheckpoints!.stats.restored, 1);
        assertSameRun(got!, reference(fixture, second, 8), `hit at ${k * BS}`);
        e.windowCheckpoints!.assertConsistent(e.blocks);
      });
    }

    it('the next turn of a chat hits at the last full block of the reply it resends', () => {
      const e = engine(fixture);
      const turn1 = base.slice(0, 20);
      const [reply] = run(e, [turn1], 40); // 60 tokens, 59 computed: generation crossed 20, 24, … 56
      // the prompt's window (16) and the newest of the reply's (56; the others were given up for it)
      assert.equal(e.windowCheckpoints!.numUsed, 2);
      const turn2 = [...turn1, ...reply!.tokens, ...tail(6, 0)];
      const [got] = run(e, [turn2], 10);
      assert.equal(got!.cached, 56);
      assertSameRun(got!, reference(fixture, turn2, 10), 'turn 2');
    });

    it('a prompt whose blocks outlived their pinned window pins one again when it is computed again', () => {
      const e = engine(fixture, { stateCheckpoints: 1 });
      const prompt = base.slice(0, 3 * BS + 3);
      run(e, [prompt], 1);
      // another prompt's window takes the only pin; the first prompt's global blocks stay cached
      run(e, [tail(3 * BS + 3, 5)], 1);
      const [again] = run(e, [prompt], 1);
      assert.equal(again!.cached, 0, 'no pinned window: no hit');
      // recomputed, its blocks are twins of the cached ones: the window is pinned on those
      const [third] = run(e, [prompt], 8);
      assert.equal(third!.cached, 3 * BS);
      assertSameRun(third!, reference(fixture, prompt, 8), 'hit on the recomputed prompt');
      e.windowCheckpoints!.assertConsistent(e.blocks);
    });

    it('a corrupted pinned window shows in the logits (the comparison can fail)', () => {
      const e = engine(fixture);
      run(e, [base.slice(0, 4 * BS + 3)], 2);
      const second = [...base.slice(0, 4 * BS), ...tail(7, 2)];
      // zero the pinned window's K and V in the sliding layers: as if the hit forked another window
      const kv = e.runner.kv;
      const pinned = e.windowCheckpoints!.owners()[0]!.blockTable.filter((b) => b >= 0);
      kv.layers.forEach((layer, li) => {
        if (!kv.inSwaPool[li]) return;
        const sh = kv.layerShape(li);
        const per = sh.blockSize * sh.numKvHeads * sh.headDim;
        for (const b of pinned) for (const a of [layer.k, layer.v]) a.fill(0, b * per, (b + 1) * per);
      });
      const [got] = run(e, [second], 8);
      assert.equal(got!.cached, 4 * BS);
      const error = rowError(got!, reference(fixture, second, 8));
      assert.ok(error > 1e-4, `a zeroed state gives other logits (${error.toExponential(2)})`);
    });
  });
}

describe('sliding-window prefix caching under memory pressure (gemma3-q8_0)', () => {
  // few checkpoints: given up for newer ones; few global blocks: they leave with their blocks;
  // a small sliding pool: pinned windows are given up before a sequence is preempted
  const cases = [
    { name: 'checkpoints run out', numBlocks: 30, swaBlocks: 40, stateCheckpoints: 5, gone: 'evicted' },
    { name: 'global blocks run out', numBlocks: 22, swaBlocks: 40, stateCheckpoints: 16, gone: 'droppedWithBlock' },
    { name: 'the sliding pool runs out', numBlocks: 64, swaBlocks: 18, stateCheckpoints: 16, gone: 'evicted' },
  ] as const;
  for (const native of [false, true]) {
    for (const c of cases) {
      it(`${native ? '(native kernels) ' : ''}${c.name}: no request ever forks a wrong window`, () => {
        const fixture = 'gemma3-q8_0';
        kernels = native ? testKernels() : referenceKernels;
        TOLERANCE = native ? LLAMA_CPP_TOLERANCE.Q8_0 : 0;
        const e = engine(fixture, { numBlocks: c.numBlocks, swaBlocks: c.swaBlocks, maxModelLen: 96, stateCheckpoints: c.stateCheckpoints });
        const ref = (p: readonly number[]) => reference(fixture, p, 12);
        const hits = runTwoAtATime(e, pressurePrompts(BS), 12, ref, TOLERANCE, () => {
          e.blocks.assertConsistent();
          e.swaBlocks!.manager.assertConsistent();
        });
        const s = e.windowCheckpoints!.stats;
        assert.ok(hits > 0 && s.restored > 0, `some requests hit (${hits})`);
        assert.ok(s[c.gone] > 0, `pinned windows went (${JSON.stringify(s)})`);
      });
    }
  }
});
