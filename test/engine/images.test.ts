// Images through the serving engine, with a stand-in projector whose embeddings are token
// embeddings (fixtures/token-projector.ts): a prompt with an image gives the logits of the
// same prompt with the image's tokens in its place, alone, beside others and under chunked
// prefill; a span is never split across chunks; one encode call serves every image a step
// needs; the prefix cache hits on the same picture and misses on another.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { ForwardBatch } from '../../src/model/batch.js';
import { ggufFixturePath } from '../fixtures/index.js';
import { GGUF_FIXTURES } from '../fixtures/recipe.js';
import { EngineCore } from '../../src/engine/engine.js';
import type { EngineImage } from '../../src/engine/image-spans.js';
import { fitToSpans, spansOf } from '../../src/engine/image-spans.js';
import { resolveEngineConfig } from '../../src/engine/options.js';
import type { EngineOptions } from '../../src/engine/options.js';
import type { RequestDelta } from '../../src/engine/protocol.js';
import { resolveSamplingParams } from '../../src/engine/sampling-params.js';
import type { Kernels } from '../../src/kernels/index.js';
import { referenceKernels } from '../../src/kernels/reference.js';
import { fixtureModel } from '../fixtures/engine-run.js';
import { requireNative } from '../fixtures/native.js';
import { tokenImage, tokenProjector } from '../fixtures/token-projector.js';
import type { TokenProjector } from '../fixtures/token-projector.js';

const native = requireNative();
const KERNELS: [string, Kernels | undefined][] = [['reference', referenceKernels], ['native', native]];

interface Run { tokens: number[]; rows: Float32Array[]; cached: number }

function engineFor(name: string, k: Kernels, projector: TokenProjector | undefined, opts: Partial<EngineOptions> = {}): EngineCore {
  const m = fixtureModel(name);
  return new EngineCore({ ...m, projector }, k, resolveEngineConfig({ model: '', blockSize: 4, maxModelLen: 96, ...opts }, m.config, [...m.tokenizer.stopIds]));
}

let nextId = 0;
/** runs the requests (added together) greedily to the end; also records every step's chunks */
function run(e: EngineCore, requests: readonly { ids: readonly number[]; images?: EngineImage[] }[], maxTokens = 4, onStep?: () => void): Run[] {
  const runs = new Map<string, Run>();
  const ids = requests.map((r) => {
    const id = `r${nextId++}`;
    runs.set(id, { tokens: [], rows: [], cached: -1 });
    const params = resolveSamplingParams({ temperature: 0, maxTokens, ignoreEos: true });
    const refused = e.add({ type: 'add', id, promptIds: Int32Array.from(r.ids), params, arrivalTime: 0, ...(r.images && { images: r.images }) });
    assert.equal(refused, undefined, refused?.error);
    return id;
  });
  e.logitsTap = (id, _i, row) => runs.get(id)!.rows.push(row.slice());
  const record = (d: RequestDelta) => {
    const r = runs.get(d.id)!;
    r.tokens.push(...d.tokenIds);
    if (d.cachedPromptTokens !== undefined) r.cached = d.cachedPromptTokens;
  };
  for (let step = 0; e.hasWork; step++) {
    e.step()?.deltas.forEach(record);
    onStep?.();
    assert.ok(step < 1000);
  }
  return ids.map((id) => runs.get(id)!);
}

function maxRowDiff(a: Run, b: Run): number {
  assert.equal(a.rows.length, b.rows.length);
  let m = 0;
  a.rows.forEach((r, i) => r.forEach((v, j) => (m = Math.max(m, Math.abs(v - b.rows[i]![j]!)))));
  return m;
}

const PROMPT = Array.from({ length: 30 }, (_, i) => (i * 7919 + 3) % 250 + 1);
/** the prompt with positions [at, at + n) as an image of those tokens (their ids become 0) */
function withImage(prompt: readonly number[], at: number, n: number): { ids: number[]; images: EngineImage[] } {
  return { ids: prompt.map((t, i) => (i >= at && i < at + n ? 0 : t)), images: [tokenImage(prompt.slice(at, at + n), at)] };
}

