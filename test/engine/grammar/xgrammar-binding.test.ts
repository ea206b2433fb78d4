// Constrained decoding in the engine, on a random-weight fixture: whatever the model
// prefers, every finished output is accepted by the grammar — checked with independent
// judges (ajv for JSON Schema, JavaScript's RegExp, the choice list) — under batching,
// n > 1, chunked prefill, preemption and prefix caching; refusals name the bad part.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { referenceKernels } from '../../../src/kernels/reference.js';
import type { LoadedModel } from '../../../src/model/load.js';
import { EngineCore } from '../../../src/engine/engine.js';
import type { EngineOptions } from '../../../src/engine/options.js';
import type { RequestDelta } from '../../../src/engine/protocol.js';
import type { SamplingParamsInput } from '../../../src/engine/sampling-params.js';
import { loadXGrammar } from '../../../src/engine/grammar/xgrammar-binding.js';
import { WorkerEngineClient } from '../../../src/engine/worker-client.js';
import { ggufFixturePath } from '../../fixtures/index.js';
import { fixtureEngine, fixtureModel } from '../../fixtures/engine-run.js';
import { GGUF_FIXTURES } from '../../fixtures/recipe.js';
import { resolveSamplingParams, DEFAULT_SAMPLING_PARAMS } from '../../../src/engine/sampling-params.js';

const FIXTURE = 'qwen2-q8_0';
const model = (): LoadedModel => fixtureModel(FIXTURE);

function engine(opts: Partial<EngineOptions> = {}): EngineCore {
  return fixtureEngine(FIXTURE, referenceKernels, { kvCacheMemory: '64MiB', ...opts });
}

interface Outcome {
  tokens: number[];
  finishReason?: string;
  error?: string;
  logprobs: number[];
  topIds: number[];
}

function runToEnd(e: EngineCore): Map<string, Outcome> {
  const out = new Map<string, Outcome>();
  const record = (d: RequestDelta) => {
    const key = `${d.id}#${d.index}`;
    const o = out.get(key) ?? { tokens: [], logprobs: [], topIds: [] };
    o.tokens.push(...d.tokenIds);
    if (d.logprobs) o.logprobs.push(...d.logprobs);
    if (d.topIds) o.topIds.push(...d.topIds);
    o.finishReason ??= d.finishReason;
    o.error ??= d.error;
    out.set(key, o);
  };
  for (let step = 0; e.hasWork; step++) {
    e.step()?.deltas.forEach(record);
    assert.ok(step < 20_000, 'the engine keeps making progress');
  }
  return out;
}

let nextId = 0;
function add(e: EngineCore, promptIds: readonly number[], params: SamplingParamsInput, id = `g${nextId++}`): string {
  const refused = e.add({ type: 'add', id, promptIds: Int32Array.from(promptIds), params: resolveSamplingParams(params), arrivalTime: 0 });
  assert.equal(refused, undefined, refused?.error);
  return id;
}

const prompt = (i: number) => Array.from({ length: 4 + ((i * 7) % 23) }, (_, k) => 5 + ((i * 131 + k * 17) % 300));
const text = (tokens: readonly number[]) => model().tokenizer.decode(tokens);

const ajv = new Ajv({ strict: false, allErrors: true });
addFormats.default(ajv);

/**
 * bounded schemas: a random model finishes them well inside max_tokens (further properties
 * off: JSON Schema allows them by default, and a random model then writes keys until the end)
 */
const SCHEMAS: Record<string, object> = {
  person: {
    type: 'object',
    properties: {
      name: { type: 'string', maxLength: 8 },
      age: { type: 'integer', minimum: 0, maximum: 120 },
      role: { enum: ['admin', 'user', 'guest'] },
      active: { type: 'boolean' },
    },
    required: ['name', 'age', 'role'],
    additionalProperties: false,
  },
  list: { type: 'array', items: { type: 'integer', minimum: -5, maximum: 99 }, minItems: 1, maxItems: 4 },
  nested: {
    type: 'object',
    properties: { point: { $ref: '#/$defs/point' }, tags: { type: 'array', items: { enum: ['a', 'b'] }, maxItems: 3 }, note: { anyOf: [{ type: 'null' }, { type: 'string', maxLength: 5 }] } },
    required: ['point', 'note'],
    additionalProperties: false,
    $defs: { point: { type: 'object', properties: { x: { type: 'integer', minimum: 0, maximum: 9 }, y: { type: 'integer', minimum: 0, maximum: 9 } }, required: ['x', 'y'], additionalProperties: false } },
  },
};

function assertValidJson(schema: object, o: Outcome, what: string): void {
  assert.equal(o.error, undefined, `${what}: ${o.error}`);
  assert.equal(o.finishReason, 'stop', `${what} finishes by the grammar (got ${o.finishReason}: ${text(o.tokens)})`);
  const value: unknown = JSON.parse(text(o.tokens));
  assert.ok(ajv.validate(schema, value), `${what}: ${text(o.tokens)} breaks the schema: ${ajv.errorsText()}`);
}

