import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ResponseOutput } from '../../src/server/responses-output.js';
import type { StreamEvent } from '../../src/server/responses-output.js';

const none = { reasoning: '', content: '', toolCallDeltas: [] };
const call = { id: 'call_1', type: 'function' as const, function: { name: 'f', arguments: '{"a":1}' } };

describe('Responses output items and their stream events', () => {
  it('reasoning, then text, then a call: items in order, each opened and closed, sequence numbers from 0', () => {
    const events: StreamEvent[] = [];
    const out = new ResponseOutput((e) => events.push(e));
    out.push({ ...none, reasoning: 'hm' });
    out.push({ ...none, reasoning: '…' });
    out.push({ ...none, content: 'Hi' });
    out.finish({ ...none, toolCalls: [call], finishReason: 'tool_calls' }, true);
    assert.deepEqual(
      out.items.map((i) => [i.type, 'status' in i ? i.status : undefined]),
      [['reasoning', 'completed'], ['message', 'completed'], ['function_call', 'completed']],
    );
    assert.deepEqual(events.map((e) => e.sequence_number), events.map((_, i) => i));
    assert.deepEqual(
      events.map((e) => e.type),
      [
        'response.output_item.added', 'response.content_part.added', 'response.reasoning_text.delta', 'response.reasoning_text.delta',
        'response.reasoning_text.done', 'response.content_part.done', 'response.output_item.done',
        'response.output_item.added', 'response.content_part.added', 'response.output_text.delta',
        'response.output_text.done', 'response.content_part.done', 'response.output_item.done',
        'response.output_item.added', 'response.function_call_arguments.delta', 'response.function_call_arguments.done', 'response.output_item.done',
      ],
    );
    const fc = out.items[2]!;
    assert.deepEqual(fc.type === 'function_call' && [fc.call_id, fc.name, fc.arguments], ['call_1', 'f', '{"a":1}']);
  });

  it('streamed call deltas (a forced call) are completed from the whole call; a cut output is incomplete', () => {
    const out = new ResponseOutput();
    out.push({ ...none, toolCallDeltas: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a"' } }] });
    out.finish({ ...none, toolCalls: [call], finishReason: 'length' }, false);
    const fc = out.items[0]!;
    assert.deepEqual(fc.type === 'function_call' && [fc.arguments, fc.status], ['{"a":1}', 'incomplete']);
  });

  it('whitespace before a call is no message; whitespace alone still is one', () => {
    const out = new ResponseOutput();
    out.push({ ...none, content: '\n\n' });
    out.finish({ ...none, toolCalls: [call], finishReason: 'tool_calls' }, true);
    assert.deepEqual(out.items.map((i) => i.type), ['function_call']);
    const alone = new ResponseOutput();
    alone.push({ ...none, content: ' ' });
    alone.finish({ ...none, toolCalls: [], finishReason: 'stop' }, true);
    assert.deepEqual(alone.items.map((i) => i.type === 'message' && i.content[0]!.text), [' ']);
    const text = new ResponseOutput();
    text.push({ ...none, content: '\n' });
    text.push({ ...none, content: 'Hi' });
    text.finish({ ...none, toolCalls: [], finishReason: 'stop' }, true);
    assert.deepEqual(text.items.map((i) => i.type === 'message' && i.content[0]!.text), ['\nHi']);
  });

  it('a call to a custom tool is a custom_tool_call: its input decoded whole at the end (delta, done), no argument deltas', () => {
    const events: StreamEvent[] = [];
    const out = new ResponseOutput((e) => events.push(e), { custom: new Set(['apply_patch']), namespaces: new Map([['apply_patch', 'files']]) });
    const args = JSON.stringify({ input: 'line 1\n"two"' });
    out.push({ ...none, toolCallDeltas: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'apply_patch', arguments: args.slice(0, 5) } }] });
    out.finish({ ...none, toolCalls: [{ id: 'call_1', type: 'function', function: { name: 'apply_patch', arguments: args } }], finishReason: 'tool_calls' }, true);
    assert.deepEqual(out.items, [{ type: 'custom_tool_call', id: out.items[0]!.id, call_id: 'call_1', name: 'apply_patch', input: 'line 1\n"two"', status: 'completed', namespace: 'files' }]);
    assert.deepEqual(events.map((e) => e.type), ['response.output_item.added', 'response.custom_tool_call_input.delta', 'response.custom_tool_call_input.done', 'response.output_item.done']);
  });

  it('logprobs land on the message text they made: held while the text is held, dropped for reasoning', () => {
    const lp = (token: string) => ({ token, logprob: -1, bytes: [...Buffer.from(token)], top_logprobs: [] });
    const out = new ResponseOutput();
    out.push({ ...none, reasoning: 'hm' }, [lp('hm')]);
    out.push(none, [lp('<')]); // held back by the parser
    out.push({ ...none, content: '<b' }, [lp('b')]);
    out.finish({ ...none, toolCalls: [], finishReason: 'stop' }, true);
    const m = out.items[1]!;
    assert.deepEqual(m.type === 'message' && m.content[0]!.logprobs.map((l) => l.token), ['<', 'b']);
  });

  it('a compaction: one compaction item, added and done', () => {
    const events: StreamEvent[] = [];
    const out = new ResponseOutput((e) => events.push(e));
    out.compaction('loom.compaction.v1:eA==');
    assert.deepEqual(out.items.map((i) => i.type === 'compaction' && i.encrypted_content), ['loom.compaction.v1:eA==']);
    assert.deepEqual(events.map((e) => e.type), ['response.output_item.added', 'response.output_item.done']);
  });
});
