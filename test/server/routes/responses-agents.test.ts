// Codex CLI's recorded requests (test/fixtures/agents/codex/: its first request, the
// sixth of a five-tool-call loop run against loom with scripts/codex-loop.mjs, and a
// remote compaction (v2) request and the one after it) replayed
// against /v1/responses: every one accepted, its stream read by the openai SDK; then the
// loop's transcript (Codex's ~7k-token system prompt with its tools, then five
// function_call / function_call_output turns) replayed turn by turn, with the full history
// resent and with previous_response_id, measuring how much of every later turn's prompt the
// prefix cache held (loom's own counter: usage.input_tokens_details.cached_tokens) and the
// time to the first event (response.created waits for the engine's first token).
// The model is ../shared/models/llama-2-tiny-random.gguf (the real Llama 2 tokenizer, so the
// prompt is ~7k tokens) with its context raised to 32k in a copy (random weights: positions
// past its 4k are as good as any), with a Qwen-style Hermes template.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { PROJECT_ROOT, SHARED_MODELS } from '../../fixtures/index.js';
import { HERMES_CHATML_TEMPLATE } from '../../fixtures/hermes-template.js';
import { startTestServer } from '../../fixtures/server.js';
import type { TestServer } from '../../fixtures/server.js';

const TINY = join(SHARED_MODELS, 'llama-2-tiny-random.gguf');
const CODEX = join(PROJECT_ROOT, 'test', 'fixtures', 'agents', 'codex');

interface Recorded {
  headers: Record<string, string>;
  body: OpenAI.Responses.ResponseCreateParamsStreaming & { input: OpenAI.Responses.ResponseInputItem[] };
}
const recorded = (n: number): Recorded => JSON.parse(readFileSync(join(CODEX, `request-${n}.json`), 'utf8')) as Recorded;

/** a copy of a llama GGUF with llama.context_length (a u32) set to `length` */
function longContextCopy(path: string, dir: string, length: number): string {
  const bytes = readFileSync(path);
  const key = Buffer.from('llama.context_length');
  const at = bytes.indexOf(key) + key.length;
  assert.equal(bytes.readUInt32LE(at), 4, 'a u32 value');
  bytes.writeUInt32LE(length, at + 4);
  const out = join(dir, 'tiny-long.gguf');
  writeFileSync(out, bytes);
  return out;
}

/** the x-codex-* and session headers Codex sends (not auth, not transport) */
const codexHeaders = (h: Record<string, string>): Record<string, string> => Object.fromEntries(Object.entries(h).filter(([k]) => k.startsWith('x-codex') || k === 'session-id' || k === 'thread-id' || k === 'originator'));

interface Turn {
  input: number;
  cached: number;
  ttftMs: number;
}

