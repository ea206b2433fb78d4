// `loom bench spec`: what speculative decoding (prompt lookup, or a draft model) gains for one stream.
// Part 1, a trained model (stories260K by default) on prompts that invite copying: one
// greedy sequence with and without speculation (alternating runs), acceptance and tokens/s.
// Part 2, a bandwidth-bound model (random weights: its own acceptance means nothing): the
// forward pass's time for B sequences of K+1 tokens against B of 1 at the same context,
// combined with part 1's acceptance into the speedup to expect at each batch size B — where
// that falls under 1 is where loom stops drafting (disable_by_batch_size).
// With a draft model (--draft-model), part 1 drafts with it, and part 3 times its decode step
// for B sequences: a speculative step costs K draft steps plus the K+1-token verify, against
// one plain decode step; the table gives the acceptance where that breaks even and the
// speedup at several acceptance rates (random-weight models accept nothing meaningful, so
// the cost is what they measure).
import { performance } from 'node:perf_hooks';
import { createEngineCore } from '../engine/create.js';
import type { EngineCore } from '../engine/engine.js';
import type { Backend } from '../engine/options.js';
import type { SpeculativeConfigInput } from '../engine/spec/config.js';
import { buildBatch } from '../model/batch.js';
import type { SequenceChunk } from '../model/batch.js';
import { loadModel } from '../model/load.js';
import type { LoadOptions } from '../model/load.js';
import { mean } from './stats.js';
import { resolveSamplingParams } from '../engine/sampling-params.js';

export interface SpecBenchOptions {
  readonly model: string;
  /** --no-mmap, --mlock (the models this benchmark loads) */
  readonly load?: LoadOptions;
  /** the bandwidth-bound model whose verify cost is measured (none: part 2 is skipped; with a draft model, -m is timed) */
  readonly verifyModel?: string;
  /** a draft model with the model's vocabulary (method "draft_model"); none: prompt lookup */
  readonly draftModel?: string;
  readonly numSpeculativeTokens: number;
  readonly promptLookupMax: number;
  readonly promptLookupMin: number;
  readonly outputLen: number;
  readonly repeatRuns: number;
  /** batch sizes (running sequences) at which the verify cost is measured */
  readonly batchSizes: readonly number[];
  /** context length the verify cost is measured at */
  readonly context: number;
  readonly backend: Backend;
  readonly threads?: number;
}

/** prompts that invite copying: retell, continue a list, edit a passage */
export const COPY_PROMPTS: Readonly<Record<string, string>> = {
  retell:
    'Lily went to the park with her mom. She saw a big red ball under a tree. She played with the ball all day. ' +
    'Then she went home and ate a cake. Tell the story again. Lily went to the park',
  list: 'Tom had a cat, a dog, a bird, a fish, a cat, a dog, a bird, a fish, a cat, a dog,',
  edit:
    'The little dog ran to the house. He was very happy to see his friend. They played in the sun. ' +
    'Now the same with a cat. The little cat ran to the house.',
};

const RETELL_OWN_OPENING = 'Once upon a time';

export interface PromptResult {
  readonly name: string;
  readonly outputTokens: number;
  /** steps of the speculative run that verified a draft, and its draft and accepted tokens */
  readonly drafts: number;
  readonly draftTokens: number;
  readonly acceptedTokens: number;
  /** [K + 1] verify steps by draft length (index 0: steps without a draft) */
  readonly stepsByDraftLength: number[];
  readonly plainTokPerS: number;
  readonly specTokPerS: number;
  readonly sameTokens: boolean;
}

export interface VerifyCost {
  readonly batchSize: number;
  /** ms of a forward pass of B sequences × n tokens, n = 1 … K + 1 */
  readonly msByTokens: number[];
}

export interface SpecReport {
  readonly settings: SpecBenchOptions;
  readonly prompts: PromptResult[];
  readonly verify: VerifyCost[];
  /** per batch size: the one-stream speedup expected on the verify model with part 1's drafts */
  readonly predicted: { batchSize: number; speedup: number }[];
  /** with a draft model: per batch size, its decode step's ms (B × 1 token) */
  readonly draftCost: { batchSize: number; stepMs: number }[];
}

/** acceptance rates the draft-model cost table shows the speedup at */
export const ACCEPTANCE_RATES = [0.5, 0.7, 0.9] as const;

