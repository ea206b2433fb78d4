// A hybrid model (Qwen3.5: Gated DeltaNet layers with per-sequence recurrent state beside the
// paged KV cache) in the serving engine: every request gets llama.cpp's greedy tokens alone,
// in a batch, with prefill cut into small chunks (the state carried across chunks), after
// preemption (recomputed from a zeroed state), as n > 1 completions (forked state), and the
// state slots come back on finish and abort. The memory budget counts the state and its
// checkpoints (prefix caching for hybrid models: hybrid-prefix.test.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EngineCore } from '../../src/engine/engine.js';
import type { EngineConfig } from '../../src/engine/engine.js';
import { recurrentStateLine, resolveEngineConfig } from '../../src/engine/options.js';
import { engineInfo } from '../../src/engine/create.js';
import type { RequestDelta } from '../../src/engine/protocol.js';
import type { SamplingParamsInput } from '../../src/engine/sampling-params.js';
import { testKernels } from '../fixtures/native.js';
import { KvCache } from '../../src/model/kv-cache.js';
import { loadModel } from '../../src/model/load.js';
import type { LoadedModel } from '../../src/model/load.js';
import { recurrentStateBytes } from '../../src/model/weights.js';
import { GOLDEN_DIR, ggufFixturePath } from '../fixtures/index.js';
import { readGolden } from '../fixtures/golden.js';
import type { GoldenPrompt } from '../fixtures/golden.js';
import { LLAMA_CPP_TOLERANCE } from '../fixtures/tolerance.js';
import { GGUF_FIXTURES } from '../fixtures/recipe.js';
import { resolveSamplingParams } from '../../src/engine/sampling-params.js';

const FIXTURE = 'qwen35-q8_0';
let cached: LoadedModel | undefined;
const model = (): LoadedModel => (cached ??= loadModel(ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === FIXTURE)!)));
// the native core where it loads (fast); the tokens are llama.cpp's either way
const kernels = testKernels();
const goldens = () => readGolden(GOLDEN_DIR, FIXTURE).prompts;

function engine(opts: Partial<EngineConfig> = {}): EngineCore {
  const m = model();
  return tap(new EngineCore(m, kernels, {
    numBlocks: 64, blockSize: 16, kvDtype: 'f16', maxModelLen: 128, maxNumSeqs: 4, maxNumBatchedTokens: 256,
    enablePrefixCaching: false, logprobsMode: 'raw_logprobs', eosTokenIds: [...m.tokenizer.stopIds], ...opts,
  }));
}

let nextId = 0;
function add(e: EngineCore, promptIds: readonly number[], params: SamplingParamsInput): string {
  const id = `r${nextId++}`;
  const refused = e.add({ type: 'add', id, promptIds: Int32Array.from(promptIds), params: resolveSamplingParams(params), arrivalTime: 0 });
  assert.equal(refused, undefined, refused?.error);
  return id;
}

/** the logits rows each completion sampled from, by `${id}#${index}` */
const tapped = new Map<string, Float32Array[]>();
function tap(e: EngineCore): EngineCore {
  e.logitsTap = (id, index, row) => tapped.set(`${id}#${index}`, [...(tapped.get(`${id}#${index}`) ?? []), row.slice()]);
  return e;
}

/** the completion's tokens are llama.cpp's, and so (within the Q8_0 bound) is every logits row they came from:
 *  the fixture's tokens follow a strong successor pattern, so a lost or stale state shows in the logits first */
function assertGolden(key: string, tokens: number[] | undefined, g: GoldenPrompt, steps = g.tokens.length): void {
  assert.deepEqual(tokens, g.tokens.slice(0, steps), `${key}: "${g.prompt}"`);
  // a forked completion's first token came from its parent's row: its own rows start at step 1
  const rows = tapped.get(key) ?? [];
  const first = steps - rows.length;
  assert.ok(first === 0 || (first === 1 && !key.endsWith('#0')), `${key}: ${rows.length} logits rows for ${steps} tokens`);
  for (let step = first; step < steps; step++) {
    const ref = g.steps[step]!;
    const scale = Math.max(...ref.values.map(Math.abs));
    const error = Math.max(...ref.ids.map((i, k) => Math.abs(rows[step - first]![i]! - ref.values[k]!))) / scale;
    assert.ok(error <= LLAMA_CPP_TOLERANCE.Q8_0, `${key} step ${step}: logits differ from llama.cpp's by ${error.toExponential(2)}`);
  }
}

