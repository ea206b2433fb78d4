// Reasoning and tool-call parsers on text, against the formats of the models' own chat
// templates and vLLM's parsers (vllm/reasoning/qwen3_reasoning_parser.py,
// deepseek_r1_reasoning_parser.py; vllm/tool_parsers/hermes_tool_parser.py,
// llama_tool_parser.py, mistral_tool_parser.py, phi4mini_tool_parser.py). Streaming is
// checked by cutting the text at every position: the deltas must join to the whole result.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ChatOutput } from '../src/server/chat-output.js';
import type { ChatOutputConfig } from '../src/server/chat-output.js';
import { splitReasoning } from '../src/server/reasoning/parser.js';
import { toolCallParser, toolCallParserForTemplate } from '../src/server/tools/parsers.js';

/** the output streamed in two pieces cut at `at`, deltas joined */
function streamed(config: ChatOutputConfig, text: string, cuts: number[]) {
  const out = new ChatOutput(config);
  let reasoning = '';
  let content = '';
  let last = 0;
  for (const at of [...cuts, text.length]) {
    const d = out.push(text.slice(last, at));
    reasoning += d.reasoning;
    content += d.content;
    last = at;
  }
  const end = out.finish();
  return { reasoning: reasoning + end.reasoning, content: content + end.content, calls: end.toolCalls.map((c) => c.function) };
}

function everySplit(config: ChatOutputConfig, text: string, expected: { reasoning: string; content: string; calls: { name: string; arguments: string }[] }) {
  for (let a = 0; a <= text.length; a++) {
    assert.deepEqual(streamed(config, text, [a]), expected, `cut at ${a}`);
  }
  // one character at a time: no tag is ever seen whole in one delta
  assert.deepEqual(streamed(config, text, Array.from({ length: text.length }, (_, i) => i)), expected, 'char by char');
}

describe('reasoning parsers', () => {
  it('qwen3: before </think> is reasoning (with or without the model writing <think>), after is content', () => {
    assert.deepEqual(splitReasoning('qwen3', undefined, '<think>\nLet me add.\n</think>\n\n4'), { reasoning: '\nLet me add.\n', content: '\n\n4' });
    assert.deepEqual(splitReasoning('qwen3', undefined, 'Let me add.</think>4'), { reasoning: 'Let me add.', content: '4' });
    // no </think>: cut short while thinking
    assert.deepEqual(splitReasoning('qwen3', undefined, '<think>hmm'), { reasoning: 'hmm', content: '' });
    // enable_thinking: false — the template closed the thought in the prompt
    assert.deepEqual(splitReasoning('qwen3', { enable_thinking: false }, 'Just 4.'), { reasoning: '', content: 'Just 4.' });
    assert.deepEqual(splitReasoning('deepseek_r1', undefined, 'step 1</think>answer'), { reasoning: 'step 1', content: 'answer' });
    assert.deepEqual(splitReasoning('deepseek_r1', undefined, 'still thinking'), { reasoning: 'still thinking', content: '' });
  });

  it('streams split correctly when the tags arrive in pieces', () => {
    everySplit({ reasoningParser: 'qwen3' }, '<think>a<b</think>c</thin', { reasoning: 'a<b', content: 'c</thin', calls: [] });
    everySplit({ reasoningParser: 'deepseek_r1' }, '  <think>x </think', { reasoning: 'x </think', content: '', calls: [] });
    everySplit({ reasoningParser: 'deepseek_r1' }, '<thin', { reasoning: '<thin', content: '', calls: [] });
  });
});

const weather = { name: 'get_weather', arguments: '{"city":"Paris","unit":"c"}' };
const time = { name: 'get_time', arguments: '{}' };

