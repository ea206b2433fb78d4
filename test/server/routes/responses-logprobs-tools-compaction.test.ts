// The Responses API's logprobs (top_logprobs, include "message.output_text.logprobs"),
// custom tools (free-form input; a regex grammar format; Lark refused) and compaction (a final
// compaction_trigger item, as Codex CLI sends it, and POST /v1/responses/compact), with the
// official openai client, whole and streamed, on the hf-qwen3 fixture with a Hermes template.
// A random fixture writes junk, so where the test needs a given output the engine is scripted
// (a grammar allowing exactly that text), and calls are also forced by tool_choice.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import type { SamplingParams } from '../../../src/engine/sampling-params.js';
import { COMPACTION_PROMPT, SUMMARY_LEAD, compactionContent, compactionSummary } from '../../../src/server/responses-compaction.js';
import { hfFixturePaths } from '../../fixtures/index.js';
import { HERMES_CHATML_TEMPLATE } from '../../fixtures/hermes-template.js';
import { HF_FIXTURES } from '../../fixtures/recipe.js';
import { MODEL, startTestServer } from '../../fixtures/server.js';
import type { TestServer } from '../../fixtures/server.js';

const greedy = { model: MODEL, temperature: 0 };

/** the next request's output scripted: a grammar allowing exactly `text` (then EOS); its prompt recorded */
function script(s: TestServer, text: string, prompts: string[] = []): string[] {
  const add = s.engine.add.bind(s.engine);
  s.engine.add = (id: string, ids: readonly number[] | Int32Array, params: SamplingParams) => {
    s.engine.add = add;
    prompts.push(s.model.tokenizer.decode([...ids], { skipSpecial: false }));
    return add(id, ids, { ...params, grammar: { type: 'choice', choices: [text] } });
  };
  return prompts;
}

/** a streamed response's events through the SDK, and the final response */
async function streamed(client: OpenAI, body: OpenAI.Responses.ResponseCreateParamsStreaming): Promise<{ events: OpenAI.Responses.ResponseStreamEvent[]; response: OpenAI.Responses.Response }> {
  const events: OpenAI.Responses.ResponseStreamEvent[] = [];
  for await (const e of await client.responses.create(body)) events.push(e);
  const last = events.at(-1)!;
  assert.ok(last.type === 'response.completed' || last.type === 'response.incomplete', last.type);
  return { events, response: last.response };
}

/** a response's output_text part */
function textPart(r: OpenAI.Responses.Response): OpenAI.Responses.ResponseOutputText {
  const m = r.output.find((i) => i.type === 'message');
  const p = m?.type === 'message' ? m.content[0] : undefined;
  assert.ok(p?.type === 'output_text', JSON.stringify(r.output));
  return p;
}

const patchTool: OpenAI.Responses.CustomTool = { type: 'custom', name: 'apply_patch', description: 'Apply a patch to files' };