describe('constrained decoding in the engine', () => {
  before(async () => {
    await loadXGrammar();
  });

  it('JSON schemas: greedy and sampled outputs parse and validate (ajv), batched with unconstrained traffic', () => {
    const e = engine({ maxNumBatchedTokens: 16 }); // chunked prefill
    const ids: [string, object][] = [];
    let i = 0;
    for (const schema of Object.values(SCHEMAS)) {
      for (const params of [{ temperature: 0 }, { temperature: 1, seed: 11 + i }, { temperature: 0.8, topK: 20, topP: 0.9, seed: 40 + i }]) {
        ids.push([add(e, prompt(i++), { ...params, maxTokens: 120, grammar: { type: 'json_schema', schema } }), schema]);
      }
      add(e, prompt(i++), { temperature: 0, maxTokens: 9, ignoreEos: true }); // no grammar beside them
    }
    const out = runToEnd(e);
    for (const [id, schema] of ids) assertValidJson(schema, out.get(`${id}#0`)!, id);
    assert.equal(e.blocks.usage(), 0);
  });

  it('json_object, regex, choice and EBNF grammars hold; max_tokens cuts with finish reason length', () => {
    const e = engine();
    const obj = add(e, prompt(1), { temperature: 1, seed: 3, maxTokens: 200, grammar: { type: 'json_object' } });
    const re = add(e, prompt(2), { temperature: 1, seed: 4, maxTokens: 60, grammar: { type: 'regex', pattern: '(yes|no)-[0-9]{2,4}' } });
    const choices = ['alpha', 'beta gamma', 'δέλτα'];
    const ch = [0, 1, 2].map((s) => add(e, prompt(3 + s), { temperature: 1, seed: s, maxTokens: 30, grammar: { type: 'choice', choices } }));
    const ebnf = add(e, prompt(6), { temperature: 1, seed: 5, maxTokens: 60, grammar: { type: 'grammar', grammar: 'root ::= "(" item ("," item)? ")"\nitem ::= [a-c] [0-9]' } });
    const cut = add(e, prompt(7), { temperature: 0, maxTokens: 3, grammar: { type: 'json_schema', schema: SCHEMAS['person']! } });
    const out = runToEnd(e);
    const o = out.get(`${obj}#0`)!;
    if (o.finishReason === 'stop') assert.equal(typeof JSON.parse(text(o.tokens)), 'object');
    else assert.equal(o.finishReason, 'length');
    assert.equal(out.get(`${re}#0`)!.finishReason, 'stop');
    assert.match(text(out.get(`${re}#0`)!.tokens), /^(yes|no)-[0-9]{2,4}$/);
    for (const id of ch) {
      assert.equal(out.get(`${id}#0`)!.finishReason, 'stop');
      assert.ok(choices.includes(text(out.get(`${id}#0`)!.tokens)), text(out.get(`${id}#0`)!.tokens));
    }
    assert.match(text(out.get(`${ebnf}#0`)!.tokens), /^\([a-c][0-9](,[a-c][0-9])?\)$/);
    const c = out.get(`${cut}#0`)!;
    assert.equal(c.finishReason, 'length');
    assert.equal(c.tokens.length, 3);
    assert.ok(text(c.tokens).startsWith('{'), text(c.tokens));
  });

  it('n > 1: every completion has its own grammar state: completion k is what seed + k gives alone', () => {
    const params = (seed: number, n: number): SamplingParamsInput => ({ temperature: 1.5, seed, n, maxTokens: 120, grammar: { type: 'json_schema', schema: SCHEMAS['nested']! } });
    const e = engine();
    const id = add(e, prompt(9), params(21, 4));
    const out = runToEnd(e);
    for (let k = 0; k < 4; k++) {
      assertValidJson(SCHEMAS['nested']!, out.get(`${id}#${k}`)!, `completion ${k}`);
      const single = engine();
      const one = add(single, prompt(9), params(21 + k, 1));
      assert.deepEqual(out.get(`${id}#${k}`)!.tokens, runToEnd(single).get(`${one}#0`)!.tokens, `completion ${k}`);
    }
  });

  it('a preempted request resumes its grammar: the same tokens as alone, with prefix caching', () => {
    const params = (k: number): SamplingParamsInput => ({ temperature: 1, seed: 100 + k, maxTokens: 100, grammar: { type: 'json_schema', schema: SCHEMAS['person']! } });
    const alone = [0, 1, 2, 3, 4, 5].map((k) => {
      const e = engine();
      const id = add(e, prompt(20 + k), params(k));
      return runToEnd(e).get(`${id}#0`)!;
    });
    // a cache of one context (128 tokens): the batch must preempt to fit; a shared prefix hits the cache
    const e = engine({ kvCacheMemory: 32 * 4 * 1024, blockSize: 4, maxModelLen: 128, enablePrefixCaching: true });
    const ids = [0, 1, 2, 3, 4, 5].map((k) => add(e, prompt(20 + k), params(k)));
    for (let k = 0; k < 4; k++) add(e, prompt(20 + k), { temperature: 0, maxTokens: 60, ignoreEos: true });
    const out = runToEnd(e);
    assert.ok(e.scheduler.numPreemptions > 0, 'the cache was small enough to preempt');
    ids.forEach((id, k) => {
      assert.deepEqual(out.get(`${id}#0`)!.tokens, alone[k]!.tokens, `request ${k}`);
      assertValidJson(SCHEMAS['person']!, out.get(`${id}#0`)!, `request ${k}`);
    });
  });

  it('processed logprobs see the mask, raw logprobs do not', () => {
    const run = (mode: 'raw_logprobs' | 'processed_logprobs') => {
      const e = engine({ logprobsMode: mode });
      const id = add(e, prompt(30), { temperature: 0, maxTokens: 20, logprobs: 5, grammar: { type: 'choice', choices: ['alpha', 'beta'] } });
      return runToEnd(e).get(`${id}#0`)!;
    };
    const raw = run('raw_logprobs');
    const processed = run('processed_logprobs');
    assert.deepEqual(processed.tokens, raw.tokens);
    // the first token: only a start of "alpha" or "beta" may carry probability once masked
    const allowedFirst = new Set(processed.topIds.slice(0, 5).filter((id) => ['alpha', 'beta'].some((c) => c.startsWith(text([id])) && text([id]).length > 0)));
    assert.ok(allowedFirst.size >= 1);
    const sumP = (o: Outcome) => Math.exp(o.logprobs[0]!);
    assert.ok(sumP(processed) >= sumP(raw), 'masking can only raise the chosen token\'s probability');
  });

  it('in the worker thread: the first grammar request loads xgrammar there, messages keep their order', async () => {
    const client = await WorkerEngineClient.start({ model: ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === FIXTURE)!), backend: 'reference', kvCacheMemory: '16MiB' });
    try {
      const streams = [
        client.add('w0', prompt(50), resolveSamplingParams({ temperature: 0, maxTokens: 80, grammar: { type: 'json_schema', schema: SCHEMAS['person']! } })),
        client.add('w1', prompt(51), resolveSamplingParams({ temperature: 0, maxTokens: 4, ignoreEos: true })),
        client.add('w2', prompt(52), resolveSamplingParams({ temperature: 0, maxTokens: 20, grammar: { type: 'choice', choices: ['on', 'off'] } })),
      ];
      const outs = await Promise.all(
        streams.map(async (st) => {
          const o: Outcome = { tokens: [], logprobs: [], topIds: [] };
          for await (const d of st) {
            o.tokens.push(...d.tokenIds);
            o.finishReason ??= d.finishReason;
            o.error ??= d.error;
          }
          return o;
        }),
      );
      assertValidJson(SCHEMAS['person']!, outs[0]!, 'w0');
      assert.equal(outs[1]!.tokens.length, 4);
      assert.ok(['on', 'off'].includes(text(outs[2]!.tokens)));
    } finally {
      await client.close();
    }
  });

  it('refuses what it cannot enforce: an error naming the keyword, or xgrammar\'s message', () => {
    const e = engine();
    const refuse = (grammar: SamplingParamsInput['grammar']) => e.add({ type: 'add', id: `bad${nextId++}`, promptIds: Int32Array.from([5, 6, 7]), params: { ...DEFAULT_SAMPLING_PARAMS, grammar: grammar ?? null }, arrivalTime: 0 })?.error ?? '';
    assert.match(refuse({ type: 'json_schema', schema: { type: 'array', uniqueItems: true } }), /"uniqueItems" \(at #\/uniqueItems\) is not supported/);
    assert.match(refuse({ type: 'json_schema', schema: { properties: { a: { not: { type: 'string' } } } } }), /"not" \(at #\/properties\/a\/not\)/);
    assert.match(refuse({ type: 'json_schema', schema: '{"type": ' }), /not valid JSON/);
    assert.match(refuse({ type: 'grammar', grammar: 'root ::= "a" | ' }), /could not be compiled: .*EBNF parser error/);
    assert.match(refuse({ type: 'regex', pattern: '[a-' }), /could not be compiled/);
    // the engine still serves grammars after refusing
    const id = add(e, prompt(40), { temperature: 0, maxTokens: 20, grammar: { type: 'choice', choices: ['ok'] } });
    assert.equal(text(runToEnd(e).get(`${id}#0`)!.tokens), 'ok');
  });
});
