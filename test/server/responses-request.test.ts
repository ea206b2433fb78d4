import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { inputItems, itemsToMessages } from '../../src/server/responses-request.js';
import { functionTools } from '../../src/server/responses-tools.js';
import { HttpError } from '../../src/server/errors.js';
import { SUMMARY_LEAD, compactionContent } from '../../src/server/responses-compaction.js';
import { responsesTools } from '../../src/server/responses-tools.js';

describe('Responses input items as chat messages', () => {
  it('a string is one user message; instructions and leading system/developer text are one system message', () => {
    assert.deepEqual(itemsToMessages(null, inputItems('Hi')), [{ role: 'user', content: 'Hi' }]);
    const items = [
      { role: 'developer', content: [{ type: 'input_text', text: 'A' }] },
      { type: 'message', role: 'system', content: 'B' },
      { role: 'user', content: 'Hi' },
    ];
    assert.deepEqual(itemsToMessages('I', items), [
      { role: 'system', content: 'I\n\nA\n\nB' },
      { role: 'user', content: 'Hi' },
    ]);
    assert.deepEqual(itemsToMessages('I', []), [{ role: 'system', content: 'I' }]);
  });

  it('an assistant text and the calls after it are one turn (arguments as objects, keys sorted); outputs are tool messages; late system text stays put; reasoning is not rendered', () => {
    const m = itemsToMessages(null, [
      { role: 'user', content: 'Go' },
      { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: null },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Sure.' }] },
      { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{"b":1,"a":2}' },
      { type: 'function_call', call_id: 'c2', name: 'g', arguments: '{}' },
      { type: 'function_call_output', call_id: 'c1', output: 'one' },
      { type: 'function_call_output', call_id: 'c2', output: [{ type: 'input_text', text: 'two' }] },
      { role: 'developer', content: 'Late' },
      { type: 'function_call', call_id: 'c3', name: 'f', arguments: '{}' },
    ]);
    assert.deepEqual(m, [
      { role: 'user', content: 'Go' },
      {
        role: 'assistant',
        content: 'Sure.',
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'f', arguments: { a: 2, b: 1 } } },
          { id: 'c2', type: 'function', function: { name: 'g', arguments: {} } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'one' },
      { role: 'tool', tool_call_id: 'c2', content: 'two' },
      { role: 'system', content: 'Late' },
      { role: 'assistant', content: '', tool_calls: [{ id: 'c3', type: 'function', function: { name: 'f', arguments: {} } }] },
    ]);
    assert.deepEqual(Object.keys(m[1]!.tool_calls![0]!.function.arguments as object), ['a', 'b']);
  });

  it('refuses what it cannot render, naming input', () => {
    const bad = [[{ role: 'critic', content: 'x' }], [{ type: 'function_call', call_id: 'c', name: 'f', arguments: '{' }], [{ type: 'item_reference', id: 'x' }], [{ role: 'user', content: [{ type: 'input_image' }] }]];
    for (const items of bad) assert.throws(() => itemsToMessages(null, items), (e: unknown) => e instanceof HttpError && e.status === 400 && e.param === 'input');
  });

  it('function tools in chat\'s shape; hosted tool kinds and namespaces are left out', () => {
    const tools = functionTools([
      { type: 'function', name: 'f', description: 'd', parameters: { type: 'object' }, strict: false },
      { type: 'web_search' },
      { type: 'namespace', name: 'ns' },
    ]);
    assert.deepEqual(tools, [{ type: 'function', function: { name: 'f', description: 'd', parameters: { type: 'object' }, strict: false } }]);
  });

  it('custom tools: a function of one string argument (a regex format its anchored pattern); their calls and outputs render as function calls and tool turns', () => {
    const { chat, custom } = responsesTools([{ type: 'custom', name: 'p', description: 'd' }, { type: 'custom', name: 'r', format: { type: 'grammar', syntax: 'regex', definition: 'a|b' } }, { type: 'function', name: 'f' }]);
    assert.deepEqual([...custom], ['p', 'r']);
    assert.deepEqual(chat!.map((t) => t.function.name), ['p', 'r', 'f']);
    assert.deepEqual((chat![1]!.function.parameters as { properties: { input: { pattern: string } } }).properties.input.pattern, '^(?:a|b)$');
    assert.throws(() => responsesTools([{ type: 'custom', name: 'l', format: { type: 'grammar', syntax: 'lark', definition: 'start: "a"' } }]), (e: unknown) => e instanceof HttpError && e.status === 400 && /"lark" is not supported/.test(e.message));
    assert.deepEqual(itemsToMessages(null, [{ type: 'custom_tool_call', call_id: 'c', name: 'p', input: 'x' }, { type: 'custom_tool_call_output', call_id: 'c', output: 'ok' }]), [
      { role: 'assistant', content: '', tool_calls: [{ id: 'c', type: 'function', function: { name: 'p', arguments: { input: 'x' } } }] },
      { role: 'tool', tool_call_id: 'c', content: 'ok' },
    ]);
  });

  it('a namespace\'s function and custom tools are offered under their own names, the namespace remembered; a name taken already leaves the namespaced one out', () => {
    const t = responsesTools([
      { type: 'function', name: 'f' },
      { type: 'namespace', name: 'agents', description: 'd', tools: [{ type: 'function', name: 'spawn', parameters: { type: 'object' } }, { type: 'custom', name: 'note' }, { type: 'function', name: 'f' }] },
      { type: 'web_search' },
    ]);
    assert.deepEqual(t.chat!.map((c) => c.function.name), ['f', 'spawn', 'note']);
    assert.deepEqual([...t.namespaces], [['spawn', 'agents'], ['note', 'agents']]);
    assert.deepEqual([...t.custom], ['note']);
  });

  it('a compaction item renders as a user turn with its summary; another server\'s is refused', () => {
    assert.deepEqual(itemsToMessages(null, [{ type: 'compaction', encrypted_content: compactionContent('S ü') }]), [{ role: 'user', content: `${SUMMARY_LEAD}S ü` }]);
    assert.throws(() => itemsToMessages(null, [{ type: 'compaction', encrypted_content: 'gAAAA' }]), (e: unknown) => e instanceof HttpError && e.param === 'input');
  });
});
