// Anthropic's Messages API over HTTP with the official @anthropic-ai/sdk (create, stream,
// tools, count_tokens), the Vercel AI SDK's Anthropic provider, raw requests for the
// protocol's edges, and Claude Code's recorded requests replayed. A random fixture writes
// junk, so tool calls come from loom's grammar (tool_choice any / tool) with bounded schemas.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { createAnthropic } from '@ai-sdk/anthropic';
import Anthropic from '@anthropic-ai/sdk';
import { generateText, streamText, tool } from 'ai';
import { z } from 'zod';
import { PNG_1X1 } from '../../fixtures/api-images.js';
import { HERMES_CHATML_TEMPLATE as HERMES_TEMPLATE } from '../../fixtures/hermes-template.js';
import { MODEL, fixtureBy, startTestServer } from '../../fixtures/server.js';
import type { TestServer } from '../../fixtures/server.js';

const weather: Anthropic.Tool = {
  name: 'get_weather',
  description: 'Weather in a city',
  input_schema: { type: 'object', properties: { city: { type: 'string', maxLength: 8 }, unit: { enum: ['c', 'f'] } }, required: ['city', 'unit'] },
};
/** the whole prompt: Anthropic splits it into input, cache-creation and cache-read tokens */
const promptOf = (u: Anthropic.Usage): number => u.input_tokens + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0);
const ask: Anthropic.MessageParam[] = [{ role: 'user', content: 'Weather in Paris?' }];
// anthropic-version 2026-10-21 (this SDK's) dropped temperature; greedy requests go as 2023-06-01 (`old`)
const greedy = { temperature: 0 } as object;
const OLD_VERSION = { 'anthropic-version': '2023-06-01' };

/** the named events of an SSE body, in order */
export async function namedEvents(res: Response): Promise<{ event: string; data: { type: string } & Record<string, unknown> }[]> {
  const text = await res.text();
  return text
    .split('\n\n')
    .filter((b) => b.startsWith('event: '))
    .map((b) => {
      const [head, data] = b.split('\n');
      return { event: head!.slice(7), data: JSON.parse(data!.slice(6)) as { type: string } };
    });
}

