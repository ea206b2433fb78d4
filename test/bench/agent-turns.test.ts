// `loom bench agent-turns` end to end: the command replays a recorded Claude Code transcript
// (its system prompt and tools cut to fit a fixture) turn by turn through /v1/messages against
// a `loom serve` it starts, and reports one row per turn in which every later turn's prompt
// comes ≥ 90% from loom's prefix cache (its own count). The llama-server side runs when
// LOOM_TEST_LLAMA_SERVER names a binary. Times are not asserted.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_TRANSCRIPT, formatAgentTurnsReport, turnCuts } from '../../src/bench/agent-turns.js';
import type { AgentTurnsReport } from '../../src/bench/agent-turns.js';
import { longContextFixturePath } from '../fixtures/agents/long-context.js';
import { HERMES_CHATML_TEMPLATE } from '../fixtures/hermes-template.js';
import { PROJECT_ROOT } from '../fixtures/index.js';

const CLI = join(PROJECT_ROOT, 'dist', 'src', 'cli.js');
const LLAMA_SERVER = process.env.LOOM_TEST_LLAMA_SERVER;

interface Body {
  system: { type: string; text: string }[];
  tools: { name: string; description: string }[];
  messages: { role: string; content: unknown }[];
}

describe('bench agent-turns', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'loom-agent-turns-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('cuts a transcript into turns at each assistant message, the last turn all of it', () => {
    const { body } = JSON.parse(readFileSync(DEFAULT_TRANSCRIPT, 'utf8')) as { body: Body };
    assert.deepEqual(body.messages.map((m) => m.role), ['user', 'system', 'assistant', 'user', 'assistant', 'user', 'assistant', 'user']);
    assert.deepEqual(turnCuts(body.messages), [2, 4, 6, 8]);
    assert.deepEqual(turnCuts([...body.messages, { role: 'assistant', content: 'done' }]), [2, 4, 6, 8]);
  });

  it('replays the transcript against loom serve: one row per turn, later turns served from the prefix cache', () => {
    const { body } = JSON.parse(readFileSync(DEFAULT_TRANSCRIPT, 'utf8')) as { body: Body };
    // Claude Code's system prompt and two of its tools, cut to fit the fixture's context
    const transcript = {
      ...body,
      system: body.system.map((b) => ({ ...b, text: b.text.slice(0, 800) })),
      tools: body.tools.filter((t) => ['Bash', 'Read'].includes(t.name)).map((t) => ({ ...t, description: t.description.slice(0, 400) })),
      messages: body.messages.map((m) => (typeof m.content === 'string' ? { ...m, content: m.content.slice(0, 800) } : m)),
    };
    writeFileSync(join(dir, 'transcript.json'), JSON.stringify(transcript));
    writeFileSync(join(dir, 'template.jinja'), HERMES_CHATML_TEMPLATE);
    const args = [CLI, 'bench', 'agent-turns', '--model', longContextFixturePath(), '--transcript', join(dir, 'transcript.json'), '--chat-template', join(dir, 'template.jinja'),
      '--threads', '1', '--max-tokens', '2', '--context', '8192', '--json', ...(LLAMA_SERVER ? ['--llama-server', LLAMA_SERVER] : [])];
    const run = spawnSync(process.execPath, args, { encoding: 'utf8', timeout: 600_000 });
    assert.equal(run.status, 0, run.stderr);
    const r = JSON.parse(run.stdout) as AgentTurnsReport;
    assert.equal(r.endpoint, '/v1/messages');
    assert.deepEqual(r.turns.map((t) => [t.turn, t.messages]), [[1, 2], [2, 4], [3, 6], [4, 8]]);
    for (const side of LLAMA_SERVER ? (['loom', 'llamacpp'] as const) : (['loom'] as const)) {
      const turns = r.turns.map((t) => t[side]!);
      for (let i = 1; i < turns.length; i++) {
        assert.ok(turns[i]!.promptTokens > turns[i - 1]!.promptTokens, `${side}: prompts grow turn by turn`);
        assert.ok(turns[i]!.cachedTokens >= 0.9 * turns[i]!.promptTokens, `${side} turn ${i + 1}: ${turns[i]!.cachedTokens} of ${turns[i]!.promptTokens} cached`);
      }
      assert.ok(turns[0]!.cachedTokens < turns[0]!.promptTokens / 2, `${side}: the first turn is computed`);
      for (const t of turns) assert.ok(t.ttftMs > 0);
    }
    if (!LLAMA_SERVER) assert.ok(r.turns.every((t) => t.llamacpp === undefined));
    const table = formatAgentTurnsReport(r);
    assert.match(table, LLAMA_SERVER ? /through \/v1\/messages on both sides/ : /through \/v1\/messages \(loom only/);
    assert.equal(table.split('\n').filter((l) => /^\| (\d+|all) \|/.test(l)).length, 5);
  });
});
