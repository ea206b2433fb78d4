// Reasoning and tool-call parsers on text, against the formats of the models' own chat
// templates and vLLM's parsers (vllm/reasoning/qwen3_reasoning_parser.py,
// deepseek_r1_reasoning_parser.py; vllm/tool_parsers/hermes_tool_parser.py,
// llama_tool_parser.py, mistral_tool_parser.py, phi4mini_tool_parser.py). Streaming is
// checked by cutting the text at every position: the deltas must join to the whole result.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ChatOutput } from '../../../src/pipeline/chat-output.js';
import type { ChatOutputConfig } from '../../../src/pipeline/chat-output.js';
import { splitReasoning } from '../../../src/pipeline/reasoning/parser.js';
import { renderChat } from '../../../src/tokenizer/chat-template.js';
import { toolCallParser, toolCallParserForTemplate } from '../../../src/pipeline/tools/parsers.js';

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
  const end = out.finish("stop");
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

  it('llama3_json: a built-in tool after <|python_tag|> in Python syntax (Llama 3.1: brave_search.call(query=…))', () => {
    const p = toolCallParser('llama3_json');
    assert.deepEqual(p.parse('<|python_tag|>brave_search.call(query="loom \\"llm\\" server")'), {
      content: '',
      calls: [{ name: 'brave_search', arguments: '{"query":"loom \\"llm\\" server"}' }],
    });
    assert.deepEqual(p.parse('<|python_tag|>wolfram_alpha.call(query=\'2+2\')'), { content: '', calls: [{ name: 'wolfram_alpha', arguments: '{"query":"2+2"}' }] });
    // not a call: stays content (e.g. code for the code interpreter)
    assert.deepEqual(p.parse('<|python_tag|>print(1 + 1)'), { content: '<|python_tag|>print(1 + 1)', calls: [] });
    everySplit({ toolParser: p }, '<|python_tag|>brave_search.call(query="x")', { reasoning: '', content: '', calls: [{ name: 'brave_search', arguments: '{"query":"x"}' }] });
  });

  it('pythonic (Llama 3.2, Gemma 3 as vLLM serves it): a Python list of calls with literal keyword arguments', () => {
    const p = toolCallParser('pythonic');
    assert.deepEqual(p.parse('[get_weather(city="Paris", unit=\'c\'), get_time()]'), { content: '', calls: [weather, time] });
    assert.deepEqual(p.parse(' [f(a=1, b=-2.5e1, c=True, d=None, e=[1, (2, 3)], g={"k": False, 1.5: \'\\n\\x41\'},)] '), {
      content: '',
      calls: [{ name: 'f', arguments: '{"a":1,"b":-25,"c":true,"d":null,"e":[1,[2,3]],"g":{"k":false,"1.5":"\\nA"}}' }],
    });
    for (const text of ['[]', '[f(1)]', '[f(a=x)]', '[f(a=1)] and more', 'I would call [f(a=1)]', '[f(a="open)]']) {
      assert.deepEqual(p.parse(text), { content: text, calls: [] }, text);
    }
    everySplit({ toolParser: p }, '[get_weather(city="Paris", unit="c"), get_time()]', { reasoning: '', content: '', calls: [weather, time] });
    everySplit({ toolParser: p }, 'Paris [is] nice', { reasoning: '', content: 'Paris [is] nice', calls: [] });
    everySplit({ toolParser: p }, '[1, 2]', { reasoning: '', content: '[1, 2]', calls: [] });
  });

  it('pythonic reads back what a pythonic template writes for the calls in the history', () => {
    // the call rendering of vLLM's examples/tool_chat_template_gemma3_pythonic.jinja, restated
    const template = [
      '{%- for m in messages %}{% if m.tool_calls %}[{% for c in m.tool_calls %}{{ c.function.name }}(',
      '{%- for k, v in c.function.arguments.items() %}{% if not loop.first %}, {% endif %}{{ k }}={{ v | tojson }}{% endfor %})',
      '{%- if not loop.last %}, {% endif %}{% endfor %}]{% endif %}{% endfor %}',
    ].join('');
    const args = { city: 'Paris "Nord"', days: 3, tags: ['a', 'b'], opts: { metric: true, extra: null } };
    const text = renderChat(template, [{ role: 'assistant', content: '', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: args } }, { id: 'c2', type: 'function', function: { name: 'get_time', arguments: {} } }] }]);
    const parsed = toolCallParser('pythonic').parse(text);
    assert.deepEqual(parsed.calls.map((c) => [c.name, JSON.parse(c.arguments)]), [['get_weather', args], ['get_time', {}]], text);
  });

  it('the parser is picked from the chat template', () => {
    assert.equal(toolCallParserForTemplate('{{- "<tool_call>\\n" }}')?.name, 'hermes');
    assert.equal(toolCallParserForTemplate('{{ "[TOOL_CALLS]" }}')?.name, 'mistral');
    assert.equal(toolCallParserForTemplate('{{- "<|python_tag|>" + tool_call.name }}')?.name, 'llama3_json');
    assert.equal(toolCallParserForTemplate('{{- "Example Format: [func_name1(params_name1=params_value1)]" }}<|python_tag|>')?.name, 'pythonic');
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
    const end = out.finish("stop");
    assert.equal(end.toolCalls.length, 1);
    assert.match(end.toolCalls[0]!.id, /^call_[A-Za-z0-9]{24}$/);
  });
});

