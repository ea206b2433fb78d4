// Gemma 4's own formats, as its real chat template (llama.cpp's
// models/templates/google-gemma-4-31B-it.jinja) writes them and llama.cpp's Gemma 4 handler
// (common/parsers/gemma4.cpp) reads them: the thought channel `<|channel>thought\n…<channel|>`
// is reasoning_content, `<|tool_call>call:name{…}<tool_call|>` are tool_calls, the rest is
// content; whole and streamed (cut at every position). The tool-call text is the template's
// own rendering of an assistant turn's calls, so the parser reads what the template writes.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { ChatOutput } from '../../../src/pipeline/chat-output.js';
import type { ChatOutputConfig } from '../../../src/pipeline/chat-output.js';
import { reasoningParserForTemplate } from '../../../src/pipeline/reasoning/formats.js';
import { splitReasoning } from '../../../src/pipeline/reasoning/parser.js';
import { toolCallParserForTemplate } from '../../../src/pipeline/tools/parsers.js';
import { renderChat } from '../../../src/tokenizer/chat-template.js';
import { GEMMA4_TEMPLATE_FILE } from '../../fixtures/gemma4-vocab.js';

const TEMPLATE = readFileSync(GEMMA4_TEMPLATE_FILE, 'utf8');
const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
const ARGS = { city: 'Paris, "centre"', days: 3, opts: { unit: 'c', alerts: [true, false, 'x'] }, ratio: 0.5 };

/** what the template writes for an assistant turn with these calls and this text, after "<|turn>model\n" */
function modelTurn(calls: { name: string; arguments: object }[], content: string): string {
  const messages = [
    { role: 'user', content: 'Weather?' },
    { role: 'assistant', content, tool_calls: calls.map((c, i) => ({ id: `c${i}`, type: 'function', function: c })) },
  ];
  const text = renderChat(TEMPLATE, messages as never, { addGenerationPrompt: false, bosToken: '<bos>', extra: { tools } });
  return text.slice(text.lastIndexOf('<|turn>model\n') + '<|turn>model\n'.length);
}

function streamed(config: ChatOutputConfig, text: string, cuts: number[]) {
  const out = new ChatOutput(config);
  let [reasoning, content, last] = ['', '', 0];
  for (const at of [...cuts, text.length]) {
    const d = out.push(text.slice(last, at));
    reasoning += d.reasoning;
    content += d.content;
    last = at;
  }
  const end = out.finish('stop');
  return { reasoning: reasoning + end.reasoning, content: content + end.content, calls: end.toolCalls.map((c) => ({ name: c.function.name, arguments: JSON.parse(c.function.arguments) as unknown })), finish: end.finishReason };
}

function everySplit(config: ChatOutputConfig, text: string, expected: ReturnType<typeof streamed>): void {
  for (let a = 0; a <= text.length; a++) assert.deepEqual(streamed(config, text, [a]), expected, `cut at ${a}`);
  assert.deepEqual(streamed(config, text, Array.from({ length: text.length }, (_, i) => i)), expected, 'char by char');
}

describe("Gemma 4's reasoning and tool calls", () => {
  it('the template selects the gemma4 reasoning and tool-call parsers', () => {
    assert.equal(reasoningParserForTemplate(TEMPLATE), 'gemma4');
    assert.equal(toolCallParserForTemplate(TEMPLATE)?.name, 'gemma4');
  });

  it('the thought channel is reasoning; without one the output is content; the prompt closing it makes it content', () => {
    assert.deepEqual(splitReasoning('gemma4', undefined, '<|channel>thought\nThe user asks.<channel|>Sunny.'), { reasoning: 'The user asks.', content: 'Sunny.' });
    assert.deepEqual(splitReasoning('gemma4', undefined, 'Sunny.'), { reasoning: '', content: 'Sunny.' });
    // the model may add an empty thought after its answer (llama.cpp consumes it), or a stray <channel|>
    assert.deepEqual(splitReasoning('gemma4', undefined, '<|channel>thought\nA<channel|>B<|channel>thought\n<channel|>C<channel|>'), { reasoning: 'A', content: 'BC' });
    // thinking off: the generation prompt ends with the empty channel (pipeline: reasoningEnded)
    assert.deepEqual(splitReasoning('gemma4', undefined, 'Sunny.', { reasoningEnded: true }), { reasoning: '', content: 'Sunny.' });
  });

  it("the template's calls, after a thought, parse into tool_calls (whole and streamed)", () => {
    const turn = modelTurn([{ name: 'get_weather', arguments: ARGS }, { name: 'get_time', arguments: {} }], '');
    assert.ok(turn.startsWith('<|tool_call>call:get_weather{city:<|"|>Paris, "centre"<|"|>,days:3,'), turn);
    const text = `<|channel>thought\nNeed the weather.<channel|>${turn}`;
    everySplit({ reasoningParser: 'gemma4', toolParser: toolCallParserForTemplate(TEMPLATE) }, text, {
      reasoning: 'Need the weather.',
      content: '',
      calls: [
        { name: 'get_weather', arguments: ARGS },
        { name: 'get_time', arguments: {} },
      ],
      finish: 'tool_calls',
    });
  });

  it('text before the calls, and the text the template writes after them, is content', () => {
    const turn = modelTurn([{ name: 'get_weather', arguments: { city: 'Oslo' } }], 'Checking.');
    const config = { reasoningParser: 'gemma4' as const, toolParser: toolCallParserForTemplate(TEMPLATE) };
    assert.deepEqual(streamed(config, `Let me look. ${turn}`, []), { reasoning: '', content: 'Let me look. Checking.', calls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }], finish: 'tool_calls' });
    // a call that does not parse stays content, as vLLM's parsers leave it
    const broken = '<|tool_call>call:get_weather{city:<|"|>Oslo}<tool_call|>';
    assert.deepEqual(streamed(config, broken, [5]), { reasoning: '', content: broken, calls: [], finish: 'stop' });
  });
});