describe('tool-call parsers', () => {
  it('hermes: <tool_call> blocks after optional text', () => {
    const p = toolCallParser('hermes');
    const text = 'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}\n</tool_call>\n<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>';
    assert.deepEqual(p.parse(text), { content: 'Let me check.\n', calls: [weather, time] });
    // an unclosed final call (stopped at the end token) still parses, as in vLLM
    assert.deepEqual(p.parse('<tool_call>{"name": "get_time", "arguments": {}}'), { content: '', calls: [time] });
    // broken JSON: all of it is content
    assert.deepEqual(p.parse('<tool_call>{"name": "get_time", </tool_call>'), { content: '<tool_call>{"name": "get_time", </tool_call>', calls: [] });
    assert.deepEqual(p.parse('no calls'), { content: 'no calls', calls: [] });
  });

  it('llama3_json: a JSON call (or several joined by ;), with or without <|python_tag|>', () => {
    const p = toolCallParser('llama3_json');
    assert.deepEqual(p.parse('{"name": "get_weather", "parameters": {"city": "Paris", "unit": "c"}}'), { content: '', calls: [weather] });
    assert.deepEqual(p.parse('<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris", "unit": "c"}}; {"name": "get_time", "parameters": {}}'), {
      content: '',
      calls: [weather, time],
    });
    assert.deepEqual(p.parse('The answer is {"a": 1}'), { content: 'The answer is {"a": 1}', calls: [] });
    assert.deepEqual(p.parse('{"a": 1}'), { content: '{"a": 1}', calls: [] });
  });

  it('mistral: [TOOL_CALLS] with a JSON array, or name[ARGS]{…} (tokenizer v11+)', () => {
    const p = toolCallParser('mistral');
    assert.deepEqual(p.parse('[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}, {"name": "get_time", "arguments": {}}]'), { content: '', calls: [weather, time] });
    assert.deepEqual(p.parse('ok [TOOL_CALLS]get_weather[ARGS]{"city": "Paris", "unit": "c"}[TOOL_CALLS]get_time[ARGS]{}'), { content: 'ok ', calls: [weather, time] });
  });

  it('phi4_mini_json: functools[…]', () => {
    const p = toolCallParser('phi4_mini_json');
    assert.deepEqual(p.parse('functools[{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}]'), { content: '', calls: [weather] });
  });

  it('the parser is picked from the chat template', () => {
    assert.equal(toolCallParserForTemplate('{{- "<tool_call>\\n" }}')?.name, 'hermes');
    assert.equal(toolCallParserForTemplate('{{ "[TOOL_CALLS]" }}')?.name, 'mistral');
    assert.equal(toolCallParserForTemplate('{{- "<|python_tag|>" + tool_call.name }}')?.name, 'llama3_json');
    assert.equal(toolCallParserForTemplate('{{ m.role }}'), undefined);
  });

  it('streams hold the calls back from their marker, whatever the cut', () => {
    const hermes = toolCallParser('hermes');
    everySplit({ toolParser: hermes }, 'Sure.<tool_call>{"name": "get_time", "arguments": {}}</tool_call>', { reasoning: '', content: 'Sure.', calls: [time] });
    everySplit({ toolParser: hermes }, 'a <tool_ca', { reasoning: '', content: 'a <tool_ca', calls: [] });
    everySplit({ toolParser: toolCallParser('llama3_json') }, ' {"name": "get_time", "parameters": {}}', { reasoning: '', content: '', calls: [time] });
    everySplit({ toolParser: toolCallParser('llama3_json') }, ' Hi {"x": 1}', { reasoning: '', content: ' Hi {"x": 1}', calls: [] });
    // reasoning first, then a call in the content
    everySplit({ reasoningParser: 'qwen3', toolParser: hermes }, 'need time</think>\n<tool_call>{"name": "get_time", "arguments": {}}</tool_call>', {
      reasoning: 'need time',
      content: '\n',
      calls: [time],
    });
  });

  it('parallel_tool_calls false keeps the first call; ids are call_…', () => {
    const out = new ChatOutput({ toolParser: toolCallParser('hermes'), parallelToolCalls: false });
    out.push('<tool_call>{"name": "get_time", "arguments": {}}</tool_call><tool_call>{"name": "get_time", "arguments": {}}</tool_call>');
    const end = out.finish();
    assert.equal(end.toolCalls.length, 1);
    assert.match(end.toolCalls[0]!.id, /^call_[A-Za-z0-9]{24}$/);
  });
});
