// Anthropic's conversation as the chat messages the template gets.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { anthropicMessages, checkVersionFields, errorMarked } from '../../src/server/anthropic-request.js';
import { HttpError } from '../../src/server/errors.js';
import { anthropicUsage } from '../../src/server/routes/messages.js';

describe('anthropicMessages', () => {
  it('system blocks (billing line out, tokens-left count last), tool_use as tool_calls, tool_result as tool turns, thinking dropped, late system turns in place', () => {
    const messages = anthropicMessages({
      system: [
        { type: 'text', text: '<total_tokens>1000 tokens left</total_tokens>' },
        { type: 'text', text: 'x-anthropic-billing-header: cc_version=2.1.197.8a5; cc_entrypoint=sdk-cli;' },
        { type: 'text', text: 'You are an agent.' },
      ],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] },
        { role: 'system', content: 'Late text.' },
        { role: 'assistant', content: [{ type: 'thinking', thinking: 'hmm' }, { type: 'text', text: 'Listing.' }, { type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { description: 'd', command: 'ls' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'a.txt' }] }, { type: 'text', text: 'Next?' }] },
      ],
    });
    assert.deepEqual(JSON.parse(JSON.stringify(messages)), [
      { role: 'system', content: 'You are an agent.' },
      { role: 'user', content: 'ab' },
      { role: 'system', content: 'Late text.' },
      { role: 'assistant', content: 'Listing.', tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'Bash', arguments: { command: 'ls', description: 'd' } } }] },
      { role: 'tool', content: 'a.txt', tool_call_id: 'toolu_1' },
      { role: 'user', content: 'Next?' },
      { role: 'system', content: '<total_tokens>1000 tokens left</total_tokens>' },
    ]);
    assert.deepEqual(Object.keys(messages[3]!.tool_calls![0]!.function.arguments as object), ['command', 'description']); // sorted
  });

  it('a document block is a clear 400 (image blocks: test/server/image-requests.test.ts)', () => {
    for (const type of ['document']) {
      assert.throws(() => anthropicMessages({ messages: [{ role: 'user', content: [{ type }] }] }), (e: Error & { status?: number }) => e.status === 400 && new RegExp(`${type} blocks are not supported`).test(e.message));
    }
  });

  it('a tool_result with is_error: its text prefixed "Error: " unless it already says so', () => {
    const messages = anthropicMessages({
      messages: [
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'Bash', input: {} }, { type: 'tool_use', id: 't2', name: 'Bash', input: {} }, { type: 'tool_use', id: 't3', name: 'Bash', input: {} }] },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 't1', content: 'Exit code 1', is_error: true },
            { type: 'tool_result', tool_use_id: 't2', content: [{ type: 'text', text: '<tool_use_error>File does not exist.</tool_use_error>' }], is_error: true },
            { type: 'tool_result', tool_use_id: 't3', content: 'ok', is_error: false },
          ],
        },
      ],
    });
    assert.deepEqual(messages.filter((m) => m.role === 'tool').map((m) => m.content), ['Error: Exit code 1', '<tool_use_error>File does not exist.</tool_use_error>', 'ok']);
    assert.equal(errorMarked('error: no such file', true), 'error: no such file');
    assert.equal(errorMarked('Errors: 0', true), 'Error: Errors: 0');
  });

  it('versions: 2026-10-21 and later dates have no temperature/top_p/top_k; 2023-06-01, no header or a non-date read them', () => {
    const body = (extra: object) => ({ model: 'm', max_tokens: 1, messages: [], ...extra });
    for (const field of ['temperature', 'top_p', 'top_k'] as const) {
      for (const version of ['2026-10-21', '2027-01-01']) {
        assert.throws(() => checkVersionFields(body({ [field]: 0 }), version), (e: unknown) => e instanceof HttpError && e.status === 400 && e.param === field && e.message.startsWith(`${field}: `) && e.message.includes(version));
      }
      for (const version of ['2023-06-01', undefined, 'latest']) assert.doesNotThrow(() => checkVersionFields(body({ [field]: 0 }), version));
    }
    assert.doesNotThrow(() => checkVersionFields(body({ metadata: {} }), '2026-10-21'));
  });

  it('usage: read from the cache, creation what the engine newly cached past the hit, input the rest', () => {
    const s = { promptTokens: 100, completionTokens: 3, cachedTokens: 32, newlyCachedTokens: 64, firstScheduledTime: undefined };
    assert.deepEqual(anthropicUsage(s, 100), { input_tokens: 4, cache_creation_input_tokens: 64, cache_read_input_tokens: 32, output_tokens: 3 });
    // prefix caching off: nothing read or written
    assert.deepEqual(anthropicUsage({ ...s, cachedTokens: 0, newlyCachedTokens: 0 }, 100), { input_tokens: 100, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 3 });
    // a prompt of whole blocks sent again: its last block is computed again but was cached before
    assert.deepEqual(anthropicUsage({ ...s, promptTokens: 96, cachedTokens: 80, newlyCachedTokens: 0 }, 96), { input_tokens: 16, cache_creation_input_tokens: 0, cache_read_input_tokens: 80, output_tokens: 3 });
  });
});
