// OpenAI's Responses API over HTTP with the official `openai` client (responses.create,
// streaming, function tools, previous_response_id, retrieve/delete, input token counts) on
// the hf-qwen3 fixture with a Qwen-style Hermes template. A random fixture does not decide
// to call a tool, so calls are forced with tool_choice "required" or a named function (the
// grammar path); the parsed-call path is the one chat uses (ChatOutput), tested there.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import type { SamplingParams } from '../../../src/engine/sampling-params.js';
import { hfFixturePaths } from '../../fixtures/index.js';
import { HERMES_CHATML_TEMPLATE } from '../../fixtures/hermes-template.js';
import { HF_FIXTURES } from '../../fixtures/recipe.js';
import { MODEL, startTestServer } from '../../fixtures/server.js';
import type { TestServer } from '../../fixtures/server.js';

const tools: OpenAI.Responses.FunctionTool[] = [
  { type: 'function', name: 'get_weather', description: 'Weather in a city', strict: true, parameters: { type: 'object', properties: { city: { type: 'string', enum: ['Paris', 'Rome'] }, unit: { type: 'string', enum: ['C', 'F'] } }, required: ['city', 'unit'], additionalProperties: false } },
];
const greedy = { model: MODEL, temperature: 0 };

/** the prompt ids the engine is handed, request by request */
function recordPrompts(s: TestServer): number[][] {
  const seen: number[][] = [];
  const add = s.engine.add.bind(s.engine);
  s.engine.add = (id: string, ids: readonly number[] | Int32Array, params: SamplingParams) => {
    seen.push([...ids]);
    return add(id, ids, params);
  };
  return seen;
}

