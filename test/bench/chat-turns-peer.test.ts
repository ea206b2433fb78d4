// `loom bench chat-turns-peer`: the conversation's prompts, the two request shapes and how each
// side's stream is read, against fake servers (node:http) that answer as loom's /v1/completions
// and llama-server's /completion do; then a real `loom serve` on the hybrid fixture, whose later
// turns come from its prefix cache. With LOOM_TEST_LLAMA_SERVER=<llama-server binary>, the whole
// command end to end. Times are not asserted.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  drawConversation, formatChatTurnsPeerReport, replayConversation, turnPrompt,
} from '../../src/bench/chat-turns-peer.js';
import type { ChatTurnsPeerReport, Conversation } from '../../src/bench/chat-turns-peer.js';
import { conversationLength } from '../../src/bench/chat-turns.js';
import { partialCharacterIds } from '../../src/bench/datasets.js';
import { startLoomServer } from '../../src/bench/loom-server.js';
import { loadModel } from '../../src/model/load.js';
import { ggufFixturePath, PROJECT_ROOT } from '../fixtures/index.js';
import { GGUF_FIXTURES } from '../fixtures/recipe.js';

const CLI = join(PROJECT_ROOT, 'dist', 'src', 'cli.js');
const LLAMA_SERVER = process.env.LOOM_TEST_LLAMA_SERVER;
const QWEN35 = () => ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === 'qwen35-q8_0')!);

interface Seen {
  path: string;
  body: Record<string, unknown>;
}

/** the longest common prefix of two id lists */
function commonPrefix(a: readonly number[], b: readonly number[]): number {
  let n = 0;
  while (n < a.length && n < b.length && a[n] === b[n]) n++;
  return n;
}

/**
 * A server answering /v1/completions as loom does and /completion as llama-server does, streamed;
 * "cached" is the common prefix with the previous prompt on that route, less `lag` tokens.
 */
function fakeServer(seen: Seen[], opts: { lag?: number; tokens?: boolean; holdBack?: boolean; promptCount?: (n: number) => number; status?: number } = {}): Server {
  const last = new Map<string, number[]>();
  return createServer((req: IncomingMessage, res: ServerResponse) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (text += c));
    req.on('end', () => {
      const body = JSON.parse(text) as Record<string, unknown>;
      const path = req.url!;
      seen.push({ path, body });
      if (opts.status !== undefined) {
        res.writeHead(opts.status, { 'content-type': 'application/json' }).end('{"error":"refused"}');
        return;
      }
      const prompt = body.prompt as number[];
      const cached = Math.max(0, commonPrefix(last.get(path) ?? [], prompt) - (opts.lag ?? 0));
      last.set(path, prompt);
      const n = opts.promptCount?.(prompt.length) ?? prompt.length;
      const send = (o: unknown): boolean => res.write(`data: ${JSON.stringify(o)}\n\n`);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const withTokens = opts.tokens ?? true;
      if (path === '/v1/completions') {
        const replyLen = body.max_tokens as number;
        send({ object: 'text_completion', choices: [{ index: 0, text: '', prompt_token_ids: prompt }] });
        for (let i = 0; i < replyLen; i++) if (!(opts.holdBack && i === 1)) send({ object: 'text_completion', choices: [{ index: 0, text: 'x', ...(withTokens && { token_ids: [7 + i] }) }] });
        send({ object: 'text_completion', choices: [], usage: { prompt_tokens: n, completion_tokens: replyLen, total_tokens: n + replyLen, prompt_tokens_details: { cached_tokens: cached } } });
        res.end('data: [DONE]\n\n');
      } else {
        const replyLen = body.n_predict as number;
        send({ index: 0, content: '', tokens: [], stop: false, id_slot: -1, tokens_predicted: 0, tokens_evaluated: n });
        for (let i = 0; i < replyLen; i++) if (withTokens && !(opts.holdBack && i === 1)) send({ index: 0, content: 'x', tokens: [7 + i], stop: false, tokens_predicted: i + 1, tokens_evaluated: n });
        send({ index: 0, content: '', tokens: [], stop: true, tokens_predicted: replyLen, tokens_evaluated: n, tokens_cached: n + replyLen - 1, timings: { cache_n: cached, prompt_n: n - cached, prompt_ms: 12.5 } });
        res.end();
      }
    });
  });
}