describe('/v1/responses: logprobs, custom tools, compaction (openai client, hf-qwen3 fixture)', () => {
  let s: TestServer;
  let client: OpenAI;
  before(async () => {
    const { folder } = hfFixturePaths(HF_FIXTURES.find((f) => f.name === 'hf-qwen3')!);
    s = await startTestServer(folder, { chatTemplate: HERMES_CHATML_TEMPLATE });
    client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'none', maxRetries: 0 });
  });
  after(() => s?.close());

  it('logprobs: on the output_text part, one per token with top_logprobs alternatives, the values /v1/chat/completions gives; the stream\'s deltas carry the same', async () => {
    const input = 'Say something';
    const r = await client.responses.create({ ...greedy, input, max_output_tokens: 6, top_logprobs: 3, include: ['message.output_text.logprobs'] });
    const part = textPart(r);
    const lps = part.logprobs!;
    assert.equal(lps.length, 6);
    for (const lp of lps) {
      assert.ok(lp.logprob <= 0);
      assert.equal(lp.top_logprobs.length, 3);
    }
    assert.equal(lps.map((l) => l.token).join(''), part.text);
    // the same conversation through chat completions: the same tokens and values
    const chat = (await (await s.post('/v1/chat/completions', { ...greedy, messages: [{ role: 'user', content: input }], max_tokens: 6, logprobs: true, top_logprobs: 3 })).json()) as { choices: { logprobs: { content: { token: string; logprob: number; top_logprobs: { token: string; logprob: number }[] }[] } }[] };
    assert.deepEqual(
      lps.map((l) => [l.token, l.logprob, l.top_logprobs.map((t) => [t.token, t.logprob])]),
      chat.choices[0]!.logprobs.content.map((l) => [l.token, l.logprob, l.top_logprobs.map((t) => [t.token, t.logprob])]),
    );
    // streamed: the deltas' logprobs, in order, are the part's
    const { events, response } = await streamed(client, { ...greedy, input, max_output_tokens: 6, top_logprobs: 3, include: ['message.output_text.logprobs'], stream: true });
    const deltas = events.flatMap((e) => (e.type === 'response.output_text.delta' ? e.logprobs : []));
    assert.deepEqual(deltas.map((l) => [l.token, l.logprob]), lps.map((l) => [l.token, l.logprob]));
    const done = events.find((e) => e.type === 'response.output_text.done');
    assert.equal(done?.type === 'response.output_text.done' && done.logprobs?.length, 6);
    const sp = textPart(response);
    assert.deepEqual(sp.logprobs, lps);
    // include alone: no alternatives; top_logprobs alone also asks; neither: none
    const inc = await client.responses.create({ ...greedy, input, max_output_tokens: 2, include: ['message.output_text.logprobs'] });
    const incPart = textPart(inc);
    assert.deepEqual(incPart.logprobs!.map((l) => l.top_logprobs.length), [0, 0]);
    const alone = await client.responses.create({ ...greedy, input, max_output_tokens: 2, top_logprobs: 1 });
    const alonePart = textPart(alone);
    assert.equal(alonePart.logprobs!.length, 2);
    const none = await client.responses.create({ ...greedy, input, max_output_tokens: 2 });
    const nonePart = textPart(none);
    assert.deepEqual(nonePart.logprobs, []);
    const bad = await s.post('/v1/responses', { model: MODEL, input, top_logprobs: 21 });
    assert.equal(bad.status, 400);
    assert.equal(((await bad.json()) as { error: { param: string } }).error.param, 'top_logprobs');
  });

  it('logprobs go with the message text only: reasoning and a call\'s tokens carry none', async () => {
    const text = 'Sure, patching.';
    script(s, `${text}<tool_call>\n{"name": "apply_patch", "arguments": {"input": "x"}}\n</tool_call>`);
    const r = await client.responses.create({ model: MODEL, input: 'Patch it', tools: [patchTool], top_logprobs: 1, max_output_tokens: 200 });
    assert.deepEqual(r.output.map((i) => i.type), ['message', 'custom_tool_call'], JSON.stringify(r));
    const part = textPart(r);
    assert.equal(part.text, text);
    assert.equal(part.logprobs!.map((l) => l.token).join(''), text);
  });

  it('a custom tool: the model\'s call comes back as a custom_tool_call with its free-form input, whole and streamed (input delta and done); its output goes back in', async () => {
    const patch = '*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch';
    const call = `<tool_call>\n{"name": "apply_patch", "arguments": {"input": ${JSON.stringify(patch)}}}\n</tool_call>`;
    const prompts = script(s, call);
    const r = await client.responses.create({ model: MODEL, input: 'Add a.txt', tools: [patchTool], max_output_tokens: 200 });
    assert.equal(r.output.length, 1);
    const item = r.output[0]!;
    assert.ok(item.type === 'custom_tool_call', JSON.stringify(item));
    assert.equal(item.name, 'apply_patch');
    assert.equal(item.input, patch);
    assert.match(item.call_id, /^call_/);
    // the template saw the tool as a function of one string argument
    assert.match(prompts[0]!, /"name": "apply_patch"/);
    assert.match(prompts[0]!, /"input": \{"type": "string"/);
    script(s, call);
    const { events, response } = await streamed(client, { model: MODEL, input: 'Add a.txt', tools: [patchTool], max_output_tokens: 200, stream: true });
    const types = events.map((e) => e.type);
    assert.ok(types.includes('response.custom_tool_call_input.delta') && types.includes('response.custom_tool_call_input.done'), types.join());
    const deltas = events.flatMap((e) => (e.type === 'response.custom_tool_call_input.delta' ? [e.delta] : []));
    assert.equal(deltas.join(''), patch);
    assert.deepEqual(response.output.map((i) => i.type === 'custom_tool_call' && i.input), [patch]);
    // the SDK's own stream accumulator (responses.stream) assembles the same item
    script(s, call);
    const acc = await client.responses.stream({ model: MODEL, input: 'Add a.txt', tools: [patchTool], max_output_tokens: 200 }).finalResponse();
    assert.deepEqual(acc.output.map((i) => i.type === 'custom_tool_call' && [i.name, i.input]), [['apply_patch', patch]]);
    // the next turn: the call and its output render as the function call and tool turn they were made as
    const next = await s.post('/v1/responses/input_tokens', {
      model: MODEL,
      tools: [patchTool],
      input: [{ role: 'user', content: 'Add a.txt' }, { type: 'custom_tool_call', call_id: 'call_1', name: 'apply_patch', input: patch }, { type: 'custom_tool_call_output', call_id: 'call_1', output: 'Done' }],
    });
    const chat = (await (await s.post('/v1/chat/completions', {
      model: MODEL,
      max_tokens: 1,
      return_token_ids: true,
      tools: [{ type: 'function', function: { name: 'apply_patch', description: 'Apply a patch to files', parameters: { type: 'object', properties: { input: { type: 'string', description: 'The tool\'s input, as free-form text' } }, required: ['input'], additionalProperties: false } } }],
      messages: [{ role: 'user', content: 'Add a.txt' }, { role: 'assistant', content: '', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'apply_patch', arguments: JSON.stringify({ input: patch }) } }] }, { role: 'tool', tool_call_id: 'call_1', content: 'Done' }],
    })).json()) as { prompt_token_ids: number[] };
    assert.equal(((await next.json()) as { input_tokens: number }).input_tokens, chat.prompt_token_ids.length);
  });

  it('a namespace\'s tools (Codex\'s sub-agent tools come so) are in the prompt; a call to one names its namespace, whole and streamed', async () => {
    const ns = { type: 'namespace', name: 'multi_agent_v1', description: 'Sub-agents', tools: [{ type: 'function', name: 'spawn_agent', description: 'Spawn', parameters: { type: 'object', properties: { task: { type: 'string', enum: ['a', 'b'] } }, required: ['task'], additionalProperties: false } }] };
    const body = { model: MODEL, input: 'Delegate', tools: [ns], tool_choice: { type: 'function', name: 'spawn_agent' }, max_output_tokens: 100 };
    const with_ = (await (await s.post('/v1/responses/input_tokens', { model: MODEL, input: 'Delegate', tools: [ns] })).json()) as { input_tokens: number };
    const without = (await (await s.post('/v1/responses/input_tokens', { model: MODEL, input: 'Delegate' })).json()) as { input_tokens: number };
    assert.ok(with_.input_tokens > without.input_tokens);
    for (const stream of [false, true]) {
      const res = await s.post('/v1/responses', { ...body, stream });
      assert.equal(res.status, 200);
      const r = stream ? ((await res.text()).split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)) as { type: string; response?: OpenAI.Responses.Response }).find((e) => e.type === 'response.completed')!.response!) : ((await res.json()) as OpenAI.Responses.Response);
      const call = r.output.find((i) => i.type === 'function_call') as (OpenAI.Responses.ResponseFunctionToolCall & { namespace?: string }) | undefined;
      assert.ok(call, JSON.stringify(r.output));
      assert.deepEqual([call.name, call.namespace, Object.keys(JSON.parse(call.arguments) as object)], ['spawn_agent', 'multi_agent_v1', ['task']]);
    }
  });

  it('a custom tool with a regex grammar: a forced call (tool_choice custom) writes input matching it; Lark and unknown syntaxes are 400s naming it', async () => {
    const tool: OpenAI.Responses.CustomTool = { type: 'custom', name: 'pick', format: { type: 'grammar', syntax: 'regex', definition: '[a-c]{2,5}' } };
    for (const stream of [false, true]) {
      const body = { ...greedy, input: 'Pick', tools: [tool], tool_choice: { type: 'custom' as const, name: 'pick' }, max_output_tokens: 100 };
      const r = stream ? (await streamed(client, { ...body, stream: true })).response : await client.responses.create(body);
      const item = r.output.find((i) => i.type === 'custom_tool_call');
      assert.ok(item && item.type === 'custom_tool_call', JSON.stringify(r.output));
      assert.match(item.input, /^[a-c]{2,5}$/);
    }
    for (const syntax of ['lark', 'ebnf']) {
      const res = await s.post('/v1/responses', { model: MODEL, input: 'x', tools: [{ type: 'custom', name: 'p', format: { type: 'grammar', syntax, definition: 'start: "a"' } }] });
      assert.equal(res.status, 400);
      const e = (await res.json()) as { error: { message: string; param: string } };
      assert.match(e.error.message, new RegExp(`syntax "${syntax}" is not supported`));
      assert.equal(e.error.param, 'tools');
    }
  });

  it('compaction_trigger (Codex\'s remote compaction v2): one compaction item carrying the model\'s summary, whole and streamed; the prompt is the conversation, tools and all, then the compaction prompt', async () => {
    const conversation: OpenAI.Responses.ResponseInputItem[] = [
      { role: 'developer', content: 'You are a coding agent.' },
      { role: 'user', content: 'Run ls' },
      { type: 'function_call', call_id: 'call_1', name: 'exec', arguments: '{"cmd":"ls"}' },
      { type: 'function_call_output', call_id: 'call_1', output: 'a.txt' },
    ];
    const tools: OpenAI.Responses.FunctionTool[] = [{ type: 'function', name: 'exec', strict: false, parameters: { type: 'object', properties: { cmd: { type: 'string' } } } }];
    const first = await client.responses.create({ model: MODEL, input: conversation, tools, max_output_tokens: 1 });
    const summary = 'Listed files: a.txt.';
    const prompts = script(s, summary);
    const body = { model: MODEL, input: [...conversation, { type: 'compaction_trigger' }] as OpenAI.Responses.ResponseInputItem[], tools, store: false };
    const r = await client.responses.create(body);
    assert.equal(r.status, 'completed', JSON.stringify(r));
    assert.equal(r.output.length, 1);
    const item = r.output[0]! as unknown as { type: string; id: string; encrypted_content: string };
    assert.equal(item.type, 'compaction');
    assert.match(item.id, /^cmp_/);
    assert.equal(compactionSummary(item.encrypted_content, 'x'), summary);
    assert.ok(prompts[0]!.trimEnd().endsWith(`${COMPACTION_PROMPT}<|im_end|>\n<|im_start|>assistant`), prompts[0]);
    assert.match(prompts[0]!, /"name": "exec"/);
    // the conversation before it came from the prefix cache
    assert.ok(r.usage!.input_tokens_details.cached_tokens >= Math.floor((first.usage!.input_tokens - 16) / 16) * 16, JSON.stringify([r.usage, first.usage]));
    script(s, summary);
    const { events, response } = await streamed(client, { ...body, stream: true });
    assert.deepEqual(events.map((e) => e.type), ['response.created', 'response.in_progress', 'response.output_item.added', 'response.output_item.done', 'response.completed']);
    const done = (response.output[0] as unknown as { encrypted_content: string }).encrypted_content;
    assert.equal(compactionSummary(done, 'x'), summary);
    script(s, summary);
    const acc = await client.responses.stream(body).finalResponse();
    assert.deepEqual(acc.output.map((i) => i.type), ['compaction']);
    // the next turn: the compaction item renders as a user turn carrying the summary
    const after = [{ type: 'compaction', encrypted_content: done }, { role: 'user', content: 'Now count them' }];
    const next = (await (await s.post('/v1/responses/input_tokens', { model: MODEL, input: after })).json()) as { input_tokens: number };
    const chat = (await (await s.post('/v1/chat/completions', { model: MODEL, max_tokens: 1, return_token_ids: true, messages: [{ role: 'user', content: SUMMARY_LEAD + summary }, { role: 'user', content: 'Now count them' }] })).json()) as { prompt_token_ids: number[] };
    assert.equal(next.input_tokens, chat.prompt_token_ids.length);
    assert.equal((await s.post('/v1/responses', { model: MODEL, input: after, max_output_tokens: 1 })).status, 200);
    // another server's compaction item, or a trigger that is not last, is a 400 naming input
    for (const input of [[{ type: 'compaction', encrypted_content: 'gAAAAB-openai-blob' }], [{ type: 'compaction_trigger' }, { role: 'user', content: 'x' }]]) {
      const res = await s.post('/v1/responses', { model: MODEL, input });
      assert.equal(res.status, 400);
      assert.equal(((await res.json()) as { error: { param: string } }).error.param, 'input');
    }
  });

  it('POST /v1/responses/compact (client.responses.compact): the user messages, then one compaction item; previous_response_id works too', async () => {
    const input: OpenAI.Responses.ResponseInputItem[] = [
      { role: 'user', content: 'Write a haiku' },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Leaves fall.', annotations: [] }] } as unknown as OpenAI.Responses.ResponseInputItem,
      { role: 'user', content: [{ type: 'input_text', text: 'Another' }] },
    ];
    script(s, 'Two haiku requests so far.');
    const c = await client.responses.compact({ model: MODEL, input });
    assert.equal(c.object, 'response.compaction');
    assert.equal(c.output.length, 3);
    assert.deepEqual(c.output.slice(0, 2).map((m) => m.type === 'message' && [m.role, m.content]), [['user', [{ type: 'input_text', text: 'Write a haiku' }]], ['user', [{ type: 'input_text', text: 'Another' }]]]);
    const item = c.output[2] as unknown as { type: string; encrypted_content: string };
    assert.equal(item.type, 'compaction');
    assert.equal(compactionSummary(item.encrypted_content, 'x'), 'Two haiku requests so far.');
    assert.ok(c.usage.input_tokens > 0 && c.usage.output_tokens > 0);
    // from a stored response
    const prev = await client.responses.create({ model: MODEL, input: 'Remember 42', max_output_tokens: 2 });
    script(s, 'The user said 42.');
    const p = await client.responses.compact({ model: MODEL, previous_response_id: prev.id });
    assert.deepEqual(p.output.map((i) => i.type), ['message', 'compaction']);
    assert.equal(compactionSummary((p.output[1] as unknown as { encrypted_content: string }).encrypted_content, 'x'), 'The user said 42.');
    assert.equal(compactionContent('a').startsWith('loom.compaction.v1:'), true);
    // tools sent along (as Codex's compaction input carries them) render as in the conversation: its prefix is cached
    const tools: OpenAI.Responses.FunctionTool[] = [{ type: 'function', name: 'exec', strict: false, description: 'Run a command in the shell and return what it printed', parameters: { type: 'object', properties: { cmd: { type: 'string' } } } }];
    const turn = await client.responses.create({ model: MODEL, input, tools, max_output_tokens: 1 });
    script(s, 'Haiku.');
    const withTools = await client.responses.compact({ model: MODEL, input, tools } as OpenAI.Responses.ResponseCompactParams);
    assert.ok(withTools.usage.input_tokens_details.cached_tokens >= Math.floor((turn.usage!.input_tokens - 1) / 16) * 16 - 16, JSON.stringify([withTools.usage, turn.usage]));
  });
});