describe('/v1/responses (openai client, hf-qwen3 fixture, Hermes template)', () => {
  let s: TestServer;
  let client: OpenAI;
  let prompts: number[][];
  before(async () => {
    const { folder } = hfFixturePaths(HF_FIXTURES.find((f) => f.name === 'hf-qwen3')!);
    s = await startTestServer(folder, { chatTemplate: HERMES_CHATML_TEMPLATE });
    client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'none', maxRetries: 0 });
    prompts = recordPrompts(s);
  });
  after(() => s?.close());

  it('a string input: a message item, usage with cached tokens; max_output_tokens makes it incomplete', async () => {
    const r = await client.responses.create({ ...greedy, input: 'Hello there', max_output_tokens: 5 });
    assert.equal(r.object, 'response');
    assert.equal(r.status, 'incomplete');
    assert.deepEqual(r.incomplete_details, { reason: 'max_output_tokens' });
    assert.equal(r.output.length, 1);
    const m = r.output[0]!;
    assert.equal(m.type, 'message');
    assert.equal(m.type === 'message' && m.role, 'assistant');
    assert.equal(r.output_text, m.type === 'message' && m.content[0]?.type === 'output_text' ? m.content[0].text : null);
    assert.equal(r.usage?.output_tokens, 5);
    assert.equal(r.usage?.total_tokens, r.usage!.input_tokens + 5);
    assert.equal(typeof r.usage?.input_tokens_details.cached_tokens, 'number');
    // the same prompt again: its full blocks come from the prefix cache
    const again = await client.responses.create({ ...greedy, input: 'Hello there', max_output_tokens: 5 });
    assert.equal(again.usage!.input_tokens_details.cached_tokens, Math.floor((again.usage!.input_tokens - 1) / 16) * 16);
    assert.equal(again.output_text, r.output_text);
  });

  it('streams the spec events with an increasing sequence_number; the SDK assembles the same response', async () => {
    const stream = await client.responses.create({ ...greedy, input: 'Hello there', max_output_tokens: 6, stream: true });
    const types: string[] = [];
    let last = -1;
    let text = '';
    let final: OpenAI.Responses.Response | undefined;
    for await (const e of stream) {
      types.push(e.type);
      assert.ok(e.sequence_number > last, `${e.type}: ${e.sequence_number} after ${last}`);
      last = e.sequence_number;
      if (e.type === 'response.output_text.delta') text += e.delta;
      if (e.type === 'response.incomplete' || e.type === 'response.completed') final = e.response;
    }
    assert.deepEqual(types.slice(0, 4), ['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']);
    assert.deepEqual(types.slice(-4), ['response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.incomplete']);
    assert.ok(final);
    assert.equal(final.status, 'incomplete');
    assert.equal(final.output_text, text);
    const whole = await client.responses.create({ ...greedy, input: 'Hello there', max_output_tokens: 6 });
    assert.equal(whole.output_text, text);
  });

  it('tool_choice required: a function_call item, streamed as arguments deltas; then the result via previous_response_id', async () => {
    const stream = client.responses.stream({ ...greedy, input: 'Weather in Paris?', tools, tool_choice: 'required', parallel_tool_calls: false, max_output_tokens: 200 });
    let args = '';
    for await (const e of stream) if (e.type === 'response.function_call_arguments.delta') args += e.delta;
    const r = await stream.finalResponse();
    assert.equal(r.status, 'completed', JSON.stringify(r.output));
    const call = r.output.find((o) => o.type === 'function_call');
    assert.ok(call && call.type === 'function_call');
    assert.equal(call.name, 'get_weather');
    assert.match(call.call_id, /^call_/);
    assert.equal(call.arguments, args);
    assert.deepEqual(Object.keys(JSON.parse(call.arguments) as object).sort(), ['city', 'unit']);
    // the next turn by reference, and the same conversation resent whole: one prompt
    const output = { type: 'function_call_output' as const, call_id: call.call_id, output: '{"temperature": 21}' };
    const byRef = await client.responses.create({ ...greedy, previous_response_id: r.id, input: [output], tools, max_output_tokens: 3 });
    const byRefPrompt = prompts.at(-1)!;
    const whole = await client.responses.create({ ...greedy, input: [{ role: 'user', content: 'Weather in Paris?' }, ...r.output, output] as OpenAI.Responses.ResponseInput, tools, max_output_tokens: 3 });
    assert.deepEqual(prompts.at(-1), byRefPrompt);
    assert.equal(byRef.previous_response_id, r.id);
    assert.equal(whole.usage!.input_tokens, byRef.usage!.input_tokens);
    // the call's prompt is a prefix of the next turn's: its blocks came from the cache
    assert.ok(byRef.usage!.input_tokens_details.cached_tokens >= Math.floor(r.usage!.input_tokens / 16) * 16);
  });

  it('a named function is forced; text.format json_schema constrains the text', async () => {
    const r = await client.responses.create({ ...greedy, input: 'Weather?', tools, tool_choice: { type: 'function', name: 'get_weather' }, max_output_tokens: 200 });
    assert.equal(r.output[0]?.type, 'function_call');
    const schema = { type: 'object', properties: { answer: { type: 'string', maxLength: 8 } }, required: ['answer'], additionalProperties: false };
    const j = await client.responses.create({ ...greedy, input: 'Answer in JSON', text: { format: { type: 'json_schema', name: 'a', schema, strict: true } }, max_output_tokens: 60 });
    assert.equal(j.status, 'completed');
    assert.deepEqual(Object.keys(JSON.parse(j.output_text) as object), ['answer']);
  });

  it('stored responses: retrieve, delete; unknown ids are 404 (retrieve) and 400 (previous_response_id)', async () => {
    const r = await client.responses.create({ ...greedy, input: 'Hi', max_output_tokens: 2 });
    const got = await client.responses.retrieve(r.id);
    assert.equal(got.id, r.id);
    assert.equal(got.output_text, r.output_text);
    await client.responses.delete(r.id);
    await assert.rejects(client.responses.retrieve(r.id), (e: unknown) => e instanceof OpenAI.NotFoundError);
    await assert.rejects(client.responses.create({ ...greedy, input: 'Hi', previous_response_id: r.id }), (e: unknown) => e instanceof OpenAI.BadRequestError && e.param === 'previous_response_id');
    // store: false keeps nothing
    const unstored = await client.responses.create({ ...greedy, input: 'Hi', max_output_tokens: 2, store: false });
    await assert.rejects(client.responses.retrieve(unstored.id), (e: unknown) => e instanceof OpenAI.NotFoundError);
  });

  it('input_tokens counts the prompt create would run', async () => {
    const body = { model: MODEL, instructions: 'Be brief.', input: 'Weather in Paris?', tools };
    const count = await client.responses.inputTokens.count(body);
    assert.equal(count.object, 'response.input_tokens');
    const r = await client.responses.create({ ...body, max_output_tokens: 1 });
    assert.equal(count.input_tokens, r.usage!.input_tokens);
  });

  // Item 3 of issue #37: one front door more, not a second path: chat, responses and
  // Anthropic's messages render the same conversation to the same prompt.
  it('renders the prompt /v1/chat/completions renders for the same conversation (whatever the arguments\' key order)', async () => {
    const chatTools = tools.map((t) => ({ type: 'function' as const, function: { name: t.name, description: t.description!, parameters: t.parameters!, strict: t.strict! } }));
    await client.chat.completions.create({
      ...greedy,
      max_tokens: 1,
      tools: chatTools,
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: '', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"unit": "C", "city": "Paris"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: '21' },
        { role: 'user', content: 'And Rome?' },
      ],
    });
    const viaChat = prompts.at(-1)!;
    const input: OpenAI.Responses.ResponseInput = [
      { role: 'user', content: 'Weather in Paris?' },
      { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris","unit":"C"}' },
      { type: 'function_call_output', call_id: 'call_1', output: '21' },
      { role: 'user', content: [{ type: 'input_text', text: 'And Rome?' }] },
    ];
    await client.responses.create({ ...greedy, max_output_tokens: 1, tools, instructions: 'You are terse.', input });
    assert.deepEqual(prompts.at(-1), viaChat);
    // the instructions as a developer message: the same
    await client.responses.create({ ...greedy, max_output_tokens: 1, tools, input: [{ role: 'developer', content: 'You are terse.' }, ...input] });
    assert.deepEqual(prompts.at(-1), viaChat);
    // Anthropic's messages: tool_use (its input in another key order) and tool_result blocks
    const res = await s.post('/v1/messages', {
      ...greedy,
      max_tokens: 1,
      system: 'You are terse.',
      tools: tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters, strict: t.strict })),
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'call_1', name: 'get_weather', input: { unit: 'C', city: 'Paris' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: '21' }, { type: 'text', text: 'And Rome?' }] },
      ],
    });
    assert.equal(res.status, 200, await res.clone().text());
    assert.deepEqual(prompts.at(-1), viaChat);
  });

  it('a later turn renders the earlier ones as before, late system text where it was sent', async () => {
    const turn1: OpenAI.Responses.ResponseInput = [
      { role: 'user', content: 'Weather in Paris?' },
      { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris","unit":"C"}' },
      { type: 'function_call_output', call_id: 'call_1', output: '21' },
      { role: 'developer', content: 'Answer in one word.' },
    ];
    await client.responses.create({ ...greedy, max_output_tokens: 1, tools, instructions: 'You are terse.', input: turn1 });
    const first = prompts.at(-1)!;
    const turn2: OpenAI.Responses.ResponseInput = [...turn1, { role: 'assistant', content: 'Sunny.' }, { role: 'user', content: 'Thanks' }];
    const r = await client.responses.create({ ...greedy, max_output_tokens: 1, tools, instructions: 'You are terse.', input: turn2 });
    const second = prompts.at(-1)!;
    let same = 0;
    while (same < first.length && first[same] === second[same]) same++;
    // all of turn 1 but the assistant turn's opening, whose last tokens may merge with the reply's text
    assert.ok(same >= first.length - 2, `${same} of ${first.length} tokens kept`);
    assert.ok(r.usage!.input_tokens_details.cached_tokens >= Math.floor((first.length - 2) / 16) * 16);
  });

  it('refusals are 400s naming the field: an unsupported item or content, a bad tool_choice, a context overflow', async () => {
    const cases: [object, string][] = [
      [{ input: [{ type: 'message', role: 'user', content: [{ type: 'input_image', image_url: 'x' }] }] }, 'input[0].content[0].image_url'],
      [{ input: [{ type: 'message', role: 'user', content: [{ type: 'input_file', file_id: 'x' }] }] }, 'input'],
      [{ input: [{ type: 'item_reference', id: 'x' }] }, 'input'],
      [{ input: 'x', tools, tool_choice: { type: 'function', name: 'nope' } }, 'tool_choice'],
      [{ input: 'x', max_output_tokens: 100_000 }, 'max_output_tokens'],
      [{ input: 'x', text: { format: { type: 'grammar' } } }, 'text.format'],
    ];
    for (const [body, param] of cases) {
      const res = await s.post('/v1/responses', { ...greedy, ...body });
      assert.equal(res.status, 400, JSON.stringify(body));
      const e = (await res.json()) as { error: { param: string } };
      assert.equal(e.error.param, param, JSON.stringify(body));
    }
  });
});

