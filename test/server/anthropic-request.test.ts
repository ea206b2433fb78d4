// Anthropic's conversation as the chat messages the template gets.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { anthropicMessages } from '../../src/server/anthropic-request.js';

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

  it('an image or a document block is a clear 400', () => {
    for (const type of ['image', 'document']) {
      assert.throws(() => anthropicMessages({ messages: [{ role: 'user', content: [{ type }] }] }), (e: Error & { status?: number }) => e.status === 400 && new RegExp(`${type} blocks are not supported`).test(e.message));
    }
  });
});
