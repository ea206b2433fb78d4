// Structured output and forced tool calls on reasoning models, against vLLM's contract
// (vllm/v1/structured_output/__init__.py: with a reasoning parser, the grammar applies only
// once the parser's is_reasoning_end sees the end token; reasoning_parser.is_reasoning_end
// on the prompt ids, so a template that closed the reasoning starts it at once) and Gemma 4's
// own formats (llama.cpp's common/parsers/gemma4.cpp), over HTTP with the official openai
// client. The fixture is a copy of hf-qwen3, whose output layer writes each token's successor
// id with wide margins: its <|endoftext|> (id 586) is renamed to an added "</think>" (as
// Qwen3's own is) and <|im_end|> made the end of text, so a generation prompt ending in
// token 586 - k reasons for k - 1 tokens of noise, then ends the reasoning; the grammar must
// let all of it through, then hold the rest to the JSON.
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Ajv } from 'ajv';
import OpenAI from 'openai';
import { hfFixturePaths } from '../../fixtures/index.js';
import { HF_FIXTURES } from '../../fixtures/recipe.js';
import { MODEL, fixtureBy, startTestServer } from '../../fixtures/server.js';
import type { TestServer } from '../../fixtures/server.js';

const SCHEMA = {
  type: 'object',
  properties: { city: { type: 'string', maxLength: 6 }, days: { type: 'integer', minimum: 1, maximum: 7 }, sunny: { type: 'boolean' } },
  required: ['city', 'days', 'sunny'],
  additionalProperties: false,
};
const ajv = new Ajv({ strict: false });
const response_format = { type: 'json_schema' as const, json_schema: { name: 'weather', schema: SCHEMA, strict: true } };
const tools: OpenAI.ChatCompletionTool[] = [
  { type: 'function', function: { name: 'get_weather', description: 'Weather in a city', parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 6 } }, required: ['city'] } } },
];
// Qwen3's switch: thinking off writes the closed block into the prompt; `lead` picks the
// prompt's last token (so how long the successor model reasons)
const TEMPLATE =
  '{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}' +
  '{%- if add_generation_prompt %}<|im_start|>assistant\n{% if enable_thinking is defined and not enable_thinking %}<think>\n\n</think>\n\n{% else %}{{ lead }}{% endif %}{% endif %}';
/** vocabulary pieces 580..585 of the fixture: a prompt ending in one reasons through the rest */
const LEADS = [' answer', ' be', ' brown', ' but'];

interface Choice {
  message: { content: string | null; reasoning_content: string | null; tool_calls: OpenAI.ChatCompletionMessageToolCall[] };
  finish_reason: string;
  token_ids: number[];
}