export function runSpecBench(opts: SpecBenchOptions, log: (line: string) => void = () => {}): SpecReport {
  const model = loadModel(opts.model, opts.load);
  const spec: SpeculativeConfigInput = opts.draftModel
    ? { method: 'draft_model', model: opts.draftModel, num_speculative_tokens: opts.numSpeculativeTokens }
    : {
        method: 'ngram',
        num_speculative_tokens: opts.numSpeculativeTokens,
        prompt_lookup_max: opts.promptLookupMax,
        prompt_lookup_min: opts.promptLookupMin,
      };
  // one sequence: a context of 2048 at most keeps the cache small for any model
  const maxModelLen = Math.min(model.config.contextLength, 2048);
  const base = { model: opts.model, backend: opts.backend, kvCacheMemory: '512MiB', maxModelLen, maxNumSeqs: 1, enablePrefixCaching: false, ...(opts.threads !== undefined && { threads: opts.threads }), ...opts.load };
  const plain = createEngineCore(base, model);
  const specEngine = createEngineCore({ ...base, speculativeConfig: spec }, model);
  const prompts: PromptResult[] = [];
  const inputs = Object.entries(COPY_PROMPTS).map(([name, text]) => [name, model.tokenizer.encode(text, { addSpecial: true })] as const);
  // retell its own: the model's story, then its opening again (what a "say that again" turn looks like)
  const opening = model.tokenizer.encode(RETELL_OWN_OPENING, { addSpecial: true });
  const story = generateOnce(plain, opening, opts.outputLen, opts.numSpeculativeTokens).tokens;
  inputs.push(['own', [...opening, ...story, ...model.tokenizer.encode(` ${RETELL_OWN_OPENING}`, { addSpecial: false })]]);
  for (const [name, ids] of inputs) {
    const plainRates: number[] = [];
    const specRates: number[] = [];
    let last: ReturnType<typeof generateOnce> | undefined;
    let plainTokens: number[] = [];
    for (let r = -1; r < opts.repeatRuns; r++) {
      const a = generateOnce(plain, ids, opts.outputLen, opts.numSpeculativeTokens);
      const b = generateOnce(specEngine, ids, opts.outputLen, opts.numSpeculativeTokens);
      if (r < 0) continue; // warm-up
      plainRates.push(a.tokens.length / (a.ms / 1000));
      specRates.push(b.tokens.length / (b.ms / 1000));
      plainTokens = a.tokens;
      last = b;
    }
    const result: PromptResult = {
      name,
      outputTokens: last!.tokens.length,
      drafts: last!.drafts,
      draftTokens: last!.draftTokens,
      acceptedTokens: last!.accepted,
      stepsByDraftLength: last!.stepsByDraftLength,
      plainTokPerS: mean(plainRates),
      specTokPerS: mean(specRates),
      sameTokens: plainTokens.join() === last!.tokens.join(),
    };
    log(`${name}: ${result.acceptedTokens}/${result.draftTokens} draft tokens accepted, ${result.plainTokPerS.toFixed(0)} → ${result.specTokPerS.toFixed(0)} tok/s`);
    prompts.push(result);
  }
  const verifyModel = opts.verifyModel ?? (opts.draftModel ? opts.model : undefined);
  const verify = verifyModel ? measureForward(verifyModel, 'verify', opts.numSpeculativeTokens + 1, opts, log) : [];
  const draftCost = opts.draftModel ? measureForward(opts.draftModel, 'draft', 1, opts, log).map((d) => ({ batchSize: d.batchSize, stepMs: d.msByTokens[0]! })) : [];
  const predicted = verify.map((v, i) => ({ batchSize: v.batchSize, speedup: predictSpeedup(prompts, v, draftCost[i]?.stepMs ?? 0, opts.numSpeculativeTokens) }));
  return { settings: opts, prompts, verify, predicted, draftCost };
}

/** tokens a step emits when each of K drafts is accepted with probability a (independently): (1 − a^(K+1)) / (1 − a) */
export function expectedTokensPerStep(a: number, k: number): number {
  return a >= 1 ? k + 1 : (1 - a ** (k + 1)) / (1 - a);
}

/** the acceptance rate where a step of K draft steps and a K+1 verify emits as fast as plain decoding (1 when never) */
export function breakEvenAcceptance(costRatio: number, k: number): number {
  if (expectedTokensPerStep(1, k) < costRatio) return 1;
  let lo = 0;
  let hi = 1;
  for (let i = 0; i < 40; i++) {
    const mid = (lo + hi) / 2;
    if (expectedTokensPerStep(mid, k) < costRatio) lo = mid;
    else hi = mid;
  }
  return hi;
}

