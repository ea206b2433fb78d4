// Anthropic's Messages API, the parts agents lean on past the basics: usage's three-way split
// of the prompt (cache read, cache creation, the rest) from the engine's prefix cache,
// tool_result blocks with is_error reaching the model marked, cache_control accepted wherever
// Anthropic's API puts it, and both anthropic-versions (2023-06-01 with x-api-key and sampling
// fields; 2026-10-21 with a Bearer key and none: sending one is a 400), whole and streamed, through the official SDK.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { HERMES_CHATML_TEMPLATE as HERMES_TEMPLATE } from '../../fixtures/hermes-template.js';
import { MODEL, fixtureBy, startTestServer } from '../../fixtures/server.js';
import type { TestServer } from '../../fixtures/server.js';

/** the named events of an SSE body, in order */
async function namedEvents(res: Response): Promise<{ event: string; data: { type: string } & Record<string, unknown> }[]> {
  return (await res.text())
    .split('\n\n')
    .filter((b) => b.startsWith('event: '))
    .map((b) => {
      const [head, data] = b.split('\n');
      return { event: head!.slice(7), data: JSON.parse(data!.slice(6)) as { type: string } };
    });
}

type Usage = Pick<Anthropic.Usage, 'input_tokens' | 'cache_creation_input_tokens' | 'cache_read_input_tokens'>;
const total = (u: Usage): number => u.input_tokens + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0);

const bash: Anthropic.Tool = { name: 'Bash', description: 'Run a command', input_schema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] } };

