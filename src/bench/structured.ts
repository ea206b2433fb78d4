// `loom bench structured`: what a JSON schema costs. The same 16 concurrent streams (random
// prompts, greedy) run without a grammar and with a JSON schema, alternating, on an
// in-process engine; TPOT per request from the engine's token times. Also the schema's
// compile time, first and cached, and the one-off tokenizer preparation.
import { performance } from 'node:perf_hooks';
import { createEngineCore } from '../engine/create.js';
import type { EngineCore } from '../engine/engine.js';
import type { Backend } from '../engine/options.js';
import type { GrammarSpec } from '../engine/grammar/spec.js';
import { validateGrammarSpec } from '../engine/grammar/spec.js';
import { loadXGrammar } from '../engine/grammar/xgrammar-binding.js';
import type { SamplingParamsInput } from '../engine/sampling-params.js';
import { loadModel } from '../model/load.js';
import type { LoadOptions } from '../model/load.js';
import { randomRequests, vocabularyIds } from './datasets.js';
import { summarize } from './stats.js';
import type { Summary } from './stats.js';
import { resolveSamplingParams } from '../engine/sampling-params.js';

export interface StructuredBenchOptions {
  readonly model: string;
  /** --no-mmap, --mlock */
  readonly load?: LoadOptions;
  readonly streams: number;
  readonly inputLen: number;
  readonly outputLen: number;
  readonly repeatRuns: number;
  readonly backend: Backend;
  readonly threads?: number;
  readonly seed: number;
  /** the schema to run under (default: a records object too long to finish inside outputLen) */
  readonly schema?: unknown;
}

export interface StructuredRun {
  readonly grammar: boolean;
  /** mean over the streams of (last − first token time) / (tokens − 1), ms */
  readonly tpotMs: number;
  readonly outputTokens: number;
  readonly durationMs: number;
  readonly steps: number;
  /** ms of the run's steps spent computing masks and advancing matchers (in the engine thread) */
  readonly grammarMs: number;
}

export interface StructuredReport {
  readonly settings: StructuredBenchOptions;
  /** xgrammar start (wasm instantiation), ms */
  readonly loadMs: number;
  /** the vocabulary handed to xgrammar (once per engine), ms */
  readonly tokenizerInfoMs: number;
  readonly compileFirstMs: number;
  readonly compileCachedMs: number;
  readonly runs: StructuredRun[];
  readonly tpotPlainMs: Summary;
  readonly tpotSchemaMs: Summary;
  /** median schema TPOT / median plain TPOT − 1 (noisy on a shared machine) */
  readonly tpotOverhead: number;
  /** grammar work per decode step (masks + accepts, 16 sequences), ms, and as a share of the plain TPOT */
  readonly grammarMsPerStep: number;
  readonly grammarShareOfTpot: number;
  /** one sequence's mask, µs */
  readonly maskUs: number;
}

/** records of a few typed fields: strings, numbers, enums, nesting; at least 64 of them */
export const DEFAULT_BENCH_SCHEMA = {
  type: 'object',
  properties: {
    title: { type: 'string' },
    records: {
      type: 'array',
      minItems: 64,
      items: {
        type: 'object',
        properties: {
          id: { type: 'integer', minimum: 0 },
          name: { type: 'string' },
          score: { type: 'number' },
          kind: { enum: ['alpha', 'beta', 'gamma'] },
          tags: { type: 'array', items: { type: 'string' } },
        },
        required: ['id', 'name', 'score', 'kind'],
      },
    },
  },
  required: ['title', 'records'],
};