describe('/v1/responses with --reasoning-parser qwen3 (reasoning items, reasoning.effort)', () => {
  let s: TestServer;
  let client: OpenAI;
  before(async () => {
    const { folder } = hfFixturePaths(HF_FIXTURES.find((f) => f.name === 'hf-qwen3')!);
    s = await startTestServer(folder, { chatTemplate: HERMES_CHATML_TEMPLATE, reasoningParser: 'qwen3' });
    client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'none', maxRetries: 0 });
  });
  after(() => s?.close());

  it('thinking text (no </think> yet) is a reasoning item, streamed as reasoning_text deltas and counted as reasoning tokens', async () => {
    const stream = await client.responses.create({ ...greedy, input: 'Think', max_output_tokens: 6, stream: true });
    let reasoning = '';
    let final: OpenAI.Responses.Response | undefined;
    for await (const e of stream) {
      if (e.type === 'response.reasoning_text.delta') reasoning += e.delta;
      if (e.type === 'response.incomplete') final = e.response;
    }
    assert.ok(final);
    const item = final.output[0]!;
    assert.equal(item.type, 'reasoning');
    assert.equal(item.type === 'reasoning' && item.content?.[0]?.text, reasoning);
    assert.ok(reasoning.length > 0);
    assert.ok(final.usage!.output_tokens_details.reasoning_tokens > 0);
    // a reasoning item sent back is accepted (and not rendered, as chat takes no reasoning)
    const next = await client.responses.create({ ...greedy, input: [{ role: 'user', content: 'Think' }, item as OpenAI.Responses.ResponseReasoningItem, { role: 'user', content: 'Again' }], max_output_tokens: 1 });
    assert.equal(next.status, 'incomplete');
  });

  it('reasoning.effort "none" turns thinking off (enable_thinking false): the text is a message', async () => {
    const r = await client.responses.create({ ...greedy, input: 'Think', max_output_tokens: 6, reasoning: { effort: 'none' } });
    assert.deepEqual(
      r.output.map((o) => o.type),
      ['message'],
    );
  });
});

describe('/v1/responses when the engine dies mid-stream', () => {
  it('an error event, then response.failed, with the sequence going on', async () => {
    const { folder } = hfFixturePaths(HF_FIXTURES.find((f) => f.name === 'hf-qwen3')!);
    const s = await startTestServer(folder, { chatTemplate: HERMES_CHATML_TEMPLATE });
    try {
      const client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'none', maxRetries: 0 });
      const stream = await client.responses.create({ ...greedy, input: 'Hello', max_output_tokens: 200, stream: true });
      const seen: OpenAI.Responses.ResponseStreamEvent[] = [];
      for await (const e of stream) {
        seen.push(e);
        if (seen.length === 5) void s.engine.close();
      }
      const [error, failed] = seen.slice(-2);
      assert.equal(error?.type, 'error');
      assert.equal(error.type === 'error' && error.code, 'engine_unavailable');
      assert.equal(failed?.type, 'response.failed');
      assert.equal(failed.type === 'response.failed' && failed.response.status, 'failed');
      assert.deepEqual(seen.map((e) => e.sequence_number), seen.map((_, i) => i));
    } finally {
      await s.close();
    }
  });
});
