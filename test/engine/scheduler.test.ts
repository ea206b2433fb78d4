// The scheduler under a seeded randomized model test: thousands of steps of arrivals,
// chunked prefills, decodes, finishes and aborts on a small cache that forces preemption,
// checked against a plain model of what each sequence should have after every step:
// the token budget and sequence cap hold, every chunk is in range and backed by blocks,
// no block is shared (prefix caching off) or leaked, the counters match, waiting requests
// start first-come-first-served, and every request finishes with all its tokens. With a
// step-time factor: prefill tokens stay within the budget step-budget.ts computes, and no
// decoding sequence is skipped while the token budget holds them all.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BlockManager } from '../../src/engine/block-manager.js';
import { Rng } from '../../src/engine/rng.js';
import { Scheduler } from '../../src/engine/scheduler.js';
import { Sequence } from '../../src/engine/sequence.js';

interface Model {
  readonly seq: Sequence;
  readonly want: number;
  readonly order: number;
  aborted: boolean;
}

/** Runs the model test; returns how many sequences it saw preempted (running, then waiting without blocks). */
function simulate(seed: number, opts: { numBlocks: number; blockSize: number; budget: number; maxSeqs: number; steps: number; stepTimeFactor?: number }): number {
  const rng = new Rng(seed);
  const int = (lo: number, hi: number): number => lo + Math.floor(rng.next() * (hi - lo + 1));
  const blocks = new BlockManager({ numBlocks: opts.numBlocks, blockSize: opts.blockSize, enablePrefixCaching: false });
  const maxModelLen = (opts.numBlocks * opts.blockSize) / 2;
  const factor = opts.stepTimeFactor ?? 0;
  const sched = new Scheduler({ maxNumBatchedTokens: opts.budget, maxNumSeqs: opts.maxSeqs, maxModelLen, enablePrefixCaching: false, stepTimeFactor: factor }, blocks);
  const live: Model[] = [];
  const done: Model[] = [];
  let arrivals = 0;
  let lastAdmitted = -1;
  let seenPreempted = 0;
  for (let step = 0; step < opts.steps || live.length > 0; step++) {
    assert.ok(step < opts.steps * 20, `seed ${seed}: requests still live after ${step} steps (starvation)`);
    // arrivals (only during the first part), and aborts
    if (step < opts.steps && rng.next() < 0.3) {
      const prompt = int(1, maxModelLen / 2);
      const seq = new Sequence(`r${arrivals}`, 0, Array.from({ length: prompt }, (_, i) => i), step);
      live.push({ seq, want: int(1, maxModelLen - prompt), order: arrivals++, aborted: false });
      sched.add(seq);
    }
    if (live.length > 0 && rng.next() < 0.03) {
      const victim = live[int(0, live.length - 1)]!;
      victim.aborted = true;
      sched.finish(victim.seq, 'abort');
    }
    const before = new Map(live.map((m) => [m.seq, m.seq.status]));
    const decoding = live.filter((m) => m.seq.status === 'running' && m.seq.numUncomputed === 1).map((m) => m.seq);
    const { chunks, copyOps } = sched.schedule(step);
    // a synthetic forward time (2 ms + 0.25 ms a token, ±10%) teaches the cost model
    sched.observeStep(chunks.reduce((n, c) => n + c.numTokens, 0), (2 + 0.25 * chunks.reduce((n, c) => n + c.numTokens, 0)) * (0.9 + 0.2 * rng.next()));
    if (factor > 0) {
      // a decode preempted for blocks and admitted again in the same step recomputes: prefill
      const prefillTokens = chunks.filter((c) => !(c.numTokens === 1 && decoding.includes(c.seq))).reduce((n, c) => n + c.numTokens, 0);
      assert.ok(prefillTokens <= sched.lastPrefillBudget, `prefill ${prefillTokens} over its budget ${sched.lastPrefillBudget}`);
      if (decoding.length > 0 && decoding.length <= opts.budget) assert.ok(sched.lastPrefillBudget <= opts.budget - decoding.length);
      // decodes first: every one still running was scheduled (when the budget holds them all)
      if (decoding.length <= opts.budget) {
        for (const seq of decoding) if (seq.status === 'running') assert.ok(chunks.some((c) => c.seq === seq), `decode of ${seq.requestId} starved`);
      }
    }
    assert.equal(copyOps.length, 0, 'no copy-on-write without forks');
    // budget, cap, one chunk per sequence, in range, backed by blocks
    assert.ok(chunks.reduce((n, c) => n + c.numTokens, 0) <= opts.budget);
    assert.equal(new Set(chunks.map((c) => c.seq)).size, chunks.length);
    assert.ok(sched.numRunning <= opts.maxSeqs);
    for (const { seq, numTokens } of chunks) {
      assert.equal(seq.status, 'running');
      assert.ok(numTokens >= 1 && seq.numComputed + numTokens <= seq.tokens.length, `chunk in range for ${seq.requestId}`);
      assert.ok(seq.blockTable.length * opts.blockSize >= seq.numComputed + numTokens, 'blocks cover the chunk');
      if (before.get(seq) === 'waiting') {
        const m = live.find((x) => x.seq === seq)!;
        // first admissions in arrival order (a preempted sequence comes back first, it arrived earlier)
        if (seq.numOutput === 0 && seq.firstScheduledTime === step) {
          assert.ok(m.order > lastAdmitted, `FCFS: ${seq.requestId} admitted after a later arrival`);
          lastAdmitted = m.order;
        }
      }
    }
    // seen from outside: a running sequence sent back to waiting, its blocks freed
    for (const m of live) if (before.get(m.seq) === 'running' && m.seq.status === 'waiting') seenPreempted++;
    // no block in two tables, none lost
    const owners = live.filter((m) => m.seq.status === 'running').map((m) => m.seq);
    const used = owners.flatMap((s) => s.blockTable);
    assert.equal(new Set(used).size, used.length, 'a block is owned twice');
    assert.equal(blocks.numFreeBlocks + used.length, opts.numBlocks, 'blocks leaked');
    for (const m of live) if (m.seq.status === 'waiting') assert.equal(m.seq.blockTable.length, 0, 'a waiting sequence holds blocks');
    // the forward pass, then sampling for sequences whose chunk reached the end
    sched.update(chunks);
    for (const { seq } of chunks) {
      if (seq.status !== 'running' || seq.numComputed !== seq.tokens.length) continue;
      seq.tokens.push(seq.tokens.length);
      const m = live.find((x) => x.seq === seq)!;
      if (seq.numOutput >= m.want || seq.tokens.length >= maxModelLen) sched.finish(seq, 'length');
    }
    for (const seq of sched.drainFinished()) {
      const i = live.findIndex((m) => m.seq === seq);
      assert.ok(i >= 0, 'a sequence finished twice');
      done.push(...live.splice(i, 1));
      assert.equal(seq.blockTable.length, 0, 'a finished sequence keeps blocks');
    }
    assert.equal(sched.numRunning, live.filter((m) => m.seq.status === 'running').length);
    assert.equal(sched.numWaiting, live.filter((m) => m.seq.status === 'waiting').length);
  }
  assert.equal(done.length, arrivals);
  for (const m of done) {
    if (m.aborted) assert.equal(m.seq.finishReason, 'abort');
    else assert.equal(m.seq.numOutput, Math.min(m.want, maxModelLen - m.seq.promptLength), `${m.seq.requestId} got all its tokens`);
  }
  assert.equal(blocks.numFreeBlocks, opts.numBlocks);
  assert.equal(sched.hasWork, false);
  // the counter the metrics report (num_preemptions_total) counts at least what was seen (a
  // sequence preempted and admitted again in one step is counted but not seen)
  assert.ok(sched.numPreemptions >= seenPreempted, `${sched.numPreemptions} preemptions counted, ${seenPreempted} seen`);
  return seenPreempted;
}

describe('Scheduler: randomized model test', () => {
  it('holds its invariants and finishes every request (tight cache: preemption)', () => {
    for (let seed = 1; seed <= 12; seed++) {
      const preemptions = simulate(seed, { numBlocks: 16, blockSize: 4, budget: 24, maxSeqs: 4, steps: 400 });
      // the point of the tight cache: the invariants held through preemptions, not without any
      assert.ok(preemptions > 0, `seed ${seed}: no preemption happened`);
    }
  });
  it('holds its invariants with a roomy cache and a small budget (chunked prefill)', () => {
    for (let seed = 100; seed <= 105; seed++) simulate(seed, { numBlocks: 64, blockSize: 8, budget: 7, maxSeqs: 8, steps: 300 });
  });
  it('holds its invariants with a step-time factor: decodes first, prefill within its budget', () => {
    for (let seed = 200; seed <= 205; seed++) simulate(seed, { numBlocks: 16, blockSize: 4, budget: 24, maxSeqs: 4, steps: 400, stepTimeFactor: 1.5 });
    for (let seed = 300; seed <= 305; seed++) simulate(seed, { numBlocks: 256, blockSize: 8, budget: 512, maxSeqs: 16, steps: 300, stepTimeFactor: 2 });
  });
});
