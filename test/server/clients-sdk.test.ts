// The clients applications use, against a real loom server (offline, a tiny random
// fixture): the Vercel AI SDK through @ai-sdk/openai-compatible (generateObject /
// streamObject with a zod schema, tools with streamText) and LangChain JS's ChatOpenAI
// (withStructuredOutput, both its json_schema and function-calling methods; bindTools).
// The random model writes junk, so the objects and calls come from loom's grammars
// (response_format json_schema, tool_choice named / required); each SDK parses and
// validates the answer with the zod schema itself, and the test checks it again.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { tool as langchainTool } from '@langchain/core/tools';
import { ChatOpenAI } from '@langchain/openai';
import { generateObject, generateText, streamObject, streamText, tool } from 'ai';
import OpenAI from 'openai';
import { z } from 'zod';
import { MODEL, fixtureBy, startTestServer } from '../fixtures/server.js';
import type { TestServer } from '../fixtures/server.js';

// bounded strings and numbers: a random model fills a string until its grammar stops it
const Weather = z.object({
  city: z.string().max(8),
  days: z.number().int().min(1).max(7),
  sunny: z.boolean(),
  unit: z.enum(['c', 'f']),
});
const WeatherArgs = z.object({ city: z.string().max(8), unit: z.enum(['c', 'f']) });

describe('the Vercel AI SDK and LangChain JS against loom', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer(fixtureBy((f) => f.name === 'qwen2-q8_0'), {}, { kvCacheMemory: '32MiB' });
  });
  after(() => s?.close());

  const aiModel = () => createOpenAICompatible({ name: 'loom', baseURL: `${s.url}/v1`, supportsStructuredOutputs: true }).chatModel(MODEL);
  const chat = (seed: number) => new ChatOpenAI({ model: MODEL, apiKey: 'none', configuration: { baseURL: `${s.url}/v1` }, maxRetries: 0, temperature: 1, maxTokens: 200, modelKwargs: { seed } });

  it('AI SDK: generateObject and streamObject with a zod schema', async () => {
    const { object, finishReason } = await generateObject({ model: aiModel(), schema: Weather, prompt: 'Weather?', seed: 1, maxOutputTokens: 200, maxRetries: 0 });
    assert.equal(finishReason, 'stop');
    assert.deepEqual(Weather.parse(object), object);
    const stream = streamObject({ model: aiModel(), schema: Weather, prompt: 'Weather?', seed: 2, maxOutputTokens: 200, maxRetries: 0 });
    let partials = 0;
    for await (const _ of stream.partialObjectStream) partials++;
    const streamed = await stream.object;
    assert.deepEqual(Weather.parse(streamed), streamed);
    assert.ok(partials > 1, `${partials} partial objects`);
  });

  it('AI SDK: streamText with tools, the call forced (toolChoice a named tool, and required)', async () => {
    for (const [toolChoice, seed] of [[{ type: 'tool', toolName: 'weather' }, 3], ['required', 4]] as const) {
      const executed: unknown[] = [];
      const result = streamText({
        model: aiModel(),
        prompt: 'Weather in Paris?',
        seed,
        maxOutputTokens: 200,
        maxRetries: 0,
        toolChoice,
        // extra body fields go through providerOptions.<provider name>: one call, or a random model fills the array
        providerOptions: { loom: { parallel_tool_calls: false } },
        tools: {
          weather: tool({
            description: 'Weather in a city',
            inputSchema: WeatherArgs,
            execute: async (input) => {
              executed.push(input);
              return { temperature: 18 };
            },
          }),
        },
      });
      const calls = await result.toolCalls;
      assert.equal(calls.length, 1, JSON.stringify(toolChoice));
      for (const call of calls) {
        assert.equal(call.toolName, 'weather');
        assert.ok(!call.dynamic && !call.invalid, JSON.stringify(call));
        assert.deepEqual(WeatherArgs.parse(call.input), call.input);
      }
      assert.equal(await result.finishReason, 'tool-calls');
      assert.deepEqual(executed, calls.map((c) => c.input));
    }
  });

  it('LangChain: withStructuredOutput (json_schema and function calling)', async () => {
    for (const [method, seed] of [['jsonSchema', 5], ['functionCalling', 6]] as const) {
      const out = await chat(seed).withStructuredOutput(Weather, { method, name: 'weather' }).invoke('Weather?');
      assert.deepEqual(Weather.parse(out), out, method);
    }
  });

  it('LangChain: bindTools with tool_choice a tool name, and "any" (required), parallel_tool_calls false', async () => {
    const weather = langchainTool(async () => '18 C', { name: 'weather', description: 'Weather in a city', schema: WeatherArgs });
    for (const [tool_choice, seed] of [['weather', 7], ['any', 8]] as const) {
      const msg = await chat(seed).bindTools([weather], { tool_choice, parallel_tool_calls: false }).invoke('Weather in Paris?');
      assert.equal(msg.tool_calls?.length, 1, JSON.stringify(msg));
      const call = msg.tool_calls![0]!;
      assert.equal(call.name, 'weather');
      assert.match(call.id ?? '', /^call_/);
      assert.deepEqual(WeatherArgs.parse(call.args), call.args);
      assert.equal(msg.invalid_tool_calls?.length ?? 0, 0);
    }
  });
});

