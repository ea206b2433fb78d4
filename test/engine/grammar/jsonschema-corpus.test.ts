// Real-world JSON schemas (test/fixtures/jsonschema): each one is either refused with a
// message naming the unsupported part, or every answer a tiny random model gives under it
// validates with ajv (an answer cut by max_tokens, finish reason length, is exempt).
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { referenceKernels } from '../../../src/kernels/reference.js';
import { loadModel } from '../../../src/model/load.js';
import { EngineCore } from '../../../src/engine/engine.js';
import { resolveEngineConfig } from '../../../src/engine/options.js';
import type { FinishReason } from '../../../src/engine/protocol.js';
import { validateGrammarSpec } from '../../../src/engine/grammar/spec.js';
import { loadXGrammar } from '../../../src/engine/grammar/xgrammar-binding.js';
import { PROJECT_ROOT, ggufFixturePath } from '../../fixtures/index.js';
import { GGUF_FIXTURES } from '../../fixtures/recipe.js';
import { resolveSamplingParams } from '../../../src/engine/sampling-params.js';

const DIR = join(PROJECT_ROOT, 'test', 'fixtures', 'jsonschema');
const corpus = readdirSync(DIR)
  .filter((f) => f.endsWith('.json'))
  .map((f) => ({ name: f, schema: (JSON.parse(readFileSync(join(DIR, f), 'utf8')) as { schema: unknown }).schema }));
/** a refusal names the keyword and where it is, or quotes xgrammar */
const NAMES_THE_PART = /\(at #[^)]*\)|could not be compiled: \S|not valid JSON|must be/;

describe('real-world JSON schemas', () => {
  before(async () => {
    await loadXGrammar();
  });

  it(`${corpus.length} schemas: refused with the part named, or every answer validates (ajv)`, () => {
    assert.ok(corpus.length >= 50);
    const m = loadModel(ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === 'qwen2-q8_0')!));
    const config = resolveEngineConfig({ model: '', kvCacheMemory: '256MiB', maxNumSeqs: 128 }, m.config, [...m.tokenizer.stopIds]);
    const e = new EngineCore(m, referenceKernels, config);
    const refused: string[] = [];
    // a random model writes strings without end: bias it to close them (the grammar still rules)
    const closers = Object.fromEntries(['"', '}', ']'].map((c) => [String(m.tokenizer.encode(c, { addSpecial: false })[0]), 30]));
    const running = new Map<string, { schema: unknown; tokens: number[]; finish?: FinishReason }>();
    corpus.forEach(({ name, schema }, i) => {
      try {
        validateGrammarSpec({ type: 'json_schema', schema });
      } catch (err) {
        assert.match((err as Error).message, NAMES_THE_PART, name);
        refused.push(name);
        return;
      }
      const params = { temperature: i % 2 === 0 ? 0 : 1, seed: i, maxTokens: 120, logitBias: closers, grammar: { type: 'json_schema' as const, schema } };
      const error = e.add({ type: 'add', id: name, promptIds: Int32Array.from([10 + i, 20, 30 + (i % 50)]), params: resolveSamplingParams(params), arrivalTime: 0 })?.error;
      if (error !== undefined) {
        assert.match(error, NAMES_THE_PART, name);
        refused.push(name);
      } else running.set(name, { schema, tokens: [] });
    });
    while (e.hasWork) {
      for (const d of e.step()?.deltas ?? []) {
        const r = running.get(d.id)!;
        r.tokens.push(...d.tokenIds);
        r.finish ??= d.finishReason;
      }
    }
    const ajv = new Ajv({ strict: false, allErrors: true, validateSchema: false });
    addFormats.default(ajv);
    let stopped = 0;
    for (const [name, r] of running) {
      assert.ok(r.finish === 'stop' || r.finish === 'length', `${name}: ${r.finish}`);
      if (r.finish !== 'stop') continue;
      stopped++;
      const text = m.tokenizer.decode(r.tokens);
      const value: unknown = JSON.parse(text);
      // draft-04's `id` is `$id` to ajv
      const schema = JSON.parse(JSON.stringify(r.schema, (k, v: unknown) => (k === 'id' && typeof v === 'string' ? undefined : v))) as object;
      assert.ok(ajv.validate(schema, value), `${name}: ${text} breaks the schema: ${ajv.errorsText()}`);
    }
    assert.ok(running.size >= corpus.length / 2, `most schemas compile (${refused.length} refused: ${refused.join(', ')})`);
    // further properties are allowed where a schema leaves additionalProperties out (JSON
    // Schema's default): biased toward quotes, a random model writes empty further keys
    // ("": …) instead of the required ones, and runs into max_tokens on about half
    assert.ok(stopped >= (running.size * 2) / 5, `many answers finish inside max_tokens (${stopped} of ${running.size})`);
  });
});
