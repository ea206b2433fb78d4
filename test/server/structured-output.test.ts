// Structured outputs over HTTP, through the official openai client: response_format
// (json_object, json_schema) on chat and completions, streamed or not; vLLM's
// structured_outputs and guided_* fields; LMDeploy's /generate response_format. Answers
// are judged by ajv / RegExp / the choice list; refusals are 400s naming the field.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Ajv } from 'ajv';
import OpenAI from 'openai';
import { MODEL, fixtureBy, startTestServer } from '../fixtures/server.js';
import type { TestServer } from '../fixtures/server.js';

const SCHEMA = {
  type: 'object',
  properties: { city: { type: 'string', maxLength: 6 }, days: { type: 'integer', minimum: 1, maximum: 7 }, sunny: { type: 'boolean' } },
  required: ['city', 'days', 'sunny'],
  additionalProperties: false,
};
const ajv = new Ajv({ strict: false });

describe('structured outputs through the API', () => {
  let s: TestServer;
  let client: OpenAI;
  before(async () => {
    s = await startTestServer(fixtureBy((f) => f.name === 'qwen2-q8_0'), {}, { kvCacheMemory: '32MiB' });
    client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'none', maxRetries: 0 });
  });
  after(() => s.close());

  const messages = [{ role: 'user' as const, content: 'Weather for the week?' }];
  const validates = (text: string) => assert.ok(ajv.validate(SCHEMA, JSON.parse(text)), `${text}: ${ajv.errorsText()}`);

  it('chat: response_format json_schema, plain and streamed; json_object', async () => {
    const response_format = { type: 'json_schema' as const, json_schema: { name: 'weather', schema: SCHEMA, strict: true } };
    const r = await client.chat.completions.create({ model: MODEL, messages, response_format, temperature: 0.7, seed: 1, max_tokens: 80 });
    assert.equal(r.choices[0]!.finish_reason, 'stop');
    validates(r.choices[0]!.message.content!);
    const stream = await client.chat.completions.create({ model: MODEL, messages, response_format, temperature: 1, seed: 2, max_tokens: 80, stream: true });
    let text = '';
    let finish: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    assert.equal(finish, 'stop');
    validates(text);
    const obj = await client.chat.completions.create({ model: MODEL, messages, response_format: { type: 'json_object' }, temperature: 0, max_tokens: 10 });
    assert.ok(obj.choices[0]!.message.content!.startsWith('{'));
  });

  it('completions: response_format and vLLM structured_outputs / guided_* fields', async () => {
    const create = (extra: Record<string, unknown>) =>
      client.completions.create({ model: MODEL, prompt: 'Answer:', temperature: 1, seed: 3, max_tokens: 60, ...extra } as OpenAI.CompletionCreateParamsNonStreaming);
    validates((await create({ response_format: { type: 'json_schema', json_schema: { name: 'w', schema: SCHEMA } } })).choices[0]!.text);
    validates((await create({ structured_outputs: { json: SCHEMA } })).choices[0]!.text);
    validates((await create({ guided_json: SCHEMA })).choices[0]!.text);
    const choices = ['red', 'green', 'blue'];
    assert.ok(choices.includes((await create({ structured_outputs: { choice: choices } })).choices[0]!.text));
    assert.ok(choices.includes((await create({ guided_choice: choices })).choices[0]!.text));
    assert.match((await create({ guided_regex: '[A-Z]{2}-[0-9]{3}' })).choices[0]!.text, /^[A-Z]{2}-[0-9]{3}$/);
    assert.match((await create({ structured_outputs: { grammar: 'root ::= "x=" [0-9] [0-9]?' } })).choices[0]!.text, /^x=[0-9][0-9]?$/);
  });

  it('refusals are 400s naming the field and the part', async () => {
    const refused = async (extra: Record<string, unknown>): Promise<InstanceType<typeof OpenAI.BadRequestError>> => {
      try {
        await client.chat.completions.create({ model: MODEL, messages, max_tokens: 5, ...extra } as OpenAI.ChatCompletionCreateParamsNonStreaming);
      } catch (err) {
        assert.ok(err instanceof OpenAI.BadRequestError, String(err));
        return err;
      }
      assert.fail('accepted');
    };
    const unique = await refused({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'array', uniqueItems: true } } } });
    assert.equal(unique.param, 'response_format');
    assert.match(unique.message, /"uniqueItems" \(at #\/uniqueItems\) is not supported/);
    const ebnf = await refused({ structured_outputs: { grammar: 'root ::= "a" | ' } });
    assert.equal(ebnf.param, 'structured_outputs');
    assert.match(ebnf.message, /could not be compiled: .*EBNF parser error/);
    const regex = await refused({ guided_regex: '(' });
    assert.equal(regex.param, 'guided_regex');
    const two = await refused({ response_format: { type: 'json_object' }, guided_regex: 'a' });
    assert.match(two.message, /only one kind of structured output/);
    assert.equal((await refused({ structured_outputs: { regex: 'a', choice: ['b'] } })).param, 'structured_outputs');
    assert.equal((await refused({ response_format: { type: 'yaml' } })).param, 'response_format');
  });

  it("LMDeploy's /generate takes the same response_format (and regex_schema)", async () => {
    const res = await s.post('/generate', { prompt: 'Weather:', temperature: 1, max_tokens: 80, response_format: { type: 'json_schema', json_schema: { name: 'w', schema: SCHEMA } } });
    assert.equal(res.status, 200);
    const body = (await res.json()) as { text: string; meta_info: { finish_reason: { type: string } } };
    validates(body.text);
    const re = await s.post('/generate', { prompt: 'Code:', max_tokens: 20, response_format: { type: 'regex_schema', regex_schema: '[a-f]{4}' } });
    assert.match(((await re.json()) as { text: string }).text, /^[a-f]{4}$/);
    const bad = await s.post('/generate', { prompt: 'x', response_format: { type: 'json_schema', json_schema: { name: 'w', schema: { not: {} } } } });
    assert.equal(bad.status, 400);
  });
});