describe("the clients' defaults (no tool_choice) on a template with no known tool format", () => {
  let s: TestServer;
  // ChatML with no tool markup: loom knows no parser for it, so "auto" uses the generic format
  const plain =
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
  before(async () => {
    s = await startTestServer(fixtureBy((f) => f.name === 'qwen2-q8_0'), { chatTemplate: plain }, { kvCacheMemory: '32MiB' });
  });
  after(() => s?.close());
  /** a bias on "[" makes the random model call (+100) or reply in words (-100) */
  const callBias = (bias = 100): Record<string, number> => ({ [String(s.model.tokenizer.encode('[', { addSpecial: false })[0])]: bias });
  const aiModel = () => createOpenAICompatible({ name: 'loom', baseURL: `${s.url}/v1` }).chatModel(MODEL);

  it('AI SDK: generateText with tools and no toolChoice gets a valid call, or text', async () => {
    const tools = { weather: tool({ description: 'Weather in a city', inputSchema: WeatherArgs }) };
    const called = await generateText({ model: aiModel(), prompt: 'Weather in Paris?', seed: 1, maxOutputTokens: 200, maxRetries: 0, tools, providerOptions: { loom: { parallel_tool_calls: false, logit_bias: callBias() } } });
    assert.equal(called.toolCalls.length, 1, JSON.stringify(called.response.body));
    assert.equal(called.toolCalls[0]!.toolName, 'weather');
    assert.deepEqual(WeatherArgs.parse(called.toolCalls[0]!.input), called.toolCalls[0]!.input);
    assert.equal(called.finishReason, 'tool-calls');
    const replied = await generateText({ model: aiModel(), prompt: 'Weather in Paris?', seed: 1, maxOutputTokens: 200, maxRetries: 0, tools, providerOptions: { loom: { logit_bias: callBias(-100) } } });
    assert.equal(replied.toolCalls.length, 0);
    assert.equal(typeof replied.text, 'string');
    assert.ok(!replied.text.startsWith('{"response"'), replied.text);
  });

  it('LangChain: bindTools with no tool_choice gets a valid call, or content', async () => {
    const weather = langchainTool(async () => '18 C', { name: 'weather', description: 'Weather in a city', schema: WeatherArgs });
    const chat = (kwargs: object) => new ChatOpenAI({ model: MODEL, apiKey: 'none', configuration: { baseURL: `${s.url}/v1` }, maxRetries: 0, temperature: 1, maxTokens: 200, modelKwargs: { seed: 2, ...kwargs } });
    const msg = await chat({ logit_bias: callBias() }).bindTools([weather], { parallel_tool_calls: false }).invoke('Weather in Paris?');
    assert.equal(msg.tool_calls?.length, 1, JSON.stringify(msg));
    assert.equal(msg.tool_calls![0]!.name, 'weather');
    assert.deepEqual(WeatherArgs.parse(msg.tool_calls![0]!.args), msg.tool_calls![0]!.args);
    const reply = await chat({ logit_bias: callBias(-100) }).bindTools([weather]).invoke('Weather in Paris?');
    assert.equal(reply.tool_calls?.length ?? 0, 0);
    assert.equal(typeof reply.content, 'string');
  });
  it('openai client: a generic reply streams its text as it is written; a generic call streams id and name, then argument fragments', async () => {
    const client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'none', maxRetries: 0 });
    const tools: OpenAI.ChatCompletionTool[] = [{ type: 'function', function: { name: 'weather', description: 'Weather in a city', parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 8 } }, required: ['city'] } } }];
    const base = { model: MODEL, messages: [{ role: 'user' as const, content: 'Weather in Paris?' }], tools, max_tokens: 40, logit_bias: callBias(-100) };
    // a random model often closes its reply at once ({"response": ""}): the first seed that writes some
    let body: typeof base & { seed: number } = { ...base, seed: 0 };
    let whole: OpenAI.ChatCompletion | undefined;
    for (let seed = 1; seed <= 12 && !whole; seed++) {
      const r = await client.chat.completions.create({ ...base, seed } as OpenAI.ChatCompletionCreateParamsNonStreaming);
      if ((r.choices[0]!.message.content ?? '').length >= 4) [whole, body] = [r, { ...base, seed }];
    }
    assert.ok(whole, 'some seed replies in words');
    const pieces: string[] = [];
    for await (const chunk of await client.chat.completions.create({ ...body, stream: true } as OpenAI.ChatCompletionCreateParamsStreaming)) {
      if (chunk.choices[0]?.delta.content) pieces.push(chunk.choices[0].delta.content);
    }
    assert.ok(pieces.length > 1, `${pieces.length} content deltas`);
    assert.equal(pieces.join(''), whole.choices[0]!.message.content ?? '');
    assert.ok(!pieces.join('').startsWith('{'), pieces.join(''));
    const deltas: OpenAI.ChatCompletionChunk.Choice.Delta.ToolCall[] = [];
    const stream = client.chat.completions.stream({ ...body, logit_bias: callBias(), parallel_tool_calls: false, max_tokens: 60, stream: true } as never);
    stream.on('chunk', (chunk: OpenAI.ChatCompletionChunk) => deltas.push(...(chunk.choices[0]?.delta.tool_calls ?? [])));
    const done = await stream.finalChatCompletion();
    assert.equal(done.choices[0]!.finish_reason, 'tool_calls');
    const call = done.choices[0]!.message.tool_calls![0]!;
    // vLLM's order: the first delta carries the id and name, the arguments follow in pieces
    assert.deepEqual(deltas[0], { index: 0, id: call.id, type: 'function', function: { name: 'weather', arguments: '' } });
    assert.ok(deltas.length > 2, `${deltas.length} tool_calls deltas`);
    assert.ok(deltas.slice(1).every((d) => d.id === undefined && d.function?.name === undefined));
    assert.equal(deltas.map((d) => d.function?.arguments ?? '').join(''), call.type === 'function' ? call.function.arguments : '');
  });

  it('AI SDK: streamText with tools and no toolChoice streams the reply as text deltas, or the call as input deltas', async () => {
    const tools = { weather: tool({ description: 'Weather in a city', inputSchema: WeatherArgs }) };
    const parts = async (bias: number, seed: number) => {
      const result = streamText({ model: aiModel(), prompt: 'Weather in Paris?', seed, maxOutputTokens: 200, maxRetries: 0, tools, providerOptions: { loom: { parallel_tool_calls: false, logit_bias: callBias(bias) } } });
      const types: string[] = [];
      for await (const part of result.fullStream) types.push(part.type);
      return { types, text: await result.text, calls: await result.toolCalls };
    };
    let reply = await parts(-100, 1);
    for (let seed = 2; seed <= 12 && reply.text.length < 4; seed++) reply = await parts(-100, seed);
    assert.ok(reply.types.filter((t) => t === 'text-delta').length > 1, reply.types.join(' '));
    assert.equal(reply.calls.length, 0);
    assert.ok(!reply.text.startsWith('{'), reply.text);
    const called = await parts(100, 4);
    assert.ok(called.types.filter((t) => t === 'tool-input-delta').length > 1, called.types.join(' '));
    assert.equal(called.calls.length, 1, JSON.stringify(called));
    assert.ok(WeatherArgs.safeParse(called.calls[0]!.input).success, JSON.stringify(called.calls));
  });

  it('LangChain: bindTools with no tool_choice, streamed: the chunks join to a valid call', async () => {
    const weather = langchainTool(async () => '18 C', { name: 'weather', description: 'Weather in a city', schema: WeatherArgs });
    const chat = new ChatOpenAI({ model: MODEL, apiKey: 'none', configuration: { baseURL: `${s.url}/v1` }, maxRetries: 0, temperature: 1, maxTokens: 200, modelKwargs: { seed: 5, logit_bias: callBias() } });
    let joined: Awaited<ReturnType<typeof chat.invoke>> | undefined;
    let chunks = 0;
    for await (const chunk of await chat.bindTools([weather], { parallel_tool_calls: false }).stream('Weather in Paris?')) {
      joined = joined ? joined.concat(chunk) : chunk;
      chunks++;
    }
    assert.ok(chunks > 2, `${chunks} chunks`);
    assert.equal(joined!.tool_calls?.length, 1, JSON.stringify(joined));
    assert.deepEqual(WeatherArgs.parse(joined!.tool_calls![0]!.args), joined!.tool_calls![0]!.args);
  });
});