function runToEnd(e: EngineCore, onStep?: (step: number) => void): Map<string, number[]> {
  const out = new Map<string, number[]>();
  const record = (d: RequestDelta) => out.set(`${d.id}#${d.index}`, [...(out.get(`${d.id}#${d.index}`) ?? []), ...d.tokenIds]);
  for (let step = 0; e.hasWork; step++) {
    onStep?.(step);
    e.step()?.deltas.forEach(record);
    assert.ok(step < 5000, 'the engine keeps making progress');
  }
  return out;
}

const greedy = (maxTokens: number): SamplingParamsInput => ({ temperature: 0, maxTokens, ignoreEos: true });

function assertAllFree(e: EngineCore): void {
  assert.equal(e.blocks.usage(), 0, 'no block is held');
  assert.equal(e.states!.numFree, e.states!.numSlots, 'every state slot is free');
}

describe('hybrid model (qwen35) in the engine', () => {
  for (const budget of [256, 5]) {
    it(`llama.cpp's greedy tokens inside a batch (token budget ${budget}: prefill ${budget < 20 ? 'in chunks' : 'whole'})`, () => {
      const e = engine({ maxNumBatchedTokens: budget });
      const ids = [...goldens(), ...goldens()].map((g) => [add(e, g.promptIds, greedy(g.tokens.length)), g] as const);
      const out = runToEnd(e);
      for (const [id, g] of ids) assertGolden(`${id}#0`, out.get(`${id}#0`), g);
      assertAllFree(e);
    });
  }

  it('preempted sequences are recomputed from a zeroed state and still give their tokens', () => {
    // 6 blocks of 16: not enough for four sequences of ~50 tokens at once
    const e = engine({ numBlocks: 6, maxModelLen: 96 });
    const ids = [...goldens(), ...goldens()].map((g) => [add(e, g.promptIds, greedy(g.tokens.length)), g] as const);
    const out = runToEnd(e);
    assert.ok(e.scheduler.numPreemptions > 0, 'the cache was small enough to preempt');
    for (const [id, g] of ids) assertGolden(`${id}#0`, out.get(`${id}#0`), g);
    assertAllFree(e);
  });

  it('n > 1 completions continue from a copy of the prompt\'s state', () => {
    const e = engine();
    const g = goldens()[1]!;
    const id = add(e, g.promptIds, { ...greedy(12), n: 3 });
    const out = runToEnd(e);
    for (const i of [0, 1, 2]) assertGolden(`${id}#${i}`, out.get(`${id}#${i}`), g, 12);
    assertAllFree(e);
  });

  it('aborts free the state slot; a request taking it after starts clean', () => {
    const e = engine({ maxNumSeqs: 2 });
    const [g0, g1] = goldens();
    const a = add(e, g0!.promptIds, greedy(32));
    const b = add(e, g1!.promptIds, greedy(32));
    const early: number[] = [];
    const keep = (d: RequestDelta) => d.id === b && early.push(...d.tokenIds);
    for (let i = 0; i < 5; i++) e.step()?.deltas.forEach(keep);
    assert.equal(e.states!.numFree, 0);
    e.abort([a]);
    e.step()?.deltas.forEach(keep);
    assert.equal(e.states!.numFree, 1, 'the aborted sequence\'s slot is free');
    const c = add(e, g0!.promptIds, greedy(g0!.tokens.length));
    const out = runToEnd(e);
    out.set(`${b}#0`, [...early, ...(out.get(`${b}#0`) ?? [])]);
    assertGolden(`${c}#0`, out.get(`${c}#0`), g0!); // the slot the aborted sequence left carries nothing over
    assertGolden(`${b}#0`, out.get(`${b}#0`), g1!);
    assertAllFree(e);
  });

  it('the memory budget counts the state and its checkpoints; the start-up line says both', () => {
    const m = model().config;
    const perSeq = recurrentStateBytes(m);
    // 3 linear layers × (conv 3×512 + delta-rule state 4×64×64) f32
    assert.equal(perSeq, 3 * (3 * 512 + 4 * 64 * 64) * 4);
    const memory = 8 * 2 ** 20;
    const c = resolveEngineConfig({ model: '', kvCacheMemory: memory, maxNumSeqs: 8, maxModelLen: 128 }, m, []);
    assert.equal(c.enablePrefixCaching, true);
    // two per sequence (16), but at most a quarter of what the sequences' state leaves: 7
    assert.equal(c.stateCheckpoints, Math.min(16, Math.floor((memory - 8 * perSeq) / 4 / perSeq)));
    assert.equal(c.stateCheckpoints, 7);
    const perBlock = KvCache.bytesPerToken(m, 'f16') * 16;
    assert.equal(perBlock, 1 * 2 * 2 * 64 * 2 * 16, 'only the one attention layer keeps KV');
    const blocksOf = (bytes: number) => Math.min(Math.floor(bytes / perBlock), 8 * 8);
    assert.equal(c.numBlocks, blocksOf(memory - (8 + 7) * perSeq));
    const few = resolveEngineConfig({ model: '', kvCacheMemory: 2 ** 20 + 8 * perSeq, maxNumSeqs: 8, maxModelLen: 128, stateCheckpoints: 2 }, m, []);
    assert.equal(few.numBlocks, blocksOf(2 ** 20 - 2 * perSeq));
    // without checkpoints (or with prefix caching off) a hybrid model caches no prefixes
    const none = resolveEngineConfig({ model: '', kvCacheMemory: memory, maxNumSeqs: 8, maxModelLen: 128, stateCheckpoints: 0 }, m, []);
    assert.equal(none.enablePrefixCaching, false);
    assert.equal(none.numBlocks, blocksOf(memory - 8 * perSeq));
    const off = resolveEngineConfig({ model: '', kvCacheMemory: memory, maxNumSeqs: 8, maxModelLen: 128, enablePrefixCaching: false }, m, []);
    assert.equal(off.stateCheckpoints, undefined);
    assert.throws(() => resolveEngineConfig({ model: '', kvCacheMemory: 8 * perSeq, maxNumSeqs: 8 }, m, []), /recurrent state of --max-num-seqs 8 sequences takes/);
    assert.throws(() => resolveEngineConfig({ model: '', kvCacheMemory: 10 * perSeq, maxNumSeqs: 8, stateCheckpoints: 2 }, m, []), /2 state checkpoints take/);
    assert.match(recurrentStateLine(m, 8)!, /^recurrent state 210\.0 KiB per sequence \(3 Gated DeltaNet layers\) × --max-num-seqs 8 = 1\.6 MiB of --kv-cache-memory; prefix caching is off/);
    assert.match(recurrentStateLine(m, 8, 8)!, /prefix caching keeps 8 state checkpoints at block boundaries = 1\.6 MiB more$/);
    assert.throws(() => engine({ enablePrefixCaching: true }), /prefix caching for a hybrid model needs checkpoints/);
  });

  it('each checkpoint costs what docs/architecture.md\'s formula says, in the real allocation', () => {
    // 4 · L · ((K − 1)·(2·Hk + Hv)·d + Hv·d²) bytes: L Gated DeltaNet layers, conv kernel K, d the head size, Hk/Hv key/value heads
    const m = model().config;
    const l = m.linearAttention!;
    const L = l.layers.filter(Boolean).length;
    const formula = 4 * L * ((l.convKernel - 1) * (2 * l.numKHeads + l.numVHeads) * l.headDim + l.numVHeads * l.headDim ** 2);
    const e = engine({ enablePrefixCaching: true, stateCheckpoints: 5, maxNumSeqs: 3 });
    const state = e.runner.kv.recurrent!;
    assert.equal(state.numSlots, 3 + 5, 'a slot per running sequence, then one per checkpoint');
    assert.equal(state.bytes, (3 + 5) * formula);
    assert.equal(recurrentStateBytes(m), formula);
    // the start-up line (loom serve prints the engine's notes) names the checkpoints and their memory
    assert.match(engineInfo(e).notes![0]!, /× --max-num-seqs 3 = .*; prefix caching keeps 5 state checkpoints at block boundaries = 1\.0 MiB more$/);
  });
});
