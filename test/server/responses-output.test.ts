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
      out.items.map((i) => [i.type, i.status]),
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
});