for (const [kernelName, k] of KERNELS) {
  describe(`images in the engine (${kernelName} kernels)`, { skip: k ? false : 'native core unavailable' }, () => {
    for (const name of ['llama-f32', 'gemma3-q8_0', 'qwen35-f16']) {
      it(`${name}: an image of tokens gives the tokens' logits, alone, batched and in chunks`, () => {
        const m = fixtureModel(name);
        const imaged = [withImage(PROMPT, 7, 11), withImage(PROMPT.slice(3), 2, 5)];
        // a budget of 8 tokens a step: the 11-token span runs alone in its step, never split
        const textUnder = (maxNumBatchedTokens: number) =>
          run(engineFor(name, k!, undefined, { enablePrefixCaching: false, maxNumBatchedTokens }), [{ ids: PROMPT }, { ids: PROMPT.slice(3) }]);
        // The native kernels' sums depend on how a prompt is chunked (which kernel a step's rows
        // take, the order of sums; qwen35-f16 on an AVX2-only CPU moves by 0.02), and an unsplit
        // image cannot take the text's chunks: it may move the logits by what chunking alone does.
        const [whole, chunked] = [textUnder(256), textUnder(8)];
        const chunkingMoves = Math.max(...whole.map((r, i) => maxRowDiff(r, chunked[i]!)));
        for (const maxNumBatchedTokens of [256, 8]) {
          const text = maxNumBatchedTokens === 256 ? whole : chunked;
          const projector = tokenProjector(m);
          const e = engineFor(name, k!, projector, { enablePrefixCaching: false, maxNumBatchedTokens });
          const got = run(e, imaged);
          got.forEach((r, i) => {
            assert.deepEqual(r.tokens, text[i]!.tokens);
            assert.ok(maxRowDiff(r, text[i]!) < Math.max(1e-3, 2 * chunkingMoves), `request ${i} (budget ${maxNumBatchedTokens}) differs by ${maxRowDiff(r, text[i]!)} (chunking alone: ${chunkingMoves})`);
          });
          if (maxNumBatchedTokens === 256) assert.deepEqual(projector.calls, [2], 'one encode call for both requests\' images');
        }
      });
    }

    it('the prefix cache hits on the same picture and misses on another', () => {
      const name = 'llama-f32';
      const projector = tokenProjector(fixtureModel(name));
      const e = engineFor(name, k!, projector, { enablePrefixCaching: true });
      const first = withImage(PROMPT, 4, 12);
      const [a] = run(e, [first]);
      const [same] = run(e, [withImage(PROMPT, 4, 12)]);
      // 30 prompt tokens in blocks of 4: everything up to the last full block before the end
      assert.equal(same!.cached, 28);
      assert.deepEqual(same!.tokens, a!.tokens);
      const other = PROMPT.map((t, i) => (i === 9 ? t + 1 : t)); // one "pixel" differs, inside the image
      const [miss] = run(e, [withImage(other, 4, 12)]);
      assert.equal(miss!.cached, 4, 'only the block before the image');
      // the same ids with no image at all do not hit the image's blocks either
      const [plain] = run(e, [{ ids: first.ids }]);
      assert.equal(plain!.cached, 4);
      assert.equal(projector.calls.length, 2, 'the hit covered the whole image: no encode for it');
    });

    it('a non-causal image changes what follows it, and is never split even by a prefix hit inside it', () => {
      const name = 'llama-f32';
      const m = fixtureModel(name);
      const opts = { enablePrefixCaching: false, maxNumBatchedTokens: 8 };
      const causal = run(engineFor(name, k!, tokenProjector(m), opts), [withImage(PROMPT, 6, 9)]);
      const e = engineFor(name, k!, tokenProjector(m, { nonCausal: true }), { ...opts, enablePrefixCaching: true });
      const [both] = run(e, [withImage(PROMPT, 6, 9)]);
      assert.ok(maxRowDiff(both!, causal[0]!) > 1e-4);
      // the same image (positions 6..14), other text from 15 on: blocks of 4 hit up to 12, inside the span
      const other = withImage(PROMPT.map((t, i) => (i >= 15 ? t + 1 : t)), 6, 9);
      const fresh = run(engineFor(name, k!, tokenProjector(m, { nonCausal: true }), opts), [other]);
      const [hit] = run(e, [other]);
      assert.equal(hit!.cached, 12);
      assert.deepEqual(hit!.tokens, fresh[0]!.tokens);
      assert.ok(maxRowDiff(hit!, fresh[0]!) < 1e-3, `differs by ${maxRowDiff(hit!, fresh[0]!)}`);
    });
  });
}

