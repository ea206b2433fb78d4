// `loom bench chat-turns` on a tiny hybrid fixture: every turn after the first hits the prefix
// cache at the previous turn's last full block (a state checkpoint), the cache-off engine never
// does, and the report carries one row per turn. Times are not asserted.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatChatTurnsReport, runChatTurnsBench } from '../../src/bench/chat-turns.js';
import { ggufFixturePath } from '../fixtures/index.js';
import { GGUF_FIXTURES } from '../fixtures/recipe.js';

describe('bench chat-turns', () => {
  it('each turn after the first restores the state where the last one\'s full blocks end', () => {
    const model = ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === 'qwen35-q8_0')!);
    // 20 + 3·(13 + 6): prompts and replies that end mid-block
    const r = runChatTurnsBench({ model, turns: 3, systemLen: 20, userLen: 13, replyLen: 6, kvCacheMemory: '16MiB', maxNumSeqs: 2, seed: 1 });
    assert.equal(r.turns.length, 3);
    assert.deepEqual(r.turns.map((t) => t.promptTokens), [33, 52, 71]);
    // turn 1 computed 33 + 5 = 38 tokens: its last full block ends at 32; turn 2 computed 57: 48
    assert.deepEqual(r.turns.map((t) => t.on.cachedTokens), [0, 32, 48]);
    assert.match(formatChatTurnsReport(r), /\| 3 \| 71 \| 48 \| \d+ \| \d+ \|/);
  });
});