describe('Anthropic Messages API (qwen3 fixture, a Hermes ChatML template)', () => {
  let s: TestServer;
  let client: Anthropic;
  let old: Anthropic;
  before(async () => {
    s = await startTestServer(fixtureBy((f) => f.name === 'qwen3-q8_0'), { chatTemplate: HERMES_TEMPLATE });
    client = new Anthropic({ baseURL: s.url, apiKey: 'x', maxRetries: 0 });
    old = new Anthropic({ baseURL: s.url, apiKey: 'x', maxRetries: 0, defaultHeaders: OLD_VERSION });
  });
  after(() => s?.close());

  it('create: a text block, stop_reason max_tokens, usage with input, output and cache-read tokens', async () => {
    const m = await client.messages.create({ model: MODEL, max_tokens: 5, system: 'Be brief.', messages: ask });
    assert.equal(m.type, 'message');
    assert.equal(m.role, 'assistant');
    assert.match(m.id, /^msg_/);
    assert.equal(m.stop_reason, 'max_tokens');
    assert.equal(m.content[0]?.type, 'text');
    assert.equal(m.usage.output_tokens, 5);
    const count = await client.messages.countTokens({ model: MODEL, system: 'Be brief.', messages: ask });
    assert.equal(promptOf(m.usage), count.input_tokens);
    // the same conversation again: its prompt comes from the prefix cache
    const again = await client.messages.create({ model: MODEL, max_tokens: 1, system: 'Be brief.', messages: ask });
    assert.ok((again.usage.cache_read_input_tokens ?? 0) > 0, JSON.stringify(again.usage));
  });

  it('stream: Anthropic events in order; the SDK assembles the same message as create', async () => {
    const res = await s.post('/v1/messages', { model: MODEL, max_tokens: 6, temperature: 0, messages: ask, stream: true });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
    const events = await namedEvents(res);
    const kinds = events.map((e) => e.event);
    assert.deepEqual(kinds.slice(0, 3), ['message_start', 'ping', 'content_block_start']);
    assert.deepEqual(kinds.slice(-3), ['content_block_stop', 'message_delta', 'message_stop']);
    for (const e of events) assert.equal(e.data.type, e.event);
    const delta = events.at(-2)!.data as unknown as { delta: { stop_reason: string }; usage: { output_tokens: number } };
    assert.equal(delta.delta.stop_reason, 'max_tokens');
    assert.equal(delta.usage.output_tokens, 6);
    const whole = await old.messages.create({ model: MODEL, max_tokens: 6, ...greedy, messages: ask });
    const streamed = await old.messages.stream({ model: MODEL, max_tokens: 6, ...greedy, messages: ask }).finalMessage();
    assert.deepEqual(streamed.content, whole.content);
    assert.equal(streamed.stop_reason, 'max_tokens');
  });

  it('stop_sequences: stop_reason stop_sequence with the matched sequence', async () => {
    const whole = await old.messages.create({ model: MODEL, max_tokens: 12, ...greedy, messages: ask });
    const text = whole.content[0]!.type === 'text' ? whole.content[0].text : '';
    const seq = text.slice(3, 5);
    assert.ok(seq.length === 2, text);
    for (const stream of [false, true]) {
      const m = stream
        ? await old.messages.stream({ model: MODEL, max_tokens: 12, ...greedy, messages: ask, stop_sequences: ['zzzz', seq] }).finalMessage()
        : await old.messages.create({ model: MODEL, max_tokens: 12, ...greedy, messages: ask, stop_sequences: ['zzzz', seq] });
      assert.equal(m.stop_reason, 'stop_sequence');
      assert.equal(m.stop_sequence, seq);
      const first = m.content[0];
      assert.equal(first?.type === 'text' && first.text, text.slice(0, text.indexOf(seq)));
    }
  });

  it('tools: tool_choice tool and any force a tool_use whose input matches the schema, whole and streamed as input_json_delta', async () => {
    for (const tool_choice of [{ type: 'tool', name: 'get_weather' }, { type: 'any', disable_parallel_tool_use: true }] as const) {
      const m = await old.messages.create({ model: MODEL, max_tokens: 200, ...greedy, messages: ask, tools: [weather], tool_choice });
      assert.equal(m.stop_reason, 'tool_use', JSON.stringify(m));
      const use = m.content.find((b) => b.type === 'tool_use')!;
      assert.ok(use && use.type === 'tool_use');
      assert.match(use.id, /^toolu_/);
      assert.equal(use.name, 'get_weather');
      const input = use.input as { city: string; unit: string };
      assert.equal(typeof input.city, 'string');
      assert.ok(['c', 'f'].includes(input.unit));
      const res = await s.post('/v1/messages', { model: MODEL, max_tokens: 200, temperature: 0, messages: ask, tools: [weather], tool_choice, stream: true });
      const events = await namedEvents(res);
      const json = events.filter((e) => (e.data as { delta?: { type: string } }).delta?.type === 'input_json_delta').map((e) => (e.data as unknown as { delta: { partial_json: string } }).delta.partial_json);
      assert.deepEqual(JSON.parse(json.join('')), input);
      const streamed = await old.messages.stream({ model: MODEL, max_tokens: 200, ...greedy, messages: ask, tools: [weather], tool_choice }).finalMessage();
      assert.deepEqual(streamed.content.find((b) => b.type === 'tool_use')?.input, input);
    }
  });

  it('renders as /v1/chat/completions does for the same conversation, tool_use/tool_result included, whatever the arguments\' key order', async () => {
    const anthropic = (input: object): Anthropic.MessageCountTokensParams => ({
      model: MODEL,
      system: [{ type: 'text', text: 'x-anthropic-billing-header: cc_version=1.2.3.abc;' }, { type: 'text', text: 'You are terse.' }],
      tools: [weather],
      messages: [
        ...ask,
        { role: 'assistant', content: [{ type: 'text', text: 'Let me look.' }, { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '18 C' }, { type: 'text', text: 'And tomorrow?' }] },
      ],
    });
    const openai = {
      model: MODEL,
      max_tokens: 1,
      return_token_ids: true,
      tools: [{ type: 'function', function: { name: weather.name, description: weather.description, parameters: weather.input_schema } }],
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: 'Let me look.', tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris","unit":"c"}' } }] },
        { role: 'tool', tool_call_id: 'toolu_1', content: '18 C' },
        { role: 'user', content: 'And tomorrow?' },
      ],
    };
    const chat = (await (await s.post('/v1/chat/completions', openai)).json()) as { prompt_token_ids: number[] };
    const a = await client.messages.countTokens(anthropic({ city: 'Paris', unit: 'c' }));
    const b = await client.messages.countTokens(anthropic({ unit: 'c', city: 'Paris' }));
    assert.equal(a.input_tokens, chat.prompt_token_ids.length);
    assert.equal(b.input_tokens, a.input_tokens);
    // the whole request: the same prompt tokens as the chat route's (cached, so the sum)
    const m = await client.messages.create({ ...anthropic({ unit: 'c', city: 'Paris' }), max_tokens: 1 });
    assert.equal(promptOf(m.usage), chat.prompt_token_ids.length);
  });

  it('errors in Anthropic\'s shape: a missing max_tokens, an unknown model, an image block without a vision projector', async () => {
    const cases: [object, number, string, RegExp][] = [
      [{ model: MODEL, messages: ask }, 400, 'invalid_request_error', /max_tokens/],
      [{ model: 'nope', max_tokens: 1, messages: ask }, 404, 'not_found_error', /nope/],
      [{ model: MODEL, max_tokens: 1, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_1X1 } }] }] }, 400, 'invalid_request_error', /vision projector \(--mmproj\)/],
    ];
    for (const [body, status, type, message] of cases) {
      const res = await s.post('/v1/messages', body);
      assert.equal(res.status, status);
      const e = (await res.json()) as { type: string; error: { type: string; message: string } };
      assert.equal(e.type, 'error');
      assert.equal(e.error.type, type);
      assert.match(e.error.message, message);
    }
    await assert.rejects(client.messages.create({ model: 'nope', max_tokens: 1, messages: ask }), (err: unknown) => err instanceof Anthropic.NotFoundError);
  });

  it('a max_tokens beyond the context is cut to it (stop_reason model_context_window_exceeded)', async () => {
    const m = (await (await s.post('/v1/messages', { model: MODEL, max_tokens: 32000, messages: ask })).json()) as Anthropic.Message;
    assert.ok(['model_context_window_exceeded', 'end_turn'].includes(m.stop_reason ?? ''), JSON.stringify(m));
  });

  it('the Vercel AI SDK\'s Anthropic provider: generateText, and streamText with a forced tool call it executes', async () => {
    const anthropic = createAnthropic({ baseURL: `${s.url}/v1`, apiKey: 'x' });
    const r = await generateText({ model: anthropic(MODEL), prompt: 'Hello', maxOutputTokens: 4, maxRetries: 0 });
    assert.equal(r.finishReason, 'length');
    assert.equal(r.usage.outputTokens, 4);
    const executed: unknown[] = [];
    const result = streamText({
      model: anthropic(MODEL),
      prompt: 'Weather in Paris?',
      maxOutputTokens: 200,
      temperature: 0,
      maxRetries: 0,
      toolChoice: { type: 'tool', toolName: 'get_weather' },
      tools: {
        get_weather: tool({
          description: 'Weather in a city',
          inputSchema: z.object({ city: z.string().max(8), unit: z.enum(['c', 'f']) }),
          execute: async (input) => {
            executed.push(input);
            return { temperature: 18 };
          },
        }),
      },
    });
    const calls = await result.toolCalls;
    assert.equal(calls.length, 1);
    assert.equal(calls[0]!.toolName, 'get_weather');
    assert.ok(!calls[0]!.dynamic && !calls[0]!.invalid, JSON.stringify(calls[0]));
    assert.equal(await result.finishReason, 'tool-calls');
    assert.deepEqual(executed, [calls[0]!.input]);
  });

  it('tool_choice none: the tools are in the prompt, the text is never read as a call', async () => {
    const m = await old.messages.create({ model: MODEL, max_tokens: 4, ...greedy, messages: ask, tools: [weather], tool_choice: { type: 'none' } });
    assert.deepEqual(m.content.map((b) => b.type), ['text']);
    const without = await client.messages.countTokens({ model: MODEL, messages: ask });
    assert.ok(promptOf(m.usage) > without.input_tokens);
  });
});

