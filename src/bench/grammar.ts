// `loom bench grammar`: the MaskBench method (JSONSchemaBench, Geng et al. 2025) on a folder of
// files in its format ({"schema", "tests": [{"valid", "data"}]}). Per schema: validate and
// compile (timed; a refusal is a compile error), then force every instance through the mask
// token by token: a valid one must have every token allowed and the stop token after it
// (else a validation error), an invalid one must meet a forbidden token or no stop (else an
// invalidation error). A schema passes when it compiles and has neither error.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { GrammarCompiler } from '../engine/grammar/compiler.js';
import type { GrammarVocab } from '../engine/grammar/compiler.js';
import { validateGrammarSpec } from '../engine/grammar/spec.js';
import type { GrammarSpec } from '../engine/grammar/spec.js';
import { loadXGrammar } from '../engine/grammar/xgrammar-binding.js';
import { loadTokenizer } from '../model/load.js';
import { BpeTokenizer } from '../tokenizer/bpe.js';
import { preTokenizerSpec } from '../tokenizer/pre-tokenizers.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';
import { loadAverage } from './machine-load.js';
import { modelVocab } from './model-vocab.js';
import { percentile } from './stats.js';
import { fmt, table } from './table.js';

export interface GrammarBenchOptions {
  readonly dir: string;
  /** a GGUF file or Hugging Face folder whose vocabulary to use (default: a generated 32 Ki byte-level BPE one) */
  readonly model?: string;
  /** how instances are written: compact (",", ":") or as json.dumps (", ", ": ") */
  readonly separators: 'compact' | 'spaced';
  /** a schema whose compile and instances take longer than this (ms) counts as a time-out */
  readonly timeoutMs: number;
  /** only files whose name contains this */
  readonly filter?: string;
}

/** what the benchmark needs of a vocabulary (a Tokenizer, or a test's byte vocabulary) */
export type BenchVocab = GrammarVocab & Pick<Tokenizer, 'encode'>;

export type SchemaOutcome = 'pass' | 'compile' | 'validation' | 'invalidation' | 'timeout';

export interface SchemaResult {
  readonly file: string;
  readonly outcome: SchemaOutcome;
  readonly compileMs?: number;
  /** the refusal or the first failing instance */
  readonly detail?: string;
}

export interface GrammarBenchReport {
  readonly settings: GrammarBenchOptions;
  readonly vocabSize: number;
  readonly schemas: number;
  readonly passing: number;
  readonly compileErrors: number;
  readonly validationErrors: number;
  readonly invalidationErrors: number;
  readonly timeouts: number;
  readonly compileMs: { readonly p50: number; readonly p99: number };
  readonly maskUs: { readonly p50: number; readonly p99: number };
  readonly masks: number;
  readonly loadAverage: number;
  readonly results: readonly SchemaResult[];
}

interface CorpusFile {
  schema: unknown;
  tests?: { valid: boolean; data: unknown; description?: string }[];
}

/** The default vocabulary: byte-level BPE, 32 Ki tokens (as the generated bench models have), or `vocabSize`. */
export function benchTokenizer(model?: string, vocabSize = 32768): Tokenizer {
  if (model !== undefined) return loadTokenizer(model);
  const v = modelVocab(vocabSize, false);
  return new BpeTokenizer({
    tokens: v.tokens,
    types: v.tokenTypes,
    merges: v.merges,
    bosId: v.bosId,
    eosId: v.eosId,
    addBos: false,
    addEos: false,
    stopIds: [v.eosId],
    preTokenizer: preTokenizerSpec('gpt-2')!,
  });
}

/** Compact, or spaced as Python's json.dumps writes it (the style of the grammar the instance runs under). */
export function serialize(value: unknown, separators: 'compact' | 'spaced'): string {
  if (separators === 'compact') return JSON.stringify(value);
  const out = (v: unknown): string => {
    if (Array.isArray(v)) return `[${v.map(out).join(', ')}]`;
    if (v !== null && typeof v === 'object') return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}: ${out(x)}`).join(', ')}}`;
    return JSON.stringify(v);
  };
  return out(value);
}

