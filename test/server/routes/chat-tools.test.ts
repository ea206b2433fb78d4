// Tools, reasoning and --chat-template through the real server and the official `openai`
// client. A random fixture cannot decide to call a tool, so the test gives it a token that
// spells a whole call: a copy of the hf-qwen3 fixture whose unused added tokens are renamed
// (<|im_end|> → a Hermes <tool_call>, <|im_start|> → a piece of reasoning that splits
// "</think>" across two tokens) and forces that token with allowed_token_ids. Everything
// after the engine samples it — detokenizing, parsing, the response and stream shapes, the
// client's own assembly of tool_calls deltas — is the real path.
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { hfFixturePaths } from '../../fixtures/index.js';
import { HF_FIXTURES } from '../../fixtures/recipe.js';
import { MODEL, startTestServer } from '../../fixtures/server.js';
import type { TestServer } from '../../fixtures/server.js';

const CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>';
const THOUGHT = 'nk>c</thi'; // twice: "nk>c</think>c</thi"
// a Qwen-style template: tools in the system turn, tool calls and tool results rendered back
const TEMPLATE = [
  '{%- if tools %}<|endoftext|>system\nTools:{% for t in tools %} {{ t.function.name }}{% endfor %}\n{% endif %}',
  '{%- for m in messages %}<|endoftext|>{{ m.role }}\n{{ m.content }}',
  '{%- if m.tool_calls %}{% for c in m.tool_calls %}<tool_call>{{ c.function.name }}({{ c.function.arguments.city }})</tool_call>{% endfor %}{% endif %}',
  '{%- if m.role == "tool" %}[for {{ m.tool_call_id }}]{% endif %}\n{% endfor %}',
  '{%- if add_generation_prompt %}<|endoftext|>assistant\n{% if enable_thinking is defined and not enable_thinking %}<think></think>{% endif %}{% endif %}',
].join('');