describe('forced tool calls (tool_choice required / named) streamed while generated', () => {
  /** the output pushed in pieces cut at `cuts`; tool_calls deltas joined per index as the openai client joins them */
  function joined(config: ChatOutputConfig, text: string, cuts: number[]) {
    const out = new ChatOutput(config);
    const calls: { id: string; name: string; arguments: string }[] = [];
    const take = (ds: { index: number; id?: string; function: { name?: string; arguments: string } }[]) => {
      for (const d of ds) {
        if (d.id) calls[d.index] = { id: d.id, name: d.function.name!, arguments: '' };
        calls[d.index]!.arguments += d.function.arguments;
      }
    };
    let last = 0;
    for (const at of [...cuts, text.length]) {
      take(out.push(text.slice(last, at)).toolCallDeltas);
      last = at;
    }
    const end = out.finish('stop');
    take(end.toolCallDeltas);
    return { calls, end };
  }

  it('"required": every cut streams the same calls as the whole output; each arguments text is its parameters (JSON.parse)', () => {
    const text = '[{"name": "get_weather", "parameters": {"city": "Pa\\"]}ris", "n": [1, {"x": null}]}}, {"name": "get_time", "parameters": {}}]';
    const reference = (JSON.parse(text) as { name: string; parameters: unknown }[]).map((c) => [c.name, c.parameters]);
    const config: ChatOutputConfig = { forcedTools: { kind: 'required' } };
    const cutsList = [...Array.from({ length: text.length + 1 }, (_, a) => [a]), Array.from({ length: text.length }, (_, i) => i)];
    for (const cuts of cutsList) {
      const { calls, end } = joined(config, text, cuts);
      assert.deepEqual(calls.map((c) => [c.name, JSON.parse(c.arguments)]), reference, `cuts ${cuts.length === 1 ? cuts[0] : 'every char'}`);
      assert.deepEqual(end.toolCalls.map((c) => [c.id, c.function.name, c.function.arguments]), calls.map((c) => [c.id, c.name, c.arguments]));
      assert.equal(end.finishReason, 'tool_calls');
      assert.equal(end.content, '');
    }
    // char by char, the arguments go out as they come, not in one piece at the end
    const out = new ChatOutput(config);
    let pieces = 0;
    for (const ch of text) pieces += out.push(ch).toolCallDeltas.length;
    assert.ok(pieces > 20, `${pieces}`);
  });

  it('cut by max_tokens: the open call keeps its cut arguments (finish length); cut before a name, the text is content', () => {
    const { calls, end } = joined({ forcedTools: { kind: 'required' } }, '[{"name": "get_time", "parameters": {"a": 1}}, {"name": "f", "parameters": {"b', [7]);
    assert.deepEqual(calls.map((c) => [c.name, c.arguments]), [['get_time', '{"a": 1}'], ['f', '{"b']]);
    const cut = new ChatOutput({ forcedTools: { kind: 'required' } });
    cut.push('[{"na');
    assert.deepEqual({ ...cut.finish('length'), toolCallDeltas: [] }, { reasoning: '', content: '[{"na', toolCalls: [], toolCallDeltas: [], finishReason: 'length' });
    const named = joined({ forcedTools: { kind: 'named', name: 'f' } }, '{"b": [1', [3]);
    assert.deepEqual([named.calls[0]!.arguments, named.end.finishReason], ['{"b": [1', 'stop']);
  });
});