export async function runStructuredBench(opts: StructuredBenchOptions, log: (line: string) => void = () => {}): Promise<StructuredReport> {
  const model = loadModel(opts.model, opts.load);
  const engine = createEngineCore(
    { model: opts.model, backend: opts.backend, maxNumSeqs: opts.streams, kvCacheMemory: '1GiB', ...(opts.threads !== undefined && { threads: opts.threads }), ...opts.load },
    model,
  );
  let t = performance.now();
  await loadXGrammar();
  const loadMs = performance.now() - t;
  t = performance.now();
  const compiler = engine.grammarCompiler();
  const tokenizerInfoMs = performance.now() - t;
  const grammar: GrammarSpec = validateGrammarSpec({ type: 'json_schema', schema: opts.schema ?? DEFAULT_BENCH_SCHEMA });
  t = performance.now();
  compiler.compile(grammar);
  const compileFirstMs = performance.now() - t;
  t = performance.now();
  compiler.compile(grammar);
  const compileCachedMs = performance.now() - t;
  log(`xgrammar start ${loadMs.toFixed(1)} ms, vocabulary ${tokenizerInfoMs.toFixed(1)} ms, schema compile ${compileFirstMs.toFixed(1)} ms first, ${compileCachedMs.toFixed(3)} ms cached`);

  const vocab = vocabularyIds(model.tokenizer, model.config.vocabSize);
  const runs: StructuredRun[] = [];
  // one warm-up of each, then alternate so drift on a shared machine hits both alike
  for (let r = -1; r < opts.repeatRuns; r++) {
    for (const withGrammar of [false, true]) {
      const before = { ...compiler.stats };
      const run = runOnce(engine, vocab, opts, withGrammar ? grammar : null, opts.seed + Math.max(r, 0));
      Object.assign(run, { grammarMs: compiler.stats.maskMs + compiler.stats.acceptMs - before.maskMs - before.acceptMs });
      if (r >= 0) runs.push(run);
      log(`${r < 0 ? 'warm-up' : `run ${r + 1}`} ${withGrammar ? 'schema' : 'plain '}: TPOT ${run.tpotMs.toFixed(2)} ms, ${run.outputTokens} tokens in ${run.durationMs.toFixed(0)} ms, grammar ${run.grammarMs.toFixed(0)} ms`);
    }
  }
  const tpotPlainMs = summarize(runs.filter((r) => !r.grammar).map((r) => r.tpotMs));
  const tpotSchemaMs = summarize(runs.filter((r) => r.grammar).map((r) => r.tpotMs));
  const schemaRuns = runs.filter((r) => r.grammar);
  const grammarMsPerStep = schemaRuns.reduce((a, r) => a + r.grammarMs, 0) / schemaRuns.reduce((a, r) => a + r.steps, 0);
  return {
    settings: opts,
    loadMs,
    tokenizerInfoMs,
    compileFirstMs,
    compileCachedMs,
    runs,
    tpotPlainMs,
    tpotSchemaMs,
    tpotOverhead: tpotSchemaMs.p50 / tpotPlainMs.p50 - 1,
    grammarMsPerStep,
    grammarShareOfTpot: grammarMsPerStep / tpotPlainMs.p50,
    maskUs: (compiler.stats.maskMs / Math.max(compiler.stats.masks, 1)) * 1000,
  };
}

function runOnce(engine: EngineCore, vocab: Int32Array, opts: StructuredBenchOptions, grammar: GrammarSpec | null, seed: number): StructuredRun {
  const requests = randomRequests(vocab, { numRequests: opts.streams, inputLen: opts.inputLen, outputLen: opts.outputLen, rangeRatio: 1, seed });
  const params: SamplingParamsInput = { temperature: 0, maxTokens: opts.outputLen, ignoreEos: true, grammar };
  const times = new Map<string, number[]>();
  const start = performance.now();
  requests.forEach((req, i) => {
    const id = `${grammar ? 's' : 'p'}${seed}-${i}`;
    const refused = engine.add({ type: 'add', id, promptIds: req.promptIds, params: resolveSamplingParams(params), arrivalTime: 0 });
    if (refused) throw new Error(`the engine refused a request: ${refused.error}`);
    times.set(id, []);
  });
  let steps = 0;
  while (engine.hasWork) {
    steps++;
    for (const d of engine.step()?.deltas ?? []) times.get(d.id)!.push(...d.times);
  }
  const durationMs = performance.now() - start;
  const tpots: number[] = [];
  let outputTokens = 0;
  for (const ts of times.values()) {
    outputTokens += ts.length;
    if (ts.length > 1) tpots.push((ts[ts.length - 1]! - ts[0]!) / (ts.length - 1));
  }
  return { grammar: grammar !== null, tpotMs: tpots.reduce((a, b) => a + b, 0) / Math.max(tpots.length, 1), outputTokens, durationMs, steps, grammarMs: 0 };
}

export function formatStructuredReport(r: StructuredReport): string {
  const s = r.settings;
  const ms = (x: number) => x.toFixed(2);
  return [
    `structured outputs: ${s.streams} concurrent streams, ${s.inputLen} prompt + ${s.outputLen} output tokens, greedy, ${s.repeatRuns} runs each`,
    `xgrammar start          ${ms(r.loadMs)} ms (once per process)`,
    `vocabulary to xgrammar  ${ms(r.tokenizerInfoMs)} ms (once per engine)`,
    `schema compile          ${ms(r.compileFirstMs)} ms first, ${r.compileCachedMs.toFixed(3)} ms cached`,
    `TPOT without grammar    p50 ${ms(r.tpotPlainMs.p50)} ms (mean ${ms(r.tpotPlainMs.mean)})`,
    `TPOT with JSON schema   p50 ${ms(r.tpotSchemaMs.p50)} ms (mean ${ms(r.tpotSchemaMs.mean)})`,
    `TPOT overhead           ${(r.tpotOverhead * 100).toFixed(1)} % (end to end; noisy on a shared machine)`,
    `grammar work per step   ${ms(r.grammarMsPerStep)} ms = ${(r.grammarShareOfTpot * 100).toFixed(1)} % of the plain TPOT (one mask ${r.maskUs.toFixed(0)} µs)`,
  ].join('\n');
}
