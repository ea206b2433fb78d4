// tool_choice "required" and a named function over HTTP, through the official openai
// client: a random fixture writes junk, so only the grammar can make its output a call.
// Every call must parse and validate (ajv) against its tool's schema, whole and streamed
// (the client's own assembly of tool_calls deltas); schemas loom cannot enforce are a
// 400 naming the tool.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Ajv } from 'ajv';
import OpenAI from 'openai';
import { MODEL, fixtureBy, startTestServer } from '../../fixtures/server.js';
import type { TestServer } from '../../fixtures/server.js';

const tools: OpenAI.ChatCompletionFunctionTool[] = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Weather in a city',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string', maxLength: 8 }, unit: { enum: ['c', 'f'] }, days: { type: 'integer', minimum: 1, maximum: 7 } },
        required: ['city', 'unit'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'book',
      // a local reference: it must still resolve once the schema sits inside the "required" array schema
      parameters: {
        type: 'object',
        $defs: { when: { type: 'object', properties: { day: { type: 'integer', minimum: 1, maximum: 31 } }, required: ['day'] } },
        properties: { when: { $ref: '#/$defs/when' }, guests: { type: 'integer', minimum: 1, maximum: 9 } },
        required: ['when', 'guests'],
      },
    },
  },
  { type: 'function', function: { name: 'get_time' } },
];
const byName = new Map(tools.map((t) => [t.function.name, t.function.parameters ?? { type: 'object', properties: {}, additionalProperties: false }]));
const ajv = new Ajv({ strict: false });

/** the call's arguments parse and validate against its tool's schema */
function validCall(call: OpenAI.ChatCompletionMessageToolCall | undefined, name?: string): void {
  assert.ok(call && call.type === 'function', JSON.stringify(call));
  if (name) assert.equal(call.function.name, name);
  assert.match(call.id, /^call_/);
  const schema = byName.get(call.function.name);
  assert.ok(schema, call.function.name);
  const args = JSON.parse(call.function.arguments) as unknown;
  assert.ok(ajv.validate(schema, args), `${call.function.arguments}: ${ajv.errorsText()}`);
}