describe('Codex CLI requests and its agent loop on /v1/responses', { skip: !existsSync(TINY) && `absent: ${TINY} (set LOOM_SHARED_MODELS)` }, () => {
  let dir: string;
  let s: TestServer;
  let client: OpenAI;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'loom-codex-'));
    s = await startTestServer(longContextCopy(TINY, dir, 32768), { chatTemplate: HERMES_CHATML_TEMPLATE, bodyLimitBytes: 16 << 20 }, { backend: 'auto', kvCacheMemory: '64MiB' });
    client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'x', maxRetries: 0 });
  });
  after(async () => {
    await s?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** one streamed request through the SDK: its final response, and ms to its first event */
  async function run(body: OpenAI.Responses.ResponseCreateParamsStreaming, headers: Record<string, string> = {}): Promise<{ response: OpenAI.Responses.Response; ttftMs: number }> {
    const t0 = performance.now();
    const stream = await client.responses.create(body, { headers });
    let ttftMs = -1;
    let last = -1;
    let response: OpenAI.Responses.Response | undefined;
    for await (const e of stream) {
      if (ttftMs < 0) ttftMs = performance.now() - t0;
      assert.notEqual(e.type, 'error', JSON.stringify(e));
      assert.ok(e.sequence_number > last);
      last = e.sequence_number;
      if (e.type === 'response.completed' || e.type === 'response.incomplete') response = e.response;
    }
    assert.ok(response, 'the stream ends with the response');
    return { response, ttftMs };
  }

  it('every recorded request is accepted whole (unknown tool types, include, store false, client_metadata) and streams', async () => {
    for (const n of [1, 6]) {
      const r = recorded(n);
      assert.ok(r.body.tools?.some((t) => t.type === 'web_search') && r.body.tools.some((t) => (t.type as string) === 'namespace'));
      assert.deepEqual(r.body.include, ['reasoning.encrypted_content']);
      const { response } = await run({ ...r.body, max_output_tokens: 4 }, codexHeaders(r.headers));
      assert.equal(response.status, 'incomplete');
      assert.equal((response as { store?: boolean }).store, false);
      // store: false keeps nothing to retrieve
      await assert.rejects(client.responses.retrieve(response.id), (e: unknown) => e instanceof OpenAI.NotFoundError);
    }
    assert.ok(s.log.some((l) => l.includes('"client_metadata"')), 'an unknown field is reported once, not refused');
  });

  it('Codex\'s recorded compaction request (remote_compaction "v2": the history, then a compaction_trigger) is answered with one compaction item, streamed, its prompt mostly from the prefix cache', async () => {
    const r = JSON.parse(readFileSync(join(CODEX, 'compaction-trigger.json'), 'utf8')) as Recorded;
    assert.deepEqual(r.body.input.at(-1), { type: 'compaction_trigger' });
    // the conversation without the trigger first, as Codex's turn before it ran it
    await run({ ...r.body, input: r.body.input.slice(0, -1), max_output_tokens: 1 });
    const { response } = await run({ ...r.body, max_output_tokens: 8 });
    assert.deepEqual(response.output.map((i) => i.type), ['compaction']);
    assert.match((response.output[0] as unknown as { encrypted_content: string }).encrypted_content, /^loom\.compaction\.v1:/);
    assert.ok(response.usage!.input_tokens_details.cached_tokens / response.usage!.input_tokens > 0.9, JSON.stringify(response.usage));
    // the next request Codex sent carries loom's compaction item back in place of the history
    const next = JSON.parse(readFileSync(join(CODEX, 'after-compaction.json'), 'utf8')) as Recorded;
    assert.ok(next.body.input.some((i) => (i.type as string) === 'compaction'));
    assert.equal((await run({ ...next.body, max_output_tokens: 2 })).response.status, 'incomplete');
  });

  it('the transcript sent to /v1/chat/completions as chat messages, and to /v1/messages as Anthropic messages, hands the engine the same prompt ids', async () => {
    const r = recorded(6);
    const seen: number[][] = [];
    const add = s.engine.add.bind(s.engine);
    s.engine.add = (id, ids, params) => (seen.push([...ids]), add(id, ids, params));
    try {
      await run({ ...r.body, max_output_tokens: 1 });
      // the chat a client would send for it: one system message (the leading developer texts), then the turns
      const text = (c: unknown): string => (typeof c === 'string' ? c : (c as { text: string }[]).map((p) => p.text).join(''));
      const messages: OpenAI.ChatCompletionMessageParam[] = [];
      const system: string[] = [];
      for (const item of r.body.input) {
        if (item.type === 'message' && item.role === 'developer' && messages.length === 0) system.push(text(item.content));
        else {
          if (messages.length === 0) messages.push({ role: 'system', content: system.join('\n\n') });
          const lastMsg = messages.at(-1)!;
          if (item.type === 'message') messages.push({ role: item.role as 'user' | 'assistant', content: text(item.content) });
          else if (item.type === 'function_call') {
            const call = { id: item.call_id, type: 'function' as const, function: { name: item.name, arguments: item.arguments } };
            if (lastMsg.role === 'assistant' && !lastMsg.tool_calls) lastMsg.tool_calls = [call];
            else messages.push({ role: 'assistant', content: '', tool_calls: [call] });
          } else if (item.type === 'function_call_output') messages.push({ role: 'tool', tool_call_id: item.call_id, content: text(item.output) });
        }
      }
      // function tools, a namespace's in its place (web_search, a hosted tool, is left out)
      type Fn = { type: string; name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean; tools?: Fn[] };
      const fn = (t: Fn) => ({ type: 'function' as const, function: { name: t.name, description: t.description!, parameters: t.parameters!, ...(t.strict !== undefined && { strict: t.strict }) } });
      const tools = (r.body.tools as unknown as Fn[]).flatMap((t) => (t.type === 'function' ? [fn(t)] : t.type === 'namespace' ? t.tools!.filter((i) => i.type === 'function').map(fn) : []));
      assert.ok(tools.some((t) => t.function.name === 'spawn_agent'));
      await client.chat.completions.create({ model: r.body.model as string, messages, tools, max_tokens: 1 });
      assert.equal(seen.length, 2);
      assert.deepEqual(seen[1], seen[0]);
      // the same as Anthropic messages: system, then user / assistant (text, tool_use) / user (tool_result) turns
      const anthropic: { role: string; content: { type: string; [k: string]: unknown }[] }[] = [];
      for (const m of messages.slice(1)) {
        if (m.role === 'tool') anthropic.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: m.tool_call_id, content: m.content }] });
        else if (m.role === 'assistant') {
          const content: { type: string; [k: string]: unknown }[] = m.content ? [{ type: 'text', text: m.content }] : [];
          for (const c of m.tool_calls ?? []) if (c.type === 'function') content.push({ type: 'tool_use', id: c.id, name: c.function.name, input: JSON.parse(c.function.arguments) as unknown });
          anthropic.push({ role: 'assistant', content });
        } else anthropic.push({ role: m.role, content: [{ type: 'text', text: m.content as string }] });
      }
      const anthropicTools = tools.map((t) => ({ name: t.function.name, description: t.function.description, input_schema: t.function.parameters, strict: t.function.strict }));
      const res = await s.post('/v1/messages', { model: r.body.model, max_tokens: 1, system: messages[0]!.content, tools: anthropicTools, messages: anthropic });
      assert.equal(res.status, 200, await res.clone().text());
      assert.equal(seen.length, 3);
      assert.deepEqual(seen[2], seen[0]);
    } finally {
      s.engine.add = add;
    }
  });

  it('the loop replayed turn by turn keeps ≥ 90% of every later prompt in the prefix cache, history resent or by previous_response_id', async (t) => {
    const r = recorded(6);
    const items = r.body.input;
    const outputs = items.flatMap((item, i) => (item.type === 'function_call_output' ? [i] : []));
    assert.equal(outputs.length, 5);
    const firstReply = items.findIndex((item) => item.type === 'function_call' || (item.type === 'message' && item.role === 'assistant'));
    // turn 0 asks; turn k sends the k-th tool result
    const cuts = [firstReply, ...outputs.map((i) => i + 1)];
    const base = { ...r.body, stream: true as const, max_output_tokens: 8, temperature: 0 };
    const report = (name: string, turns: Turn[]): void => {
      for (const [k, turn] of turns.entries()) t.diagnostic(`${name} turn ${k}: ${turn.cached}/${turn.input} prompt tokens cached (${((100 * turn.cached) / turn.input).toFixed(1)}%), first event after ${turn.ttftMs.toFixed(0)} ms`);
      for (const turn of turns.slice(1)) assert.ok(turn.cached / turn.input >= 0.9, `${name}: ${turn.cached}/${turn.input}`);
    };
    await s.engine.resetPrefixCache();
    const resent: Turn[] = [];
    for (const cut of cuts) {
      const { response, ttftMs } = await run({ ...base, input: items.slice(0, cut) });
      resent.push({ input: response.usage!.input_tokens, cached: response.usage!.input_tokens_details.cached_tokens, ttftMs });
    }
    report('history resent', resent);
    await s.engine.resetPrefixCache();
    const chained: Turn[] = [];
    let previous: string | undefined;
    for (const [k, cut] of cuts.entries()) {
      const input = k === 0 ? items.slice(0, cut) : [items[cut - 1]!];
      const { response, ttftMs } = await run({ ...base, store: true, input, ...(previous && { previous_response_id: previous }) });
      previous = response.id;
      chained.push({ input: response.usage!.input_tokens, cached: response.usage!.input_tokens_details.cached_tokens, ttftMs });
    }
    report('previous_response_id', chained);
  });
});