describe('a grammar on a reasoning model starts when the reasoning ends (vLLM reasoning parser qwen3)', () => {
  let dir: string;
  let s: TestServer;
  let client: OpenAI;
  let thinkEnd: number;
  before(async () => {
    const { folder } = hfFixturePaths(HF_FIXTURES.find((f) => f.name === 'hf-qwen3')!);
    dir = mkdtempSync(join(tmpdir(), 'loom-reasoning-grammar-'));
    cpSync(folder, dir, { recursive: true });
    const tj = JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8')) as { added_tokens: { id: number; content: string; special: boolean }[] };
    const t = tj.added_tokens.find((a) => a.content === '<|endoftext|>')!;
    Object.assign(t, { content: '</think>', special: false });
    thinkEnd = t.id;
    writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(tj));
    const edit = (file: string, change: (o: Record<string, unknown>) => void) => {
      const o = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Record<string, unknown>;
      change(o);
      writeFileSync(join(dir, file), JSON.stringify(o));
    };
    const [im_start, im_end] = ['<|im_start|>', '<|im_end|>'].map((c) => tj.added_tokens.find((a) => a.content === c)!.id);
    edit('tokenizer_config.json', (o) => {
      delete o.chat_template;
      Object.assign(o, { eos_token: '<|im_end|>', bos_token: '<|im_start|>' });
    });
    edit('generation_config.json', (o) => Object.assign(o, { eos_token_id: [im_end], bos_token_id: im_start }));
    edit('config.json', (o) => Object.assign(o, { eos_token_id: im_end, bos_token_id: im_start }));
    s = await startTestServer(dir, { chatTemplate: TEMPLATE, reasoningParser: 'qwen3' }, { kvCacheMemory: '32MiB' });
    client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'none', maxRetries: 0 });
  });
  after(async () => {
    await s?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const messages = [{ role: 'user', content: 'Weather for the week?' }];
  const sampling = (lead: string) => ({ model: MODEL, messages, temperature: 0, max_tokens: 120, chat_template_kwargs: { lead }, return_token_ids: true });
  const chat = async (body: object): Promise<Choice> => {
    const res = await s.post('/v1/chat/completions', body);
    assert.equal(res.status, 200, await res.clone().text());
    return ((await res.json()) as { choices: Choice[] }).choices[0]!;
  };
  const decode = (ids: number[]) => s.model.tokenizer.decode(ids);
  /** the reasoning is everything before the first </think> token, the JSON everything after */
  const splitAt = (c: Choice) => {
    const at = c.token_ids.indexOf(thinkEnd);
    assert.ok(at >= 0, `the reasoning ended: ${JSON.stringify(c)}`);
    return { reasoning: decode(c.token_ids.slice(0, at)), content: decode(c.token_ids.slice(at + 1)) };
  };
  const leads = LEADS;

  it('response_format json_schema: reasoning first (free text, ended by the </think> token), then JSON valid against the schema', async () => {
    const prompt = ((await (await s.post('/v1/chat/completions', { ...sampling(' brown'), max_tokens: 1 })).json()) as { prompt_token_ids: number[] }).prompt_token_ids;
    assert.equal(prompt.at(-1), thinkEnd - 2, 'the prompt ends in " brown": the model reasons " but", then </think>');
    let thought = 0;
    for (const lead of leads) {
      const c = await chat({ ...sampling(lead), response_format });
      const split = splitAt(c);
      assert.equal(c.message.reasoning_content ?? '', split.reasoning, `lead ${JSON.stringify(lead)}`);
      assert.equal(c.message.content, split.content);
      assert.ok(ajv.validate(SCHEMA, JSON.parse(c.message.content!)), `${c.message.content}: ${ajv.errorsText()}`);
      assert.equal(c.finish_reason, 'stop');
      if (split.reasoning !== '') thought++;
    }
    // the JSON grammar alone forbids the first token from being anything but "{"
    assert.ok(thought > 0, 'some lead reasoned before the JSON');
    // n > 1: every completion forks from the first sample with its own gate
    const res = await s.post('/v1/chat/completions', { ...sampling(' answer'), response_format, n: 3, temperature: 1, seed: 7 });
    const many = ((await res.json()) as { choices: Choice[] }).choices;
    assert.equal(many.length, 3);
    for (const c of many) {
      assert.equal(c.message.reasoning_content, decode(c.token_ids.slice(0, c.token_ids.indexOf(thinkEnd))));
      assert.notEqual(c.message.reasoning_content, null);
      assert.ok(ajv.validate(SCHEMA, JSON.parse(c.message.content!)), c.message.content!);
    }
  });

  it('streamed: reasoning_content deltas, then content deltas that join to the same JSON', async () => {
    for (const lead of leads.slice(0, 3)) {
      const whole = await chat({ ...sampling(lead), response_format });
      const stream = await client.chat.completions.create({ ...sampling(lead), response_format, stream: true } as OpenAI.ChatCompletionCreateParamsStreaming);
      let [reasoning, content, finish] = ['', '', ''];
      for await (const chunk of stream) {
        const d = chunk.choices[0]?.delta as { content?: string | null; reasoning_content?: string } | undefined;
        reasoning += d?.reasoning_content ?? '';
        content += d?.content ?? '';
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
      assert.deepEqual({ reasoning, content, finish }, { reasoning: whole.message.reasoning_content ?? '', content: whole.message.content, finish: 'stop' }, `lead ${JSON.stringify(lead)}`);
    }
  });

  it('tool_choice required and a named function: the call after the reasoning, whole and streamed', async () => {
    let thought = 0;
    for (const lead of leads.slice(0, 4)) {
      for (const tool_choice of ['required', { type: 'function', function: { name: 'get_weather' } }] as const) {
        const c = await chat({ ...sampling(lead), tools, tool_choice, parallel_tool_calls: false });
        const split = splitAt(c);
        assert.equal(c.message.reasoning_content ?? '', split.reasoning);
        assert.equal(c.finish_reason, 'tool_calls', JSON.stringify(c));
        assert.equal(c.message.tool_calls.length, 1);
        const call = c.message.tool_calls[0]!;
        assert.equal(call.type === 'function' && call.function.name, 'get_weather');
        const args = JSON.parse(call.type === 'function' ? call.function.arguments : '') as { city: string };
        assert.equal(typeof args.city, 'string');
        if (split.reasoning !== '') thought++;
        // the openai client's own stream assembly: reasoning deltas, then the call's id/name and argument fragments
        const stream = client.chat.completions.stream({ ...sampling(lead), tools, tool_choice, parallel_tool_calls: false, stream: true } as never);
        let reasoning = '';
        stream.on('chunk', (chunk: OpenAI.ChatCompletionChunk) => {
          reasoning += (chunk.choices[0]?.delta as { reasoning_content?: string } | undefined)?.reasoning_content ?? '';
        });
        const done = await stream.finalChatCompletion();
        const streamed = done.choices[0]!;
        assert.equal(reasoning, split.reasoning);
        assert.equal(streamed.finish_reason, 'tool_calls');
        const sc = streamed.message.tool_calls![0]!;
        assert.deepEqual(sc.type === 'function' && JSON.parse(sc.function.arguments), args);
      }
    }
    assert.ok(thought > 0, 'some lead reasoned before the call');
  });

  it('thinking off (enable_thinking false, or reasoning_effort "none"): the prompt closes the reasoning, the grammar applies from the first token', async () => {
    for (const off of [{ chat_template_kwargs: { enable_thinking: false } }, { reasoning_effort: 'none' }]) {
      for (const lead of leads.slice(0, 2)) {
        // +100 on </think>: the grammar still makes the first token "{"
        const c = await chat({ ...sampling(lead), logit_bias: { [thinkEnd]: 100 }, response_format, ...off });
        assert.notEqual(c.token_ids[0], thinkEnd, JSON.stringify(off));
        assert.equal(c.message.reasoning_content, null);
        assert.ok(ajv.validate(SCHEMA, JSON.parse(c.message.content!)), c.message.content!);
      }
      const prompt = ((await (await s.post('/v1/chat/completions', { ...sampling(''), ...off, max_tokens: 1 })).json()) as { prompt_token_ids: number[] }).prompt_token_ids;
      assert.ok(s.model.tokenizer.decode(prompt, { skipSpecial: false }).endsWith('<think>\n\n</think>\n\n'));
    }
    // an unknown effort is refused as vLLM's Literal does
    assert.equal((await s.post('/v1/chat/completions', { ...sampling(''), reasoning_effort: 'extreme' })).status, 400);
  });

  it('the generic tool format (auto, no parser for the template) after the reasoning: the reply streams as it grows', async () => {
    const brace = s.model.tokenizer.encode('[', { addSpecial: false })[0]!;
    const body = { ...sampling(' be'), logit_bias: { [brace]: -100 }, tools, max_tokens: 60 };
    const c = await chat(body);
    const split = splitAt(c);
    assert.equal(c.message.reasoning_content ?? '', split.reasoning);
    assert.match(split.content, /^\{\s*"response"\s*:\s*"/);
    assert.notEqual(split.reasoning, '');
    let reply: { response: string } | undefined;
    try {
      reply = JSON.parse(split.content) as { response: string };
    } catch {
      assert.equal(c.finish_reason, 'length'); // cut inside the string
    }
    const stream = await client.chat.completions.create({ ...body, stream: true } as OpenAI.ChatCompletionCreateParamsStreaming);
    const pieces: string[] = [];
    for await (const chunk of stream) if (chunk.choices[0]?.delta.content) pieces.push(chunk.choices[0].delta.content);
    // cut by max_tokens or whole: the content is the reply's text, sent in pieces as it was written
    if (reply) assert.equal(c.message.content, reply.response);
    assert.equal(pieces.join(''), c.message.content ?? '');
    assert.ok(pieces.length > 1, `${pieces.length} content deltas`);
  });
});

describe("Gemma 4's template selects its own parsers; the grammar respects its thought channel", () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer(fixtureBy((f) => f.name === 'gemma4-q8_0'));
  });
  after(async () => s?.close());
  const messages = [{ role: 'user', content: 'Weather?' }];
  const id = (text: string): number => s.model.tokenizer.encode(text, { addSpecial: false })[0]!;

  it('thinking off (the generation prompt holds the empty channel): JSON from the first token, even with <|channel> pushed', async () => {
    const res = await s.post('/v1/chat/completions', { model: MODEL, messages, response_format, temperature: 1, seed: 1, max_tokens: 120, logit_bias: { [id('<|channel>')]: 100 }, return_token_ids: true });
    const c = ((await res.json()) as { choices: Choice[] }).choices[0]!;
    assert.notEqual(c.token_ids[0], id('<|channel>'));
    assert.equal(c.message.reasoning_content, null);
    assert.ok(ajv.validate(SCHEMA, JSON.parse(c.message.content!)), c.message.content!);
  });

  it('thinking on: the first token may open the thought channel, which the grammar then leaves alone', async () => {
    const channel = id('<|channel>');
    const res = await s.post('/v1/chat/completions', { model: MODEL, messages, response_format, chat_template_kwargs: { enable_thinking: true }, temperature: 0, max_tokens: 4, logit_bias: { [channel]: 100 }, return_token_ids: true });
    const c = ((await res.json()) as { choices: Choice[] }).choices[0]!;
    // the JSON grammar alone would have made the first token "{"; reasoning is unconstrained
    assert.deepEqual(c.token_ids, [channel, channel, channel, channel]);
    assert.equal(c.finish_reason, 'length');
  });

  it('tools with no tool_choice use the template’s own call format (no generic JSON grammar)', async () => {
    const res = await s.post('/v1/chat/completions', { model: MODEL, messages, tools, temperature: 0, max_tokens: 2, return_token_ids: true });
    assert.equal(res.status, 200);
    const body = (await res.json()) as { prompt_token_ids: number[] };
    const prompt = s.model.tokenizer.decode(body.prompt_token_ids, { skipSpecial: false });
    assert.ok(prompt.includes('<|tool>declaration:get_weather{'), prompt);
    assert.ok(!prompt.includes('Respond in JSON'), prompt);
  });
});