describe('image spans and the scheduler', () => {
  const spans = spansOf([tokenImage([1, 2, 3, 4, 5, 6], 4), tokenImage([7, 8], 12)]);
  it('a chunk stops before a span, takes it whole, or waits', () => {
    assert.equal(fitToSpans(spans, 0, 3, false), 3); // before the first span
    assert.equal(fitToSpans(spans, 0, 6, false), 4); // would end inside: stops at its start
    assert.equal(fitToSpans(spans, 0, 10, false), 10); // takes it whole
    assert.equal(fitToSpans(spans, 4, 3, true), 6); // starts at it, first prefill: all of it, over the offer
    assert.equal(fitToSpans(spans, 4, 3, false), 0); // not the first prefill: waits
    assert.equal(fitToSpans(spans, 7, 2, true), 3); // starts inside it (a prefix hit): to its end
    assert.equal(fitToSpans(spans, 10, 3, false), 2); // stops before the second
  });

  it('no scheduled chunk ends inside an image span, under any budget', () => {
    const name = 'llama-f32';
    const m = fixtureModel(name);
    for (const budget of [3, 5, 8, 13]) {
      const e = engineFor(name, referenceKernels, tokenProjector(m), { enablePrefixCaching: false, maxNumBatchedTokens: budget });
      const reqs = [withImage(PROMPT, 2, 9), withImage(PROMPT.slice(5), 10, 6), { ids: PROMPT.slice(0, 12) }];
      const seen: number[][] = [];
      const schedule = e.scheduler.schedule.bind(e.scheduler);
      e.scheduler.schedule = (now) => {
        const out = schedule(now);
        for (const c of out.chunks) {
          const to = c.seq.numComputed + c.numTokens;
          for (const s of c.seq.images) assert.ok(!(s.start < to && to < s.end), `budget ${budget}: a chunk ends at ${to}, inside [${s.start}, ${s.end})`);
        }
        seen.push(out.chunks.map((c) => c.numTokens));
        return out;
      };
      run(e, reqs, 2);
      assert.ok(seen.some((s) => s.reduce((a, b) => a + b, 0) > budget) === (budget < 9), `budget ${budget}: an over-budget span ran alone`);
    }
  });

  it('refuses images without a projector, with prompt logprobs, or out of range', () => {
    const name = 'llama-f32';
    const m = fixtureModel(name);
    const params = resolveSamplingParams({ temperature: 0, maxTokens: 2 });
    const img = withImage(PROMPT, 4, 4);
    const add = (e: EngineCore, images: EngineImage[], p = params) => e.add({ type: 'add', id: `x${nextId++}`, promptIds: Int32Array.from(img.ids), params: p, arrivalTime: 0, images });
    assert.match(add(engineFor(name, referenceKernels, undefined), img.images)!.error!, /no vision projector/);
    const e = engineFor(name, referenceKernels, tokenProjector(m));
    assert.match(add(e, img.images, resolveSamplingParams({ temperature: 0, maxTokens: 2, promptLogprobs: 1 }))!.error!, /prompt logprobs/);
    assert.match(add(e, [tokenImage([1, 2, 3], 28)])!.error!, /past the prompt's end/);
    assert.match(add(e, [tokenImage([1, 2, 3], 2), tokenImage([1, 2], 4)])!.error!, /overlaps/);
  });
});

describe('images across engines and positions', () => {
  const dirs: string[] = [];
  after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

  it('--kv-cache-dir: a restarted engine hits the same picture from disk and misses another', () => {
    const name = 'llama-f32';
    const m = fixtureModel(name);
    const dir = mkdtempSync(join(tmpdir(), 'loom-kvdir-img-'));
    dirs.push(dir);
    const path = ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === name)!);
    const engine = () => new EngineCore({ ...m, projector: tokenProjector(m) }, referenceKernels,
      resolveEngineConfig({ model: path, blockSize: 4, maxModelLen: 96, kvCacheMemory: '8MiB', kvCacheDir: dir }, m.config, [...m.tokenizer.stopIds]));
    const [cold] = run(engine(), [withImage(PROMPT, 4, 12)]);
    const restarted = engine();
    const [warm] = run(restarted, [withImage(PROMPT, 4, 12)]);
    assert.equal(warm!.cached, 28);
    assert.ok(restarted.diskCache!.stats.blocksLoaded >= 7);
    assert.deepEqual(warm!.tokens, cold!.tokens);
    const other = PROMPT.map((t, i) => (i === 9 ? t + 1 : t));
    const [miss] = run(engine(), [withImage(other, 4, 12)]);
    assert.equal(miss!.cached, 4, 'only the block before the image');
  });

  it('KV events name an image\'s blocks by its keys (CBOR negative integers), the same picture the same hashes', () => {
    const m = fixtureModel('llama-f32');
    const hashes = (e: EngineCore) => {
      const seen: bigint[] = [];
      const step = e.step.bind(e);
      e.step = () => {
        const out = step();
        for (const ev of out?.kvEvents ?? []) if (ev.type === 'stored') seen.push(...ev.hashes);
        return out;
      };
      return seen;
    };
    const runOnce = (ids: number[]) => {
      const e = engineFor('llama-f32', referenceKernels, tokenProjector(m), { enablePrefixCaching: true, kvEvents: { hashSeed: '' } });
      const seen = hashes(e);
      run(e, [withImage(ids, 4, 12)]);
      return seen;
    };
    const a = runOnce(PROMPT), b = runOnce(PROMPT), c = runOnce(PROMPT.map((t, i) => (i === 9 ? t + 1 : t)));
    assert.ok(a.length >= 7);
    assert.deepEqual(b, a);
    assert.equal(c[0], a[0]);
    assert.notEqual(c[1], a[1]);
  });

  it("an 'mrope' projector's batches carry M-RoPE positions: text after an image goes on from max(rows, cols)", () => {
    const name = 'llama-f32';
    const m = fixtureModel(name);
    const e = engineFor(name, referenceKernels, tokenProjector(m, { positions: 'mrope' }), { enablePrefixCaching: false });
    const batches: ForwardBatch[] = [];
    const execute = e.runner.execute.bind(e.runner);
    e.runner.execute = (b) => (batches.push(b), execute(b));
    // a 2 × 3 image at 5..10: rope positions 0..4, then (5; 5..6; 5..7), then text from 5 + 3 = 8
    const img = { ids: PROMPT.slice(0, 14).map((t, i) => (i >= 5 && i < 11 ? 0 : t)), images: [tokenImage(PROMPT.slice(5, 11), 5, 2)] };
    run(e, [img, { ids: PROMPT.slice(0, 6) }], 2);
    const first = batches[0]!;
    const n = first.positions.length;
    const rope = first.ropePositions!;
    assert.ok(rope, 'the first step has M-RoPE positions');
    const t = [...rope.subarray(0, 14)], h = [...rope.subarray(n, n + 14)], w = [...rope.subarray(2 * n, 2 * n + 14)];
    assert.deepEqual(t, [0, 1, 2, 3, 4, 5, 5, 5, 5, 5, 5, 8, 9, 10]);
    assert.deepEqual(h, [0, 1, 2, 3, 4, 5, 5, 5, 6, 6, 6, 8, 9, 10]);
    assert.deepEqual(w, [0, 1, 2, 3, 4, 5, 6, 7, 5, 6, 7, 8, 9, 10]);
    // the sequence without images: its own positions in every section
    assert.deepEqual([...rope.subarray(14, n)], [0, 1, 2, 3, 4, 5]);
    // a later decode step of the first sequence goes on from there (index 14 → rope 11)
    const decode = batches.find((b) => b !== first && b.ropePositions && b.positions[0] === 14)!;
    assert.equal(decode.ropePositions![0], 11);
  });
});