describe('tool_choice required and named, enforced by a grammar (openai client)', () => {
  let s: TestServer;
  let client: OpenAI;
  before(async () => {
    s = await startTestServer(fixtureBy((f) => f.name === 'qwen2-q8_0'), {}, { kvCacheMemory: '32MiB' });
    client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'none', maxRetries: 0 });
  });
  after(() => s.close());

  const messages = [{ role: 'user' as const, content: 'Book a table' }];
  const named = (name: string) => ({ type: 'function' as const, function: { name } });

  it('a named function: one call to it, content null, finish_reason tool_calls', async () => {
    for (const [name, seed] of [['get_weather', 1], ['book', 2], ['get_time', 3]] as const) {
      const r = await client.chat.completions.create({ model: MODEL, messages, tools, tool_choice: named(name), temperature: 1, seed, max_tokens: 150 });
      const c = r.choices[0]!;
      assert.equal(c.finish_reason, 'tool_calls', JSON.stringify(c));
      assert.equal(c.message.content, null);
      assert.equal(c.message.tool_calls?.length, 1);
      validCall(c.message.tool_calls[0], name);
    }
  });

  it('a named function streamed: the arguments arrive in pieces and assemble in the client', async () => {
    for (const seed of [5, 6]) {
      const stream = client.chat.completions.stream({ model: MODEL, messages, tools, tool_choice: named('get_weather'), temperature: 1, seed, max_tokens: 150 });
      let pieces = 0;
      stream.on('chunk', (chunk) => {
        if (chunk.choices[0]?.delta.tool_calls) pieces++;
        assert.ok(!chunk.choices[0]?.delta.content, 'no content beside a forced call');
      });
      const done = await stream.finalChatCompletion();
      const c = done.choices[0]!;
      assert.equal(c.finish_reason, 'tool_calls');
      assert.equal(c.message.tool_calls?.length, 1);
      validCall(c.message.tool_calls[0], 'get_weather');
      assert.ok(pieces > 1, `${pieces} tool_calls deltas`);
    }
  });

  it('"required": at least one call among the tools, each valid; parallel_tool_calls false makes it one', async () => {
    // the random model favours get_weather; with book first among fewer tools its $ref'd schema is exercised too
    for (const [list, seed] of [[tools, 1], [tools, 2], [tools.slice(1), 3]] as const) {
      const r = await client.chat.completions.create({ model: MODEL, messages, tools: list, tool_choice: 'required', temperature: 1, seed, max_tokens: 200, parallel_tool_calls: false });
      const c = r.choices[0]!;
      assert.equal(c.finish_reason, 'tool_calls', JSON.stringify(c));
      assert.equal(c.message.content, null);
      assert.equal(c.message.tool_calls?.length, 1);
      validCall(c.message.tool_calls[0]);
    }
  });

  it('"required" streamed, parallel calls allowed: the arguments stream as generated; every call valid, ids distinct', async () => {
    let checked = 0;
    for (const seed of [7, 8]) {
      const stream = client.chat.completions.stream({ model: MODEL, messages, tools, tool_choice: 'required', temperature: 1, seed, max_tokens: 300 });
      let pieces = 0;
      stream.on('chunk', (chunk) => (pieces += chunk.choices[0]?.delta.tool_calls?.length ?? 0));
      const c = (await stream.finalChatCompletion()).choices[0]!;
      if (c.finish_reason === 'length') continue; // a long array may not fit; the non-streamed case checks the ending
      assert.equal(c.finish_reason, 'tool_calls');
      assert.ok((c.message.tool_calls?.length ?? 0) >= 1);
      for (const call of c.message.tool_calls!) validCall(call);
      assert.equal(new Set(c.message.tool_calls!.map((t) => t.id)).size, c.message.tool_calls!.length);
      assert.ok(pieces > c.message.tool_calls!.length, `the arguments stream in pieces (${pieces} deltas)`);
      checked++;
    }
    assert.ok(checked > 0);
  });

  it('cut off by max_tokens: finish_reason length (a named call keeps its cut arguments)', async () => {
    const r = await client.chat.completions.create({ model: MODEL, messages, tools, tool_choice: named('book'), temperature: 1, seed: 1, max_tokens: 3 });
    assert.equal(r.choices[0]!.finish_reason, 'length');
    const args = (r.choices[0]!.message.tool_calls?.[0] as OpenAI.ChatCompletionMessageFunctionToolCall).function.arguments;
    assert.throws(() => JSON.parse(args));
    // "required" cut before a call has its name: the text stays content
    const req = await client.chat.completions.create({ model: MODEL, messages, tools, tool_choice: 'required', temperature: 1, seed: 1, max_tokens: 3 });
    assert.equal(req.choices[0]!.finish_reason, 'length');
    assert.deepEqual(req.choices[0]!.message.tool_calls, []);
    assert.ok(req.choices[0]!.message.content!.startsWith('['));
    // cut inside the parameters: the call is there with its cut arguments
    const cut = await client.chat.completions.create({ model: MODEL, messages, tools, tool_choice: 'required', temperature: 1, seed: 1, max_tokens: 45 });
    assert.equal(cut.choices[0]!.finish_reason, 'length');
    assert.equal(cut.choices[0]!.message.tool_calls?.length, 1, JSON.stringify(cut.choices[0]));
  });

  it('refusals: a schema loom cannot enforce names the tool; other structured outputs beside a forced call; unknown names', async () => {
    const bad = [...tools, { type: 'function', function: { name: 'odd', parameters: { type: 'object', properties: { n: { type: 'array', uniqueItems: true } } } } }];
    for (const tool_choice of ['required', named('odd')]) {
      const res = await s.post('/v1/chat/completions', { model: MODEL, messages, tools: bad, tool_choice });
      assert.equal(res.status, 400);
      const err = ((await res.json()) as { error: { message: string; param: string } }).error;
      assert.equal(err.param, 'tools');
      assert.match(err.message, /tools\[3\] \(function "odd"\).*uniqueItems/);
    }
    // a pattern xgrammar's own compiler rejects (an unclosed group)
    const broken = [{ type: 'function', function: { name: 'broken', parameters: { type: 'object', properties: { s: { type: 'string', pattern: '(ab' } } } } }];
    const res = await s.post('/v1/chat/completions', { model: MODEL, messages, tools: broken, tool_choice: 'required' });
    assert.equal(res.status, 400);
    assert.match(((await res.json()) as { error: { message: string } }).error.message, /tools\[0\] \(function "broken"\)/);
    // the named function is the one checked: another tool's schema does not matter then
    assert.equal((await s.post('/v1/chat/completions', { model: MODEL, messages, tools: bad, tool_choice: named('get_time'), max_tokens: 5 })).status, 200);
    const both = await s.post('/v1/chat/completions', { model: MODEL, messages, tools, tool_choice: 'required', response_format: { type: 'json_object' } });
    assert.equal(both.status, 400);
    assert.equal(((await both.json()) as { error: { param: string } }).error.param, 'response_format');
    const unknown = await s.post('/v1/chat/completions', { model: MODEL, messages, tools, tool_choice: named('nope') });
    assert.equal(unknown.status, 400);
  });
});