const tools: OpenAI.ChatCompletionTool[] = [
  { type: 'function', function: { name: 'get_weather', description: 'Weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } },
];

describe('chat: tools, reasoning and --chat-template over HTTP (openai client)', () => {
  let dir: string;
  let s: TestServer;
  let client: OpenAI;
  let callId: number;
  let thoughtId: number;
  before(async () => {
    const { folder } = hfFixturePaths(HF_FIXTURES.find((f) => f.name === 'hf-qwen3')!);
    dir = mkdtempSync(join(tmpdir(), 'loom-chatapi-'));
    cpSync(folder, dir, { recursive: true });
    const tj = JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8')) as { added_tokens: { id: number; content: string; special: boolean }[] };
    const rename = (from: string, to: string) => {
      const t = tj.added_tokens.find((a) => a.content === from)!;
      Object.assign(t, { content: to, special: false });
      return t.id;
    };
    callId = rename('<|im_end|>', CALL);
    thoughtId = rename('<|im_start|>', THOUGHT);
    writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(tj));
    const config = JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
    delete config.chat_template; // a model without a template of its own
    writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(config));
    s = await startTestServer(dir, { chatTemplate: TEMPLATE, reasoningParser: 'qwen3' });
    client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'none', maxRetries: 0 });
  });
  after(async () => {
    await s?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const forced = (id: number, n: number) => ({ allowed_token_ids: [id], max_tokens: n, ignore_eos: true, temperature: 0 }) as object;
  // the server runs --reasoning-parser qwen3: with thinking on, text without </think> is all reasoning
  const callTok = (n: number) => ({ ...forced(callId, n), chat_template_kwargs: { enable_thinking: false } }) as object;
  const ask = [{ role: 'user' as const, content: 'Weather in Paris?' }];

  it('tools reach the template; a call comes back as tool_calls with finish_reason tool_calls', async () => {
    const r = await client.chat.completions.create({ model: MODEL, messages: ask, tools, ...callTok(1) });
    const c = r.choices[0]!;
    assert.equal(c.finish_reason, 'tool_calls');
    assert.equal(c.message.content, null);
    assert.equal(c.message.tool_calls?.length, 1);
    const call = c.message.tool_calls![0]!;
    assert.equal(call.type, 'function');
    assert.match(call.id, /^call_/);
    assert.equal(call.type === 'function' && call.function.name, 'get_weather');
    assert.deepEqual(JSON.parse(call.type === 'function' ? call.function.arguments : ''), { city: 'Paris' });
  });

  it('two calls in one output; parallel_tool_calls false keeps one; tool_choice none leaves the text alone', async () => {
    const two = await client.chat.completions.create({ model: MODEL, messages: ask, tools, ...callTok(2) });
    assert.equal(two.choices[0]!.message.tool_calls?.length, 2, JSON.stringify(two));
    assert.notEqual(two.choices[0]!.message.tool_calls![0]!.id, two.choices[0]!.message.tool_calls![1]!.id);
    const one = await client.chat.completions.create({ model: MODEL, messages: ask, tools, parallel_tool_calls: false, ...callTok(2) });
    assert.equal(one.choices[0]!.message.tool_calls?.length, 1);
    const none = await client.chat.completions.create({ model: MODEL, messages: ask, tools, tool_choice: 'none', ...callTok(1) });
    assert.equal(none.choices[0]!.message.content, CALL);
    assert.equal(none.choices[0]!.finish_reason, 'length');
    assert.deepEqual(none.choices[0]!.message.tool_calls, []); // vLLM's default: an empty list
  });

  it('streamed tool calls assemble in the openai client', async () => {
    const stream = client.chat.completions.stream({ model: MODEL, messages: ask, tools, stream: true, ...callTok(2) });
    const done = await stream.finalChatCompletion();
    const c = done.choices[0]!;
    assert.equal(c.finish_reason, 'tool_calls');
    const calls = c.message.tool_calls!.map((t) => (t.type === 'function' ? [t.function.name, JSON.parse(t.function.arguments)] : null));
    assert.deepEqual(calls, [
      ['get_weather', { city: 'Paris' }],
      ['get_weather', { city: 'Paris' }],
    ]);
  });

  it('assistant tool_calls and tool messages render back through the template', async () => {
    const history = [
      ...ask,
      { role: 'assistant' as const, content: null, tool_calls: [{ id: 'call_1', type: 'function' as const, function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool' as const, tool_call_id: 'call_1', content: '18 C' },
    ];
    const r = (await (await s.post('/v1/chat/completions', { model: MODEL, messages: history, tools, max_tokens: 1, return_token_ids: true })).json()) as { prompt_token_ids: number[] };
    const prompt = s.model.tokenizer.decode(r.prompt_token_ids, { skipSpecial: false });
    assert.ok(prompt.includes('system\nTools: get_weather<|endoftext|>user'), prompt);
    assert.ok(prompt.includes('<tool_call>get_weather(Paris)</tool_call>'), prompt);
    assert.ok(prompt.includes('tool\n18 C[for call_1]'), prompt);
    const bad = await s.post('/v1/chat/completions', { model: MODEL, messages: [{ ...history[1], tool_calls: [{ id: 'x', type: 'function', function: { name: 'f', arguments: '{' } }] }] });
    assert.equal(bad.status, 400);
  });

  it('tool_choice naming a function not in tools, or without tools, is a 400 (required / named are in test/server/tools/forced.test.ts)', async () => {
    for (const [tool_choice, t] of [[{ type: 'function', function: { name: 'nope' } }, tools], ['required', []]] as const) {
      const res = await s.post('/v1/chat/completions', { model: MODEL, messages: ask, tools: t, tool_choice });
      assert.equal(res.status, 400, JSON.stringify(tool_choice));
      assert.equal(((await res.json()) as { error: { param: string } }).error.param, 'tool_choice');
    }
  });

  it('reasoning_content, whole and streamed, with </think> split across two tokens; enable_thinking false reaches the template', async () => {
    const r = await client.chat.completions.create({ model: MODEL, messages: ask, ...forced(thoughtId, 2) });
    const m = r.choices[0]!.message as { content: string | null; reasoning_content?: string };
    assert.equal(m.reasoning_content, 'nk>c');
    assert.equal(m.content, 'c</thi');
    let reasoning = '';
    let content = '';
    for await (const chunk of await client.chat.completions.create({ model: MODEL, messages: ask, stream: true, ...forced(thoughtId, 2) })) {
      const d = chunk.choices[0]?.delta as { content?: string | null; reasoning_content?: string } | undefined;
      reasoning += d?.reasoning_content ?? '';
      content += d?.content ?? '';
    }
    assert.deepEqual({ reasoning, content }, { reasoning: 'nk>c', content: 'c</thi' });
    const off = (await (
      await s.post('/v1/chat/completions', { model: MODEL, messages: ask, chat_template_kwargs: { enable_thinking: false }, return_token_ids: true, ...forced(thoughtId, 1) })
    ).json()) as { prompt_token_ids: number[]; choices: { message: { content: string; reasoning_content: string | null } }[] };
    assert.ok(s.model.tokenizer.decode(off.prompt_token_ids, { skipSpecial: false }).endsWith('assistant\n<think></think>'));
    assert.deepEqual(off.choices[0]!.message, {
      role: 'assistant',
      content: THOUGHT,
      refusal: null,
      annotations: null,
      audio: null,
      function_call: null,
      tool_calls: [],
      reasoning: null,
      reasoning_content: null,
    });
  });
});

describe('chat without a template', () => {
  it('is a clear 400 unless the server is given one', async () => {
    const { folder } = hfFixturePaths(HF_FIXTURES.find((f) => f.name === 'hf-qwen3')!);
    const dir = mkdtempSync(join(tmpdir(), 'loom-chatapi-'));
    cpSync(folder, dir, { recursive: true });
    const config = JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
    delete config.chat_template;
    writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(config));
    const s = await startTestServer(dir);
    try {
      const res = await s.post('/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 });
      assert.equal(res.status, 400);
      assert.match(((await res.json()) as { error: { message: string } }).error.message, /no chat template/);
    } finally {
      await s.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