describe('Anthropic Messages API: cache usage, is_error, cache_control, versions (qwen3 fixture)', () => {
  let s: TestServer;
  let client: Anthropic;
  before(async () => {
    s = await startTestServer(fixtureBy((f) => f.name === 'qwen3-q8_0'), { chatTemplate: HERMES_TEMPLATE, apiKey: 'sekrit' });
    client = new Anthropic({ baseURL: s.url, apiKey: 'sekrit', maxRetries: 0 });
  });
  after(() => s?.close());

  it('usage: creation is the full blocks a fresh prompt wrote, read what a repeat gets from them; the three sum to count_tokens, whole and streamed', async () => {
    const bs = s.engine.info.blockSize;
    assert.equal(s.engine.info.prefixCaching, true);
    const params = { model: MODEL, max_tokens: 2, system: 'You are a careful agent that runs commands.', messages: [{ role: 'user' as const, content: 'List the files in this folder, please, and say which is largest.' }] };
    const count = (await client.messages.countTokens({ model: MODEL, system: params.system, messages: params.messages })).input_tokens;
    assert.ok(count > 2 * bs, `${count} tokens, blocks of ${bs}`);
    assert.ok(await s.engine.resetPrefixCache());
    const first = await client.messages.create(params);
    assert.deepEqual(
      { read: first.usage.cache_read_input_tokens, creation: first.usage.cache_creation_input_tokens, input: first.usage.input_tokens },
      { read: 0, creation: Math.floor(count / bs) * bs, input: count % bs },
    );
    // the same prompt again, streamed: read from the cache (all full blocks but the one holding the last token)
    const streamed = await client.messages.stream(params).finalMessage();
    const read = Math.floor((count - 1) / bs) * bs;
    assert.equal(streamed.usage.cache_read_input_tokens, read);
    assert.equal(streamed.usage.cache_creation_input_tokens, Math.floor(count / bs) * bs - read);
    assert.equal(total(streamed.usage), count);
    // message_start carries the same split
    const res = await s.post('/v1/messages', { ...params, stream: true }, { 'x-api-key': 'sekrit' });
    const start = (await namedEvents(res)).find((e) => e.event === 'message_start')!.data as unknown as { message: { usage: Usage } };
    assert.equal(total(start.message.usage), count);
    assert.equal(start.message.usage.cache_read_input_tokens, read);
  });

  it('usage: a prompt of whole blocks sent again counts its last block (recomputed, already cached) as input, not as created twice', async () => {
    const bs = s.engine.info.blockSize;
    const countOf = async (text: string): Promise<number> => (await client.messages.countTokens({ model: MODEL, messages: [{ role: 'user', content: text }] })).input_tokens;
    let text = 'Show me the largest file';
    while ((await countOf(text)) % bs !== 0) text += ' x';
    const count = await countOf(text);
    const params = { model: MODEL, max_tokens: 1, messages: [{ role: 'user' as const, content: text }] };
    assert.ok(await s.engine.resetPrefixCache());
    const first = await client.messages.create(params);
    assert.deepEqual({ read: first.usage.cache_read_input_tokens, creation: first.usage.cache_creation_input_tokens, input: first.usage.input_tokens }, { read: 0, creation: count, input: 0 });
    // again: every block but the last is read; the last is computed again (a hit leaves a token to compute) but was cached before
    for (const again of [await client.messages.create(params), await client.messages.stream(params).finalMessage()]) {
      assert.deepEqual({ read: again.usage.cache_read_input_tokens, creation: again.usage.cache_creation_input_tokens, input: again.usage.input_tokens }, { read: count - bs, creation: 0, input: bs });
    }
  });

  it('is_error: the result reaches the template marked "Error: " (as /v1/chat/completions renders that text), unmarked without the flag, and not twice', async () => {
    const conversation = (content: string, is_error?: boolean): Anthropic.MessageCountTokensParams => ({
      model: MODEL,
      tools: [bash],
      messages: [
        { role: 'user', content: 'Run it.' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { command: 'false' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content, ...(is_error !== undefined && { is_error }) }] },
      ],
    });
    const chat = async (content: string): Promise<number> => {
      const body = {
        model: MODEL,
        max_tokens: 1,
        return_token_ids: true,
        tools: [{ type: 'function', function: { name: 'Bash', description: bash.description, parameters: bash.input_schema } }],
        messages: [
          { role: 'user', content: 'Run it.' },
          { role: 'assistant', content: '', tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'Bash', arguments: '{"command":"false"}' } }] },
          { role: 'tool', tool_call_id: 'toolu_1', content },
        ],
      };
      const r = (await (await s.post('/v1/chat/completions', body, { authorization: 'Bearer sekrit' })).json()) as { prompt_token_ids: number[] };
      return r.prompt_token_ids.length;
    };
    const marked = await chat('Error: Exit code 1');
    const plain = await chat('Exit code 1');
    assert.notEqual(marked, plain);
    assert.equal((await client.messages.countTokens(conversation('Exit code 1', true))).input_tokens, marked);
    assert.equal((await client.messages.countTokens(conversation('Exit code 1', false))).input_tokens, plain);
    assert.equal((await client.messages.countTokens(conversation('Exit code 1'))).input_tokens, plain);
    assert.equal((await client.messages.countTokens(conversation('Error: Exit code 1', true))).input_tokens, marked);
    // the whole request and the stream take it as well
    const req = { ...conversation('Exit code 1', true), max_tokens: 2 } as Anthropic.MessageCreateParamsNonStreaming;
    const m = await client.messages.create(req);
    assert.equal(total(m.usage), marked);
    const streamed = await client.messages.stream(req).finalMessage();
    assert.equal(total(streamed.usage), marked);
  });

  it('cache_control is accepted on system, text, tool_use, tool_result and nested blocks, on tools and on the request, and changes no token', async () => {
    const cc = { type: 'ephemeral' } as const;
    const cc1h = { type: 'ephemeral', ttl: '1h' } as const;
    const body = (mark: boolean): Record<string, unknown> => ({
      model: MODEL,
      max_tokens: 2,
      ...(mark && { cache_control: cc }),
      system: [{ type: 'text', text: 'Be brief.', ...(mark && { cache_control: cc1h }) }],
      tools: [{ ...bash, ...(mark && { cache_control: cc }) }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Run it.', ...(mark && { cache_control: cc }) }] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { command: 'ls' }, ...(mark && { cache_control: cc }) }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'a.txt', ...(mark && { cache_control: cc }) }], ...(mark && { cache_control: cc }) }] },
      ],
    });
    const counts: number[] = [];
    for (const mark of [false, true]) {
      const { model, system, tools, messages } = body(mark);
      counts.push(((await (await s.post('/v1/messages/count_tokens', { model, system, tools, messages, ...(mark && { cache_control: cc }) }, { 'x-api-key': 'sekrit' })).json()) as { input_tokens: number }).input_tokens);
      for (const stream of [false, true]) {
        const res = await s.post('/v1/messages', { ...body(mark), stream }, { 'x-api-key': 'sekrit' });
        assert.equal(res.status, 200, await res.clone().text());
        if (!stream) assert.equal(total(((await res.json()) as Anthropic.Message).usage), counts.at(-1));
        else await res.text();
      }
    }
    assert.equal(counts[0], counts[1]);
    // the SDK sends them too
    const m = await client.messages.create(body(true) as unknown as Anthropic.MessageCreateParamsNonStreaming);
    assert.equal(m.type, 'message');
  });

  it('2023-06-01 (or no header) with x-api-key and temperature/top_p/top_k; 2026-10-21 with a Bearer key and none (defaults), each of them a 400 there: whole and streamed', async () => {
    const ask = [{ role: 'user', content: 'Hello' }];
    const old = { 'x-api-key': 'sekrit', 'anthropic-version': '2023-06-01' };
    const current = { authorization: 'Bearer sekrit', 'anthropic-version': '2026-10-21' };
    for (const [headers, sampling] of [[old, { temperature: 0, top_p: 0.9, top_k: 5 }], [current, {}]] as const) {
      const whole = await s.post('/v1/messages', { model: MODEL, max_tokens: 3, messages: ask, ...sampling }, headers);
      assert.equal(whole.status, 200);
      const m = (await whole.json()) as Anthropic.Message;
      assert.equal(m.usage.output_tokens, 3);
      const res = await s.post('/v1/messages', { model: MODEL, max_tokens: 3, messages: ask, stream: true, ...sampling }, headers);
      assert.equal(res.status, 200);
      const events = await namedEvents(res);
      assert.deepEqual([events[0]!.event, events.at(-1)!.event], ['message_start', 'message_stop']);
    }
    // a greedy 2023-06-01 request is deterministic: its sampling fields are read; so is one without the header
    const key = { 'x-api-key': 'sekrit' };
    const greedy = async (headers: Record<string, string>): Promise<unknown> => ((await (await s.post('/v1/messages', { model: MODEL, max_tokens: 6, messages: ask, temperature: 0 }, headers)).json()) as Anthropic.Message).content;
    assert.deepEqual(await greedy(old), await greedy(old));
    assert.deepEqual(await greedy(key), await greedy(old));
    assert.equal((await s.post('/v1/messages', { model: MODEL, max_tokens: 1, messages: ask, temperature: 0.5, top_p: 0.9, top_k: 5 }, key)).status, 200);
    // 2026-10-21 has no sampling fields: each is a 400 in Anthropic's shape naming it and the version, whole or streamed
    for (const [field, value] of [['temperature', 0], ['top_p', 0.9], ['top_k', 5]] as const) {
      for (const stream of [false, true]) {
        const res = await s.post('/v1/messages', { model: MODEL, max_tokens: 1, messages: ask, stream, [field]: value }, current);
        assert.equal(res.status, 400);
        const body = (await res.json()) as { type: string; error: { type: string; message: string } };
        assert.equal(body.type, 'error');
        assert.equal(body.error.type, 'invalid_request_error');
        assert.ok(body.error.message.startsWith(`${field}: `) && body.error.message.includes('2026-10-21'), body.error.message);
      }
    }
    // the current SDK sending one gets the same refusal
    await assert.rejects(client.messages.create({ model: MODEL, max_tokens: 1, messages: [{ role: 'user', content: 'Hello' }], temperature: 0 } as Anthropic.MessageCreateParamsNonStreaming), (err: unknown) => err instanceof Anthropic.BadRequestError && /^temperature: .*2026-10-21/.test((err.error as { error: { message: string } }).error.message));
    // the current SDK (2026-10-21, Bearer), whole and streamed
    const sdk = await client.messages.create({ model: MODEL, max_tokens: 2, messages: [{ role: 'user', content: 'Hello' }] });
    assert.equal(sdk.usage.output_tokens, 2);
    const sdkStream = await client.messages.stream({ model: MODEL, max_tokens: 2, messages: [{ role: 'user', content: 'Hello' }] }).finalMessage();
    assert.equal(sdkStream.usage.output_tokens, 2);
    // an old client's key in x-api-key with the current version is fine too; a wrong key is not
    assert.equal((await s.post('/v1/messages', { model: MODEL, max_tokens: 1, messages: ask }, { 'x-api-key': 'sekrit', 'anthropic-version': '2026-10-21' })).status, 200);
    assert.equal((await s.post('/v1/messages', { model: MODEL, max_tokens: 1, messages: ask }, { authorization: 'Bearer nope', 'anthropic-version': '2026-10-21' })).status, 401);
  });
});