async function listen(server: Server): Promise<string> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const addr = server.address();
  return `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
}

const SHAPE = { turns: 3, systemLen: 10, userLen: 5, replyLen: 3, seed: 4 };

describe('bench chat-turns-peer: the conversation', () => {
  it('each turn resends the history (system, earlier users and drawn replies) plus a new user message', () => {
    const ids = [100, 101, 102, 103, 104, 105];
    const c = drawConversation(ids, SHAPE);
    assert.equal(c.system.length, 10);
    assert.deepEqual(c.users.map((u) => u.length), [5, 5, 5]);
    assert.deepEqual(c.replies.map((r) => r.length), [3, 3, 3]);
    for (const id of [...c.system, ...c.users.flat(), ...c.replies.flat()]) assert.ok(ids.includes(id));
    assert.deepEqual(turnPrompt(c, 0), [...c.system, ...c.users[0]!]);
    assert.deepEqual(turnPrompt(c, 2), [...c.system, ...c.users[0]!, ...c.replies[0]!, ...c.users[1]!, ...c.replies[1]!, ...c.users[2]!]);
    assert.deepEqual([0, 1, 2].map((t) => turnPrompt(c, t).length), [15, 23, 31]);
    assert.equal(conversationLength(SHAPE), 10 + 3 * 8);
    assert.deepEqual(drawConversation(ids, SHAPE), c, 'seeded');
    assert.notDeepEqual(drawConversation(ids, { ...SHAPE, seed: 5 }), c);
  });

  it('bans exactly the tokens whose bytes are not whole UTF-8 characters', () => {
    const { tokenizer } = loadModel(QWEN35());
    const banned = new Set(partialCharacterIds(tokenizer));
    assert.ok(banned.size > 0);
    for (let id = 0; id < tokenizer.vocabSize; id++) {
      const bytes = Buffer.from(tokenizer.tokenBytes(id));
      // a lossy decode comes back to the same bytes only when they are valid UTF-8
      const whole = Buffer.from(bytes.toString('utf8'), 'utf8').equals(bytes);
      assert.equal(banned.has(id), !whole, `token ${id} (${bytes.toString('hex')})`);
    }
  });
});

describe('bench chat-turns-peer: against fake servers', () => {
  const seen: Seen[] = [];
  let server: Server;
  let url: string;
  before(async () => {
    server = fakeServer(seen, { lag: 2 });
    url = await listen(server);
  });
  after(() => server.close());

  it('sends the same ids to both, alternating which goes first, and reads each side\'s cached tokens', async () => {
    seen.length = 0;
    const c = drawConversation([5, 6, 7, 8, 9], SHAPE);
    const lines: string[] = [];
    const turns = await replayConversation(c, { loom: url, llamacpp: url }, { replyLen: 3, banned: [1, 2], warmup: [9, 9] }, (l) => lines.push(l));
    assert.deepEqual(seen.map((s) => s.path), ['/v1/completions', '/completion', '/v1/completions', '/completion', '/completion', '/v1/completions', '/v1/completions', '/completion']);
    // the warm-up: one token of other ids
    assert.deepEqual(seen[0]!.body.prompt, [9, 9]);
    assert.equal(seen[0]!.body.max_tokens, 1);
    assert.equal(seen[1]!.body.n_predict, 1);
    const loom = seen.filter((s) => s.path === '/v1/completions').slice(1).map((s) => s.body);
    const llama = seen.filter((s) => s.path === '/completion').slice(1).map((s) => s.body);
    for (const t of [0, 1, 2]) {
      assert.deepEqual(loom[t]!.prompt, turnPrompt(c, t));
      assert.deepEqual(llama[t]!.prompt, turnPrompt(c, t));
      assert.deepEqual(loom[t], {
        prompt: turnPrompt(c, t), max_tokens: 3, temperature: 0, ignore_eos: true, logit_bias: { 1: -100, 2: -100 },
        stream: true, stream_options: { include_usage: true }, return_token_ids: true,
      });
      assert.deepEqual(llama[t], {
        prompt: turnPrompt(c, t), n_predict: 3, temperature: 0, top_k: 1, ignore_eos: true, logit_bias: [[1, -100], [2, -100]],
        cache_prompt: true, stream: true, return_tokens: true,
      });
    }
    assert.deepEqual(turns.map((t) => t.turn), [1, 2, 3]);
    // the fake caches the previous prompt's prefix less 2 tokens: turn 2 shares 15, turn 3 shares 23
    for (const side of ['loom', 'llamacpp'] as const) {
      assert.deepEqual(turns.map((t) => [t[side].promptTokens, t[side].cachedTokens, t[side].reply]), [[15, 0, [7, 8, 9]], [23, 13, [7, 8, 9]], [31, 21, [7, 8, 9]]]);
      for (const t of turns) assert.ok(t[side].ttftMs > 0);
    }
    assert.ok(turns.every((t) => t.llamacpp.serverPromptMs === 12.5 && t.loom.serverPromptMs === undefined));
    assert.equal(lines.length, 6);
    assert.match(lines[1]!, /^turn 1 llamacpp: 15 prompt tokens, 0 cached, TTFT \d+ ms \(its own prompt time 13 ms\)$/);
  });

  it('with own replies, each side\'s history carries the ids it streamed', async () => {
    seen.length = 0;
    const c = drawConversation([5, 6, 7, 8, 9], SHAPE);
    const turns = await replayConversation(c, { loom: url, llamacpp: url }, { replyLen: 3, banned: [], warmup: [9, 9], ownReplies: true });
    const own = [7, 8, 9]; // what the fake generates
    const expected = [
      [...c.system, ...c.users[0]!],
      [...c.system, ...c.users[0]!, ...own, ...c.users[1]!],
      [...c.system, ...c.users[0]!, ...own, ...c.users[1]!, ...own, ...c.users[2]!],
    ];
    for (const path of ['/v1/completions', '/completion']) assert.deepEqual(seen.filter((s) => s.path === path).slice(1).map((s) => s.body.prompt), expected);
    // the fake's cache: the previous prompt, less 2
    assert.deepEqual(turns.map((t) => t.loom.cachedTokens), [0, 13, 21]);
  });

  it('refuses a stream with no token, a prompt miscounted, and an HTTP error', async () => {
    const cases: [Parameters<typeof fakeServer>[1], RegExp][] = [
      [{ tokens: false }, /the stream ended without a token/],
      [{ holdBack: true }, /the stream carried 1 token ids of the 2 the server generated/],
      [{ promptCount: (n) => n + 1 }, /counted 16 prompt tokens in turn 1, not the 15 sent/],
      [{ status: 500 }, /HTTP 500: \{"error":"refused"\}/],
    ];
    const c = drawConversation([5, 6, 7], SHAPE);
    for (const [opts, message] of cases) {
      const bad = fakeServer([], opts);
      const badUrl = await listen(bad);
      try {
        for (const urls of [{ loom: badUrl, llamacpp: url }, { loom: url, llamacpp: badUrl }]) {
          await assert.rejects(replayConversation(c, urls, { replyLen: 2, banned: [], warmup: [1] }), message);
        }
      } finally {
        bad.close();
      }
    }
  });

  it('formats one row per turn, the total, and llama-server\'s own prompt times', async () => {
    const c: Conversation = drawConversation([5, 6, 7], SHAPE);
    const turns = await replayConversation(c, { loom: url, llamacpp: url }, { replyLen: 3, banned: [], warmup: [1] });
    const report: ChatTurnsPeerReport = {
      settings: { model: 'm.gguf', ...SHAPE, threads: 2, context: 50, loomArgs: [], llamaArgs: [] },
      llamaServer: { binary: 'llama-server', args: ['-m', 'm.gguf', '--host', '127.0.0.1', '--port', '4000', '-np', '1', '-t', '2'] },
      loomArgs: ['--threads', '2'], bannedTokens: 0, loadBefore: 1, loadAfter: 2, turns,
    };
    const text = formatChatTurnsPeerReport(report);
    assert.match(text, /llama-server --host 127\.0\.0\.1 -np 1 -t 2$/m);
    assert.match(text, /^\| 2 \| 23 \/ 23 \| 13 \/ 13 \| \d+ \| \d+ \| [\d.]+x \|$/m);
    assert.match(text, /^\| all \| 69 \/ 69 \| 34 \/ 34 \| \d+ \| \d+ \| [\d.]+x \|$/m);
    assert.match(text, /own prompt time per turn \(ms\): 13, 13, 13$/m);
    assert.match(text, /^chat turns against llama-server: m\.gguf, 3 turns, .*\(drawn, the same on both sides;/);
    assert.match(text, /replies were the same ids in 3 of 3 turns$/);
  });
});

describe('bench chat-turns-peer: a real loom serve', () => {
  it('loom serve on the hybrid fixture: later turns start from its prefix cache, the first does not', async () => {
    const model = QWEN35();
    const seen: Seen[] = [];
    const llama = fakeServer(seen);
    const llamaUrl = await listen(llama);
    const loom = await startLoomServer(model, ['--threads', '1', '--max-num-seqs', '1', '--max-model-len', '128'], () => {});
    try {
      const { tokenizer, config } = loadModel(model);
      const ids = Array.from({ length: 200 }, (_, i) => 100 + i);
      const c = drawConversation(ids, { turns: 3, systemLen: 20, userLen: 13, replyLen: 6, seed: 1 });
      const banned = partialCharacterIds(tokenizer, config.vocabSize);
      const turns = await replayConversation(c, { loom: loom.url, llamacpp: llamaUrl }, { replyLen: 6, banned, warmup: [50, 51, 52] });
      assert.deepEqual(turns.map((t) => t.loom.promptTokens), [33, 52, 71]);
      assert.deepEqual(turns.map((t) => t.loom.reply.length), [6, 6, 6]);
      // each later hit is the last full block (16 tokens) of the previous prompt: the drawn reply
      // differs from the one loom generated, so nothing past that prompt is reused
      assert.deepEqual(turns.map((t) => t.loom.cachedTokens), [0, 32, 48]);
      // a new conversation with its own replies resent: the hits are those of the in-process bench
      // (chat-turns.test.ts), the reply's last block never full when the turn ends
      const own = await replayConversation(drawConversation(ids, { turns: 3, systemLen: 20, userLen: 13, replyLen: 6, seed: 2 }), { loom: loom.url, llamacpp: llamaUrl }, { replyLen: 6, banned, warmup: [53, 54, 55], ownReplies: true });
      assert.deepEqual(own.map((t) => [t.loom.promptTokens, t.loom.cachedTokens]), [[33, 0], [52, 32], [71, 48]]);
    } finally {
      await loom.stop();
      llama.close();
    }
  });

  it('the command end to end against llama-server (LOOM_TEST_LLAMA_SERVER)', { skip: LLAMA_SERVER ? false : 'set LOOM_TEST_LLAMA_SERVER to a llama-server binary' }, () => {
    const args = [CLI, 'bench', 'chat-turns-peer', '--model', QWEN35(), '--llama-server', LLAMA_SERVER!, '--threads', '1', '--turns', '4',
      '--system-len', '40', '--user-len', '20', '--reply-len', '6', '--json'];
    const run = spawnSync(process.execPath, args, { encoding: 'utf8', timeout: 300_000 });
    assert.equal(run.status, 0, run.stderr);
    const r = JSON.parse(run.stdout) as ChatTurnsPeerReport & { benchmark: string };
    assert.equal(r.benchmark, 'chat-turns-peer');
    assert.deepEqual(r.turns.map((t) => [t.loom.promptTokens, t.llamacpp.promptTokens]), [[60, 60], [86, 86], [112, 112], [138, 138]]);
    for (const side of ['loom', 'llamacpp'] as const) {
      assert.equal(r.turns[0]![side].cachedTokens, 0);
      // a hit within a block (loom) or a few tokens (llama-server's checkpoint) of the previous prompt's end
      for (const [i, t] of r.turns.entries()) {
        if (i > 0) assert.ok(t[side].cachedTokens >= r.turns[i - 1]!.loom.promptTokens - 16, `${side} turn ${t.turn}: ${t[side].cachedTokens} cached`);
      }
    }
  });
});