describe('tool_choice auto on a template with no known tool format: the generic one, by grammar', () => {
  let s: TestServer;
  let client: OpenAI;
  // ChatML with no tool markup: no parser is known for it
  const plain =
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
  before(async () => {
    s = await startTestServer(fixtureBy((f) => f.name === 'qwen2-q8_0'), { chatTemplate: plain }, { kvCacheMemory: '32MiB' });
    client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'none', maxRetries: 0 });
  });
  after(() => s.close());
  const messages = [{ role: 'user' as const, content: 'Book a table' }];

  it('every answer parses into tool_calls or content, whole and streamed (no tool_choice: auto)', async () => {
    let calls = 0;
    let replies = 0;
    // a bias on "[" makes the random model call (+100) or reply in words (-100)
    const open = s.model.tokenizer.encode('[', { addSpecial: false });
    for (const [seed, bias] of [[1, -100], [2, -100], [3, 0], [4, 100], [5, 100], [6, 100]] as const) {
      const logit_bias = bias && open.length === 1 ? { [String(open[0])]: bias } : undefined;
      const r = await client.chat.completions.create({ model: MODEL, messages, tools, temperature: 1, seed, max_tokens: 200, ...(logit_bias && { logit_bias }) });
      const c = r.choices[0]!;
      if (c.message.tool_calls!.length > 0) {
        calls++;
        assert.equal(c.message.content, null);
        // a call cut by max_tokens keeps its cut arguments (finish_reason length), as vLLM's
        if (c.finish_reason === 'tool_calls') for (const call of c.message.tool_calls!) validCall(call);
        else assert.equal(c.finish_reason, 'length');
      } else {
        assert.deepEqual(c.message.tool_calls, []);
        assert.equal(typeof c.message.content, 'string');
        // a reply is the text of {"response": …} (of a cut one, what it wrote), never the JSON around it
        replies++;
        assert.ok(!c.message.content!.trimStart().startsWith('{"response"'), c.message.content!);
      }
      // the stream says the same
      const stream = client.chat.completions.stream({ model: MODEL, messages, tools, temperature: 1, seed, max_tokens: 200, ...(logit_bias && { logit_bias }) });
      const done = await stream.finalChatCompletion();
      assert.equal(done.choices[0]!.finish_reason, c.finish_reason);
      // (the SDK's stream accumulator leaves content null when no delta carried text: an empty reply streams as null, is '' whole)
      assert.equal(done.choices[0]!.message.content ?? '', c.message.content ?? '');
      assert.deepEqual(done.choices[0]!.message.tool_calls?.map((t) => (t as OpenAI.ChatCompletionMessageFunctionToolCall).function) ?? [], c.message.tool_calls!.map((t) => (t as OpenAI.ChatCompletionMessageFunctionToolCall).function));
    }
    assert.ok(calls > 0 && replies > 0, `${calls} calls, ${replies} replies`);
  });

  it("the format and the tools are told to the model in the system message, as llama-server's generic handler does", async () => {
    const prompt = async (msgs: object[]): Promise<string> => {
      const r = (await (await s.post('/v1/chat/completions', { model: MODEL, messages: msgs, tools, max_tokens: 1, return_token_ids: true })).json()) as { prompt_token_ids: number[] };
      return s.model.tokenizer.decode(r.prompt_token_ids, { skipSpecial: false });
    };
    const alone = await prompt(messages);
    assert.match(alone, /^<\|im_start\|>system\nRespond in JSON: either a list of tool calls.*The tools: get_weather/s);
    const joined = await prompt([{ role: 'system', content: 'Be brief.' }, ...messages]);
    assert.match(joined, /^<\|im_start\|>system\nBe brief\.\n\nRespond in JSON/);
    assert.equal(joined.match(/<\|im_start\|>system/g)?.length, 1);
  });

  it('a response_format of the client wins over the generic format (the text is then not parsed)', async () => {
    const r = await s.post('/v1/chat/completions', { model: MODEL, messages, tools, response_format: { type: 'json_object' }, max_tokens: 5 });
    assert.equal(r.status, 200, await r.clone().text());
  });
});