describe('Anthropic Messages API: the API key and the versions', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer(fixtureBy((f) => f.name === 'qwen3-q8_0'), { chatTemplate: HERMES_TEMPLATE, apiKey: 'sekrit' });
  });
  after(() => s?.close());

  it('x-api-key (older SDKs, most tools, 2023-06-01) and Bearer (the current SDK, 2026-10-21) both pass; a wrong key is a 401 in Anthropic\'s shape', async () => {
    const body = { model: MODEL, max_tokens: 1, temperature: 0.5, top_p: 0.9, top_k: 5, metadata: { user_id: 'u' }, messages: ask };
    assert.equal((await s.post('/v1/messages', body, { 'x-api-key': 'sekrit', 'anthropic-version': '2023-06-01' })).status, 200);
    const current = new Anthropic({ baseURL: s.url, apiKey: 'sekrit', maxRetries: 0 });
    assert.equal((await current.messages.create({ model: MODEL, max_tokens: 1, messages: ask })).type, 'message');
    const bad = await s.post('/v1/messages', body, { 'x-api-key': 'wrong' });
    assert.equal(bad.status, 401);
    assert.deepEqual(await bad.json(), { type: 'error', error: { type: 'authentication_error', message: 'invalid or missing API key' } });
  });
});

/** the next request's output scripted: a grammar allowing exactly `text` (then EOS), past the random model's choice */
function script(s: TestServer, text: string): void {
  const add = s.engine.add.bind(s.engine);
  s.engine.add = (id, ids, params) => {
    s.engine.add = add;
    return add(id, ids, { ...params, grammar: { type: 'choice', choices: [text] } });
  };
}

