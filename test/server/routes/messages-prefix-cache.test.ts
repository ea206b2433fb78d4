// The prefix cache across an agent's loop through /v1/messages: a transcript shaped as
// Claude Code's (its recorded system prompt and tools, cut to fit a fixture; then
// tool_use / tool_result turns) replayed turn by turn, each turn's request the whole
// history so far. Every later turn must get ≥ 90% of its prompt tokens from the prefix
// cache (usage.cache_read_input_tokens: the engine's own count), with each of Claude Code's
// traps on: tool arguments sent back in another key order, the per-request billing line
// first in the system prompt, and the tokens-left count placed at the system prompt's front.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { HERMES_CHATML_TEMPLATE as HERMES_TEMPLATE } from '../../fixtures/hermes-template.js';
import { longContextFixturePath } from '../../fixtures/agents/long-context.js';
import { MODEL, startTestServer } from '../../fixtures/server.js';
import type { TestServer } from '../../fixtures/server.js';

interface Recorded {
  body: { system: { type: 'text'; text: string }[]; tools: { name: string; description: string; input_schema: object }[] };
}
const recorded = JSON.parse(readFileSync(new URL('../../../../test/fixtures/agents/claude-code-turn1.json', import.meta.url), 'utf8')) as Recorded;
const SYSTEM = recorded.body.system.slice(1).map((b) => b.text.slice(0, 800));
const TOOLS = recorded.body.tools.filter((t) => ['Bash', 'Read'].includes(t.name)).map((t) => ({ ...t, description: t.description.slice(0, 400) }));

type Trap = 'key order' | 'billing header' | 'tokens left at the front';

/** the tool calls the recorded loop makes, one per turn, and what each returns */
const CALLS: [string, Record<string, unknown>, string][] = [
  ['Bash', { command: 'ls', description: 'List files' }, 'README.md\nsrc\ntest'],
  ['Read', { file_path: '/p/README.md', limit: 20, offset: 1 }, '# p\nA small project that prints hello.'],
  ['Bash', { command: 'grep -rn hello src', description: 'Find hello' }, 'src/main.ts:1:console.log("hello")'],
  ['Read', { file_path: '/p/src/main.ts', offset: 1, limit: 5 }, '1\tconsole.log("hello")'],
];

/** the key order flipped: a client re-serializing arguments differently on each request */
const reorder = (o: Record<string, unknown>, turn: number): Record<string, unknown> => Object.fromEntries(turn % 2 === 0 ? Object.entries(o) : Object.entries(o).reverse());

function request(trap: Trap, turn: number, tag: string): object {
  const messages: object[] = [{ role: 'user', content: [{ type: 'text', text: `<system-reminder>context</system-reminder>` }, { type: 'text', text: `Where is hello printed? (${tag})` }] }];
  for (let k = 0; k < turn; k++) {
    const [name, input, result] = CALLS[k]!;
    messages.push({ role: 'assistant', content: [{ type: 'text', text: `Step ${k + 1}.` }, { type: 'tool_use', id: `toolu_${k}`, name, input: trap === 'key order' ? reorder(input, turn) : input }] });
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: `toolu_${k}`, content: result }] });
  }
  const billing = { type: 'text', text: `x-anthropic-billing-header: cc_version=2.1.197.${trap === 'billing header' ? (turn * 7919).toString(16) : '8a5'}; cc_entrypoint=sdk-cli;` };
  const tokensLeft = { type: 'text', text: `<total_tokens>${200000 - turn * 1500} tokens left</total_tokens>` };
  const system = [billing, ...(trap === 'tokens left at the front' ? [tokensLeft] : []), ...SYSTEM.map((text) => ({ type: 'text', text }))];
  return { model: MODEL, max_tokens: 2, stream: true, system, tools: TOOLS, messages };
}

interface Usage {
  input_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

describe('/v1/messages: the prefix cache holds across an agent loop', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer(longContextFixturePath(), { chatTemplate: HERMES_TEMPLATE }, { backend: 'auto', kvCacheMemory: '64MiB', maxModelLen: 8192 });
  });
  after(() => s?.close());

  for (const trap of ['key order', 'billing header', 'tokens left at the front'] as const) {
    it(`${trap}: every later turn gets ≥ 90% of its prompt from the cache`, async (t) => {
      const ratios: string[] = [];
      for (let turn = 0; turn <= CALLS.length; turn++) {
        const started = performance.now();
        const res = await s.post('/v1/messages', request(trap, turn, trap));
        assert.equal(res.status, 200);
        const text = await res.text();
        const ttft = performance.now() - started;
        const start = JSON.parse(/event: message_start\ndata: (.*)\n/.exec(text)![1]!) as { message: { usage: Usage } };
        const u = start.message.usage;
        const prompt = u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens;
        const ratio = u.cache_read_input_tokens / prompt;
        ratios.push(`turn ${turn + 1}: ${u.cache_read_input_tokens}/${prompt} (${(ratio * 100).toFixed(1)}%) ${ttft.toFixed(0)} ms`);
        if (turn > 0) assert.ok(ratio >= 0.9, ratios.join('; '));
      }
      t.diagnostic(ratios.join('; '));
    });
  }
});
