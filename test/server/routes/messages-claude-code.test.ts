// Claude Code's recorded requests (2.1.197, `claude -p`, test/fixtures/agents/) replayed
// against loom: its headers (x-api-key, anthropic-version 2023-06-01, the anthropic-beta
// list), ?beta=true, system as blocks with the billing line, a system message inside
// `messages`, thinking, context_management, output_config, metadata, cache_control, and
// (later turns) tool_use / tool_result pairs. The whole requests are counted
// (count_tokens renders and tokenizes all 24 tools); generation runs on the same requests
// with the tools cut to three and long texts shortened, so a random fixture prefills them
// in seconds. Every request is accepted and its stream parses with the official SDK.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { HERMES_CHATML_TEMPLATE as HERMES_TEMPLATE } from '../../fixtures/hermes-template.js';
import { longContextFixturePath } from '../../fixtures/agents/long-context.js';
import { MODEL, startTestServer } from '../../fixtures/server.js';
import type { TestServer } from '../../fixtures/server.js';

interface Recorded {
  url: string;
  headers: Record<string, string>;
  body: {
    model: string;
    max_tokens: number;
    system: { text: string }[];
    tools: { name: string; description: string }[];
    messages: { role: string; content: string | { type: string; name?: string }[] }[];
  } & Record<string, unknown>;
}

const load = (name: string): Recorded => JSON.parse(readFileSync(new URL(`../../../../test/fixtures/agents/${name}`, import.meta.url), 'utf8')) as Recorded;
// turn1/turn2: recorded by a logging server; turn4: the fourth request of a loop run against loom (scripts/claude-code-loop.mjs: three Bash calls and their results)
// thinking-turn4: the same loop with --reasoning-parser qwen3 (REASONING=1): Claude Code sends its thinking blocks back (empty signatures)
// error-turn3: the third request of a loop whose second command fails (COMMANDS='ls|cat missing.txt|pwd'): a tool_result with is_error
const TURNS = ['claude-code-turn1.json', 'claude-code-turn2.json', 'claude-code-turn4.json', 'claude-code-thinking-turn4.json', 'claude-code-error-turn3.json'].map(load);
// its session-title request (sent unless CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC): no tools, output_config.format a JSON schema
const TITLE = load('claude-code-title.json');

/** the headers Claude Code sent that matter to a server (no host, length or encoding) */
function headersOf(r: Recorded): Record<string, string> {
  const keep = Object.entries(r.headers).filter(([k]) => k.startsWith('anthropic-') || k.startsWith('x-') || k === 'user-agent');
  return Object.fromEntries(keep);
}

/** the request with three tools (and any its history calls) and long texts cut: every field kept */
function small(r: Recorded): Recorded['body'] {
  const body = structuredClone(r.body);
  const used = new Set(body.messages.flatMap((m) => (typeof m.content === 'string' ? [] : m.content.filter((b) => b.type === 'tool_use').map((b) => b.name))));
  body.tools = body.tools.filter((t, i) => i < 3 || used.has(t.name)).map((t) => ({ ...t, description: t.description.slice(0, 200) }));
  body.system = body.system.map((b) => ({ ...b, text: b.text.slice(0, 400) }));
  body.messages = body.messages.map((m) => (typeof m.content === 'string' ? { ...m, content: m.content.slice(0, 400) } : m));
  return { ...body, model: MODEL, max_tokens: 16 }; // a random model could fill Claude Code's 32000
}

describe('Claude Code\'s recorded requests against loom', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer(longContextFixturePath(), { chatTemplate: HERMES_TEMPLATE, apiKey: 'x', bodyLimitBytes: 4 << 20 }, { backend: 'auto', kvCacheMemory: '256MiB', maxModelLen: 65536 });
  });
  after(() => s?.close());

  it('the whole recorded requests are accepted: count_tokens renders all their tools and system text', async () => {
    for (const r of TURNS) {
      assert.equal(r.body.tools.length, 24);
      const res = await s.post('/v1/messages/count_tokens?beta=true', { ...r.body, model: MODEL, max_tokens: undefined, stream: undefined }, headersOf(r));
      assert.equal(res.status, 200, await res.clone().text());
      const { input_tokens } = (await res.json()) as { input_tokens: number };
      assert.ok(input_tokens > 20_000, `${input_tokens}`);
    }
  });

  it('each recorded request, streamed as Claude Code asks (?beta=true, its headers), is answered with Anthropic\'s events', async () => {
    for (const r of TURNS) {
      const res = await s.post(r.url, small(r), headersOf(r));
      assert.equal(res.status, 200, await res.clone().text());
      const events = (await res.text()).split('\n\n').filter((b) => b.startsWith('event: ')).map((b) => b.slice(7, b.indexOf('\n')));
      assert.equal(events[0], 'message_start');
      assert.deepEqual(events.slice(-2), ['message_delta', 'message_stop']);
    }
  });

  it('a failed command\'s result (is_error) reaches the model marked: the prompt has "Error: Exit code 1"', async () => {
    const r = TURNS.at(-1)!;
    const failed = r.body.messages.flatMap((m) => (typeof m.content === 'string' ? [] : m.content)).find((b) => b.type === 'tool_result' && (b as { is_error?: boolean }).is_error);
    assert.match(JSON.stringify(failed), /Exit code 1/);
    const seen: string[] = [];
    const add = s.engine.add.bind(s.engine);
    s.engine.add = (id, ids, params) => (seen.push(s.model.tokenizer.decode([...ids], { skipSpecial: false })), add(id, ids, params));
    try {
      assert.equal((await s.post(r.url, { ...small(r), max_tokens: 1 }, headersOf(r))).status, 200);
    } finally {
      s.engine.add = add;
    }
    assert.match(seen[0]!, /<tool_response>\nError: Exit code 1\ncat: missing\.txt/);
  });

  it('the session-title request: its output_config.format is enforced (a JSON object with a title)', async () => {
    const res = await s.post(TITLE.url, { ...TITLE.body, model: MODEL, max_tokens: 300, stream: false, temperature: 0 }, headersOf(TITLE));
    assert.equal(res.status, 200, await res.clone().text());
    const m = (await res.json()) as { content: { type: string; text: string }[]; stop_reason: string };
    if (m.stop_reason === 'end_turn') assert.equal(typeof (JSON.parse(m.content[0]!.text) as { title: unknown }).title, 'string');
    else assert.match(m.content[0]!.text, /^\s*\{\s*"title"/);
  });

  it('the official SDK streams them (Bearer key this time) and assembles a message', async () => {
    const client = new Anthropic({ baseURL: s.url, apiKey: 'x', maxRetries: 0, defaultHeaders: { 'anthropic-beta': TURNS[0]!.headers['anthropic-beta']! } });
    for (const r of TURNS) {
      const body = small(r) as unknown as Anthropic.MessageStreamParams;
      const m = await client.messages.stream(body).finalMessage();
      assert.equal(m.type, 'message');
      assert.ok(m.stop_reason !== null);
      assert.ok((m.usage.input_tokens ?? 0) + (m.usage.cache_creation_input_tokens ?? 0) + (m.usage.cache_read_input_tokens ?? 0) > 1000);
    }
  });
});