export async function runGrammarBench(o: GrammarBenchOptions, log?: (line: string) => void, vocab?: BenchVocab): Promise<GrammarBenchReport> {
  const xg = await loadXGrammar();
  const tok = vocab ?? benchTokenizer(o.model);
  const compiler = new GrammarCompiler(xg, tok, tok.vocabSize);
  const stop = [...tok.stopIds][0]!;
  const mask = new Int32Array(compiler.maskWords);
  const allowed = (id: number): boolean => (mask[id >> 5]! & (1 << (id & 31))) !== 0;
  const files = readdirSync(o.dir).filter((f) => f.endsWith('.json') && (o.filter === undefined || f.includes(o.filter))).sort();
  const results: SchemaResult[] = [];
  const compileTimes: number[] = [];
  const maskTimes: number[] = [];
  for (const file of files) {
    const data = JSON.parse(readFileSync(join(o.dir, file), 'utf8')) as CorpusFile;
    const t0 = performance.now();
    let spec: GrammarSpec;
    try {
      spec = validateGrammarSpec({ type: 'json_schema', schema: data.schema });
      compiler.compile(spec);
    } catch (err) {
      results.push({ file, outcome: 'compile', detail: (err as Error).message });
      log?.(`${file}: compile error: ${(err as Error).message.slice(0, 200)}`);
      continue;
    }
    const compileMs = performance.now() - t0;
    log?.(`${file}: compiled in ${compileMs.toFixed(1)} ms`);
    compileTimes.push(compileMs);
    let outcome: SchemaOutcome = 'pass';
    let detail: string | undefined;
    for (const [i, test] of (data.tests ?? []).entries()) {
      const text = serialize(test.data, o.separators);
      const ids = tok.encode(text, { addSpecial: false });
      const m = compiler.matcher(spec);
      let accepted = true;
      try {
        for (const id of [...ids, stop]) {
          const t1 = performance.now();
          m.fillMask(mask);
          maskTimes.push((performance.now() - t1) * 1000);
          if (!allowed(id) || !m.accept(id)) {
            accepted = false;
            break;
          }
        }
        accepted &&= m.isTerminated;
      } finally {
        m.close();
      }
      if (accepted !== test.valid) {
        outcome = test.valid ? 'validation' : 'invalidation';
        detail = `test ${i} (${test.valid ? 'valid' : 'invalid'}): ${text.slice(0, 300)}`;
        break;
      }
    }
    if (performance.now() - t0 > o.timeoutMs) outcome = 'timeout';
    compiler.clearCache();
    results.push({ file, outcome, compileMs, ...(detail !== undefined && { detail }) });
    log?.(`${file}: ${outcome}${outcome === 'pass' ? '' : ' error'} (compile ${compileMs.toFixed(1)} ms)${detail !== undefined ? `: ${detail}` : ''}`);
  }
  const count = (k: SchemaOutcome): number => results.filter((r) => r.outcome === k).length;
  return {
    settings: o,
    vocabSize: tok.vocabSize,
    schemas: files.length,
    passing: count('pass'),
    compileErrors: count('compile'),
    validationErrors: count('validation'),
    invalidationErrors: count('invalidation'),
    timeouts: count('timeout'),
    compileMs: { p50: percentile(compileTimes, 50), p99: percentile(compileTimes, 99) },
    maskUs: { p50: percentile(maskTimes, 50), p99: percentile(maskTimes, 99) },
    masks: maskTimes.length,
    loadAverage: loadAverage(),
    results,
  };
}

export function formatGrammarReport(r: GrammarBenchReport): string {
  const pct = (n: number): string => `${n} (${((100 * n) / Math.max(1, r.schemas)).toFixed(1)}%)`;
  return [
    `${r.schemas} schemas from ${r.settings.dir}, vocabulary of ${r.vocabSize} tokens, ${r.settings.separators} instances, load average ${r.loadAverage.toFixed(1)}`,
    table([
      ['passing', 'compile error', 'validation error', 'invalidation error', 'time-out', 'compile p50', 'compile p99', 'mask p50', 'mask p99'],
      [pct(r.passing), pct(r.compileErrors), pct(r.validationErrors), pct(r.invalidationErrors), pct(r.timeouts), `${fmt(r.compileMs.p50)} ms`, `${fmt(r.compileMs.p99)} ms`, `${fmt(r.maskUs.p50)} µs`, `${fmt(r.maskUs.p99)} µs`],
    ]),
  ].join('\n');
}