describe('Anthropic Messages API: the model\'s own tool calls (auto) and thinking (a qwen3 reasoning parser)', () => {
  let s: TestServer;
  let client: Anthropic;
  before(async () => {
    s = await startTestServer(fixtureBy((f) => f.name === 'qwen3-q8_0'), { chatTemplate: HERMES_TEMPLATE, reasoningParser: 'qwen3' });
    client = new Anthropic({ baseURL: s.url, apiKey: 'x', maxRetries: 0 });
  });
  after(() => s?.close());
  const CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"unit": "c", "city": "Paris"}}\n</tool_call>';
  const thinking = { type: 'enabled', budget_tokens: 1024 } as const;

  it('tool_choice auto: a call the model writes comes back as a tool_use block, whole and streamed', async () => {
    script(s, CALL);
    const m = await client.messages.create({ model: MODEL, max_tokens: 200, messages: ask, tools: [weather] });
    assert.equal(m.stop_reason, 'tool_use');
    assert.deepEqual(m.content.map((b) => b.type), ['tool_use']);
    assert.deepEqual(m.content[0]!.type === 'tool_use' && m.content[0].input, { unit: 'c', city: 'Paris' });
    script(s, CALL);
    const res = await s.post('/v1/messages', { model: MODEL, max_tokens: 200, messages: ask, tools: [weather], stream: true });
    const events = await namedEvents(res);
    const start = events.find((e) => e.event === 'content_block_start')!.data as unknown as { content_block: { type: string; name: string; id: string } };
    assert.equal(start.content_block.type, 'tool_use');
    assert.equal(start.content_block.name, 'get_weather');
    assert.match(start.content_block.id, /^toolu_/);
    const json = events.filter((e) => (e.data as { delta?: { type: string } }).delta?.type === 'input_json_delta').map((e) => (e.data as unknown as { delta: { partial_json: string } }).delta.partial_json);
    assert.deepEqual(JSON.parse(json.join('')), { unit: 'c', city: 'Paris' });
    assert.equal((events.at(-2)!.data as unknown as { delta: { stop_reason: string } }).delta.stop_reason, 'tool_use');
  });

  it('thinking asked for: the reasoning comes as a thinking block before the text, whole and streamed; not asked for: thinking is off in the template', async () => {
    script(s, 'I should answer.</think>Sunny.');
    const m = await client.messages.create({ model: MODEL, max_tokens: 64, messages: ask, thinking });
    assert.deepEqual(m.content, [
      { type: 'thinking', thinking: 'I should answer.', signature: '' },
      { type: 'text', text: 'Sunny.' },
    ]);
    assert.equal(m.stop_reason, 'end_turn');
    script(s, 'I should answer.</think>Sunny.');
    const streamed = await client.messages.stream({ model: MODEL, max_tokens: 64, messages: ask, thinking }).finalMessage();
    assert.deepEqual(streamed.content, m.content);
    // without `thinking`, enable_thinking false goes to the template and the text is all answer
    script(s, 'Sunny.');
    const plain = await client.messages.create({ model: MODEL, max_tokens: 64, messages: ask });
    assert.deepEqual(plain.content, [{ type: 'text', text: 'Sunny.' }]);
  });
});