/** One greedy sequence to its end; the speculative counts and draft lengths per step. */
function generateOnce(engine: EngineCore, promptIds: readonly number[], outputLen: number, k: number) {
  const id = `g${nextId++}`;
  const refused = engine.add({ type: 'add', id, promptIds: Int32Array.from(promptIds), params: resolveSamplingParams({ temperature: 0, maxTokens: outputLen, ignoreEos: true }), arrivalTime: 0 });
  if (refused) throw new Error(`the engine refused the prompt: ${refused.error}`);
  const tokens: number[] = [];
  const stepsByDraftLength = new Array<number>(k + 1).fill(0);
  let drafts = 0;
  let draftTokens = 0;
  let accepted = 0;
  const t0 = performance.now();
  let started = false;
  while (engine.hasWork) {
    const out = engine.step();
    for (const d of out?.deltas ?? []) tokens.push(...d.tokenIds);
    const s = out?.stats.spec;
    if (s) {
      drafts += s.numDrafts;
      draftTokens += s.numDraftTokens;
      accepted += s.numAcceptedTokens;
    }
    // decode steps only: the prefill step is the same with and without speculation
    if (started) stepsByDraftLength[s?.numDraftTokens ?? 0]!++;
    started = true;
  }
  return { tokens, ms: performance.now() - t0, drafts, draftTokens, accepted, stepsByDraftLength };
}
let nextId = 0;

/** Forward-pass time of `model` for B sequences × n tokens (n = 1 … maxTokens) at opts.context:
 *  the fastest of 3 × repeatRuns passes, interleaved over n (on a shared machine the minimum is
 *  the figure least disturbed by other work; interleaving spreads drift over every n alike). */
function measureForward(model: string, what: string, maxTokens: number, opts: SpecBenchOptions, log: (line: string) => void): VerifyCost[] {
  const maxB = Math.max(...opts.batchSizes);
  const k = maxTokens - 1;
  const engine = createEngineCore({
    model,
    backend: opts.backend,
    maxModelLen: opts.context + k + 1,
    maxNumSeqs: maxB,
    kvCacheMemory: '4GiB',
    enablePrefixCaching: false,
    ...(opts.threads !== undefined && { threads: opts.threads }),
    ...opts.load,
  });
  const bs = engine.config.blockSize;
  const blocksPerSeq = Math.ceil((opts.context + k + 1) / bs);
  if (blocksPerSeq * maxB > engine.config.numBlocks) throw new Error(`the ${what} model's cache holds ${engine.config.numBlocks} blocks, ${blocksPerSeq * maxB} needed`);
  const vocab = engine.model.config.vocabSize;
  const costs: VerifyCost[] = [];
  for (const b of opts.batchSizes) {
    const batches = Array.from({ length: k + 1 }, (_, i) => {
      const n = i + 1;
      // B sequences, each n new tokens after `context` (its K/V slots hold whatever they hold: timing only)
      const chunks: SequenceChunk[] = Array.from({ length: b }, (_, s) => ({
        tokenIds: Array.from({ length: n }, (_, t) => (s * 7919 + t * 104729) % vocab),
        startPos: opts.context,
        blockTable: Array.from({ length: blocksPerSeq }, (_, j) => s * blocksPerSeq + j),
        wantLogits: true,
        allLogits: n > 1,
      }));
      return buildBatch(chunks, bs);
    });
    const msByTokens = new Array<number>(k + 1).fill(Infinity);
    for (let r = -1; r < 3 * opts.repeatRuns; r++) {
      batches.forEach((batch, i) => {
        const t0 = performance.now();
        engine.runner.execute(batch);
        if (r >= 0) msByTokens[i] = Math.min(msByTokens[i]!, performance.now() - t0);
      });
    }
    log(`${what} B=${b}: ${msByTokens.map((m, i) => `${i + 1} tok ${m.toFixed(1)} ms`).join(', ')}`);
    costs.push({ batchSize: b, msByTokens });
  }
  return costs;
}

/**
 * Time without / time with speculation for the drafts part 1 saw: each decode step costs the
 * forward pass of its 1 + draft-length tokens per sequence (all B sequences alike) plus, with
 * a draft model, its K decode steps (draftStepMs each) when it drafted; the output is what
 * part 1 produced. > 1: speculation pays.
 */
