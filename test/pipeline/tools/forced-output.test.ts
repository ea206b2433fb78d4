// The forced and generic tool outputs read as they stream (tools/forced-output.ts): the
// generic {"response": text} reply's text goes out as the string grows, decoded, whatever
// the cuts (an escape or a surrogate pair split between pieces is held until whole); a call
// opens with its id and name, then argument fragments, as vLLM streams them.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ChatOutput } from '../../../src/pipeline/chat-output.js';
import { ForcedCallOutput } from '../../../src/pipeline/tools/forced-output.js';

/** the output fed in pieces cut at `cuts`: the content deltas, and the end */
function feed(text: string, cuts: number[]) {
  const out = new ForcedCallOutput({ kind: 'generic' });
  const pieces: string[] = [];
  let last = 0;
  for (const at of [...cuts, text.length]) {
    const d = out.push(text.slice(last, at));
    if (d.content) pieces.push(d.content);
    last = at;
  }
  const end = out.finish();
  return { pieces, content: pieces.join('') + end.content, end };
}

describe('the generic reply, streamed', () => {
  const reply = 'Tu es \\"là\\"\\n — \\u00e9t\\u00e9 \\ud83d\\ude00 \\\\ ok';
  const text = `{"response": "${reply}"}`;
  const whole = (JSON.parse(text) as { response: string }).response;

  it('the text goes out as it is written and joins to the decoded reply, cut anywhere', () => {
    for (let a = 0; a <= text.length; a++) {
      const r = feed(text, [a]);
      assert.equal(r.content, whole, `cut at ${a}`);
      assert.equal(r.end.toolCalls.length, 0);
    }
    const byChar = feed(text, Array.from({ length: text.length }, (_, i) => i));
    assert.equal(byChar.content, whole);
    assert.ok(byChar.pieces.length > 10, `${byChar.pieces.length} pieces`);
    // never a lone half of the surrogate pair, never a raw escape
    for (const p of byChar.pieces) assert.ok(!/\\/.test(p) || p === '\\', JSON.stringify(p));
    assert.ok(!byChar.pieces.some((p) => /[\ud800-\udbff]$/.test(p)), 'a high surrogate went out alone');
  });

  it('a reply cut by max_tokens keeps what was written; whitespace in the grammar’s JSON is allowed', () => {
    const cut = feed('{ "response" :  "Bonjour \\u00e', [3, 20, 28]);
    assert.equal(cut.content, 'Bonjour ');
    assert.equal(cut.end.complete, false);
  });

  it('calls: the first delta has the id and name (arguments ""), later ones only argument fragments', () => {
    const out = new ChatOutput({ forcedTools: { kind: 'generic' } });
    const text = '[{"name": "get_weather", "parameters": {"city": "Paris"}}]';
    const deltas = [...text].flatMap((c) => out.push(c).toolCallDeltas);
    const end = out.finish('stop');
    deltas.push(...end.toolCallDeltas);
    assert.deepEqual(deltas[0], { index: 0, id: end.toolCalls[0]!.id, type: 'function', function: { name: 'get_weather', arguments: '' } });
    assert.ok(deltas.length > 2);
    assert.ok(deltas.slice(1).every((d) => d.id === undefined && d.function.name === undefined));
    assert.equal(deltas.map((d) => d.function.arguments).join(''), '{"city": "Paris"}');
    assert.equal(end.finishReason, 'tool_calls');
  });

  it('after a reasoning block: the reasoning, then the forced output (qwen3)', () => {
    const out = new ChatOutput({ reasoningParser: 'qwen3', forcedTools: { kind: 'named', name: 'f' } });
    const text = 'hmm {no JSON here}</think>{"a": 1}';
    let reasoning = '';
    const deltas = [...text].flatMap((c) => {
      const d = out.push(c);
      reasoning += d.reasoning;
      assert.equal(d.content, '');
      return d.toolCallDeltas;
    });
    const end = out.finish('stop');
    assert.equal(reasoning + end.reasoning, 'hmm {no JSON here}');
    assert.equal([...deltas, ...end.toolCallDeltas].map((d) => d.function.arguments).join(''), '{"a": 1}');
    assert.deepEqual(end.toolCalls.map((c) => c.function), [{ name: 'f', arguments: '{"a": 1}' }]);
  });
});