function predictSpeedup(prompts: readonly PromptResult[], v: VerifyCost, draftStepMs: number, k: number): number {
  let plainMs = 0;
  let specMs = 0;
  for (const p of prompts) {
    plainMs += (p.outputTokens - 1) * v.msByTokens[0]!;
    p.stepsByDraftLength.forEach((steps, len) => (specMs += steps * (v.msByTokens[len]! + (len > 0 ? k * draftStepMs : 0))));
  }
  return plainMs / specMs;
}

export function formatSpecReport(r: SpecReport): string {
  const s = r.settings;
  const lines = [
    `speculative decoding (${s.draftModel ? `draft model ${s.draftModel}, K ${s.numSpeculativeTokens}` : `ngram, K ${s.numSpeculativeTokens}, lookup ${s.promptLookupMin}..${s.promptLookupMax}`}), ` +
      `one greedy sequence of ${s.outputLen} tokens, ${s.repeatRuns} runs each`,
    'prompt   accepted/drafted  acceptance  tokens/step  plain tok/s  spec tok/s  speedup  same tokens',
  ];
  for (const p of r.prompts) {
    const steps = p.stepsByDraftLength.reduce((a, b) => a + b, 0);
    lines.push(
      [
        p.name.padEnd(7),
        `${p.acceptedTokens}/${p.draftTokens}`.padStart(17),
        `${((p.acceptedTokens / Math.max(p.draftTokens, 1)) * 100).toFixed(0)} %`.padStart(11),
        ((p.outputTokens - 1) / Math.max(steps, 1)).toFixed(2).padStart(12),
        p.plainTokPerS.toFixed(0).padStart(12),
        p.specTokPerS.toFixed(0).padStart(11),
        `${(p.specTokPerS / p.plainTokPerS).toFixed(2)}×`.padStart(8),
        (p.sameTokens ? 'yes' : 'NO').padStart(12),
      ].join(' '),
    );
  }
  if (r.verify.length > 0) {
    lines.push(`verify cost on ${s.verifyModel ?? s.model} at context ${s.context} (forward ms, B sequences × n tokens) and the speedup to expect with the drafts above:`);
    const k = s.numSpeculativeTokens;
    lines.push(['B'.padStart(4), ...Array.from({ length: k + 1 }, (_, i) => `n=${i + 1}`.padStart(9)), '(K+1)/1'.padStart(8), 'expected'.padStart(9)].join(' '));
    r.verify.forEach((v, i) => {
      lines.push(
        [
          String(v.batchSize).padStart(4),
          ...v.msByTokens.map((m) => m.toFixed(1).padStart(9)),
          (v.msByTokens[k]! / v.msByTokens[0]!).toFixed(2).padStart(8),
          `${r.predicted[i]!.speedup.toFixed(2)}×`.padStart(9),
        ].join(' '),
      );
    });
  }
  if (r.draftCost.length > 0) lines.push(...formatDraftCost(r));
  return lines.join('\n');
}

/** the draft-model cost table: a speculative step (K draft steps + the K+1 verify) against a plain decode step */
function formatDraftCost(r: SpecReport): string[] {
  const k = r.settings.numSpeculativeTokens;
  const lines = [
    `draft model cost: K ${k} draft steps + the ${k + 1}-token verify against one plain decode step (ms), the acceptance where it breaks even, the speedup at acceptance rates:`,
    ['B'.padStart(4), 'plain'.padStart(7), 'K drafts'.padStart(9), 'verify'.padStart(7), 'spec/plain'.padStart(11), 'break-even'.padStart(11), ...ACCEPTANCE_RATES.map((a) => `at ${a * 100}%`.padStart(7))].join(' '),
  ];
  r.draftCost.forEach((d, i) => {
    const v = r.verify[i]!;
    const plain = v.msByTokens[0]!;
    const drafts = k * d.stepMs;
    const step = drafts + v.msByTokens[k]!;
    lines.push(
      [
        String(d.batchSize).padStart(4),
        plain.toFixed(1).padStart(7),
        drafts.toFixed(1).padStart(9),
        v.msByTokens[k]!.toFixed(1).padStart(7),
        (step / plain).toFixed(2).padStart(11),
        `${(breakEvenAcceptance(step / plain, k) * 100).toFixed(0)} %`.padStart(11),
        ...ACCEPTANCE_RATES.map((a) => `${((expectedTokensPerStep(a, k) * plain) / step).toFixed(2)}×`.padStart(7)),
      ].join(' '),
    );
  });
  return lines;
}
