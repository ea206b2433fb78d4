// gpt-oss's harmony format: its chat template (llama.cpp's openai-gpt-oss-120b.jinja, which
// gpt-oss-20b ships too) renders through loom's Jinja exactly as Python's jinja2 renders it
// for transformers (goldens: test/fixtures/harmony-template-goldens.py), reasoning_effort
// included; the output's analysis channel comes back as reasoning, the final channel as
// content, a commentary message to functions.NAME as a tool call (vLLM's openai_gptoss
// reasoning parser and openai tool parser), streamed in any pieces or whole; and a chat request
// on such a template keeps the special tokens the parser reads.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import type { EngineClient, EngineInfo } from '../../../src/engine/client.js';
import { loadModel } from '../../../src/model/load.js';
import { ChatOutput } from '../../../src/pipeline/chat-output.js';
import type { ChatOutputConfig } from '../../../src/pipeline/chat-output.js';
import { localContext } from '../../../src/pipeline/context.js';
import type { PipelineContext } from '../../../src/pipeline/context.js';
import { splitReasoning } from '../../../src/pipeline/reasoning/parser.js';
import { reasoningParserForTemplate } from '../../../src/pipeline/reasoning/formats.js';
import { resolveRequest } from '../../../src/pipeline/request.js';
import { toolCallParser, toolCallParserForTemplate } from '../../../src/pipeline/tools/parsers.js';
import { renderChat } from '../../../src/tokenizer/chat-template.js';
import { endOfGeneration } from '../../../src/tokenizer/eog.js';
import { TokenType } from '../../../src/tokenizer/tokenizer.js';
import type { ChatMessage } from '../../../src/tokenizer/chat-template.js';
import { PROJECT_ROOT, ggufFixturePath } from '../../fixtures/index.js';
import { GGUF_FIXTURES } from '../../fixtures/recipe.js';

const dir = join(PROJECT_ROOT, 'test', 'fixtures', 'templates');
const TEMPLATE = readFileSync(join(dir, 'openai-gpt-oss-120b.jinja'), 'utf8');
const RENDERS = JSON.parse(readFileSync(join(dir, 'openai-gpt-oss-renders.json'), 'utf8')) as {
  name: string;
  messages: ChatMessage[];
  extra: Record<string, unknown>;
  add_generation_prompt?: boolean;
  expected: string;
}[];

const undated = (text: string): string => text.replace(/Current date: \d{4}-\d{2}-\d{2}/, 'Current date: YYYY-MM-DD');

describe('gpt-oss chat template', () => {
  for (const c of RENDERS) {
    it(`renders as jinja2 does: ${c.name}`, () => {
      const text = renderChat(TEMPLATE, c.messages, { extra: c.extra, addGenerationPrompt: c.add_generation_prompt ?? true });
      assert.equal(undated(text), c.expected);
    });
  }

  it('implies the harmony parsers (reasoning openai_gptoss, tools openai); other templates do not', () => {
    assert.equal(reasoningParserForTemplate(TEMPLATE), 'openai_gptoss');
    assert.equal(toolCallParserForTemplate(TEMPLATE)?.name, 'openai');
    const hermes = '{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>{% endfor %}<tool_call>';
    assert.equal(reasoningParserForTemplate(hermes), undefined);
    assert.equal(toolCallParserForTemplate(hermes)?.name, 'hermes');
  });
});

/** what gpt-oss writes after the prompt's `<|start|>assistant` */
const ANSWER = '<|channel|>analysis<|message|>User greets. Reply briefly.<|end|><|start|>assistant<|channel|>final<|message|>Hello! How can I help?<|return|>';
const CALL =
  '<|channel|>analysis<|message|>Need the weather tool.<|end|>' +
  '<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris", "unit": "c"}<|call|>';
/** the recipient in the header before the channel, as the template renders past calls */
const CALL_RECIPIENT_FIRST = '<|channel|>analysis<|message|>Two lookups.<|end|><|start|>assistant to=functions.now<|channel|>commentary json<|message|>{}<|call|>';

const HARMONY: ChatOutputConfig = { reasoningParser: 'openai_gptoss', toolParser: toolCallParser('openai') };

/** the output pushed in pieces of `size` characters (every split of the markup comes up) */
function streamed(config: ChatOutputConfig, text: string, size: number) {
  const out = new ChatOutput(config);
  let reasoning = '', content = '';
  for (let i = 0; i < text.length; i += size) {
    const d = out.push(text.slice(i, i + size));
    reasoning += d.reasoning;
    content += d.content;
  }
  const end = out.finish('stop');
  return { reasoning: reasoning + end.reasoning, content: content + end.content, calls: end.toolCalls.map((c) => c.function), finishReason: end.finishReason };
}

describe('harmony output', () => {
  it('analysis is reasoning, final is content, whole and streamed in pieces of any size', () => {
    assert.deepEqual(splitReasoning('openai_gptoss', undefined, ANSWER), { reasoning: 'User greets. Reply briefly.', content: 'Hello! How can I help?' });
    for (const size of [1, 2, 3, 7, 1000]) {
      assert.deepEqual(streamed(HARMONY, ANSWER, size), { reasoning: 'User greets. Reply briefly.', content: 'Hello! How can I help?', calls: [], finishReason: 'stop' }, `pieces of ${size}`);
    }
  });

  it('a commentary message to functions.NAME is a tool call (finish reason tool_calls), whichever side of the channel the recipient is', () => {
    for (const size of [1, 5, 1000]) {
      assert.deepEqual(streamed(HARMONY, CALL, size), {
        reasoning: 'Need the weather tool.',
        content: '',
        calls: [{ name: 'get_weather', arguments: '{"city":"Paris","unit":"c"}' }],
        finishReason: 'tool_calls',
      });
      assert.deepEqual(streamed(HARMONY, CALL_RECIPIENT_FIRST, size).calls, [{ name: 'now', arguments: '{}' }]);
    }
  });

  it('the output cut short (no <|call|> or <|return|>: they are end-of-generation tokens) still parses', () => {
    assert.deepEqual(streamed(HARMONY, CALL.slice(0, -'<|call|>'.length), 4).calls, [{ name: 'get_weather', arguments: '{"city":"Paris","unit":"c"}' }]);
    assert.deepEqual(streamed(HARMONY, ANSWER.slice(0, -'<|return|>'.length), 4).content, 'Hello! How can I help?');
    // stopped inside the reasoning: all of it is reasoning, no content
    assert.deepEqual(streamed(HARMONY, '<|channel|>analysis<|message|>Thinking ab', 3), { reasoning: 'Thinking ab', content: '', calls: [], finishReason: 'stop' });
  });

  it('a commentary preamble (no recipient) is content, as vLLM returns it; text with no header at all is content', () => {
    const preamble = '<|channel|>commentary<|message|>Looking that up.<|end|><|start|>assistant<|channel|>commentary to=functions.now <|constrain|>json<|message|>{}<|call|>';
    assert.deepEqual(streamed(HARMONY, preamble, 3), { reasoning: '', content: 'Looking that up.', calls: [{ name: 'now', arguments: '{}' }], finishReason: 'tool_calls' });
    assert.deepEqual(streamed(HARMONY, 'Plain words.', 2), { reasoning: '', content: 'Plain words.', calls: [], finishReason: 'stop' });
  });

  it('arguments that are not a JSON object leave the text as content', () => {
    const bad = '<|channel|>commentary to=functions.now <|constrain|>json<|message|>not json<|call|>';
    const r = streamed(HARMONY, bad, 5);
    assert.deepEqual(r.calls, []);
    assert.equal(r.content, 'to=functions.now<|message|>not json<|call|>');
  });

  it('the openai tool parser alone (no reasoning parser) reads a call from the raw markup', () => {
    const r = streamed({ toolParser: toolCallParser('openai') }, CALL, 6);
    assert.deepEqual(r.calls, [{ name: 'get_weather', arguments: '{"city":"Paris","unit":"c"}' }]);
    // the markup before the call streams out as content (what a client gets without the reasoning parser)
    assert.ok(r.content.startsWith('<|channel|>analysis<|message|>Need the weather tool.<|end|>') && !r.content.includes('Paris'));
  });
});

describe('a chat request on the harmony template', () => {
  let ctx: PipelineContext;
  before(() => {
    const tokenizer = loadModel(ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === 'gptoss-mxfp4')!)).tokenizer;
    const info: EngineInfo = { numBlocks: 64, blockSize: 16, maxModelLen: 512, vocabSize: tokenizer.vocabSize, maxNumSeqs: 4, logprobsMode: 'raw_logprobs' };
    const base = localContext({ info } as EngineClient, tokenizer, TEMPLATE);
    ctx = { ...base, options: { ...base.options, reasoningParser: reasoningParserForTemplate(TEMPLATE) } };
  });

  it('renders reasoning_effort into the system message and keeps special tokens in the output text for the parser', async () => {
    const r = await resolveRequest(ctx, {
      prompts: [{ messages: [{ role: 'user', content: 'Hi' }], templateVars: { reasoning_effort: 'high' } }],
      promptParam: 'messages',
      addSpecialTokens: false,
      maxTokens: 8,
      maxTokensParam: 'max_tokens',
      defaultMaxTokens: 16,
      sampling: {},
      idPrefix: 'chatcmpl',
      skipSpecialTokens: true,
    });
    assert.match(r.prompts[0]!.text, /\nReasoning: high\n/);
    assert.ok(r.prompts[0]!.text.endsWith('<|start|>user<|message|>Hi<|end|><|start|>assistant'));
    assert.equal(r.skipSpecialTokens, false);
    // a plain completion is left as asked
    const plain = await resolveRequest(ctx, { prompts: ['Hi'], promptParam: 'prompt', addSpecialTokens: false, maxTokens: 8, maxTokensParam: 'max_tokens', defaultMaxTokens: 16, sampling: {}, idPrefix: 'cmpl', skipSpecialTokens: true });
    assert.equal(plain.skipSpecialTokens, true);
  });
});

describe('harmony markup in a GGUF vocabulary', () => {
  it('as llama.cpp: <|channel|>, <|message|>, <|start|>, <|constrain|> and <|end|> are rendered; <|return|> and <|call|> end generation', () => {
    const tokens = ['a', '<|return|>', '<|constrain|>', '<|channel|>', '<|start|>', '<|end|>', '<|message|>', '<|call|>'];
    const { stopIds, types } = endOfGeneration(tokens, tokens.map((t) => (t.startsWith('<|') ? TokenType.CONTROL : TokenType.NORMAL)), [1]);
    assert.deepEqual([...stopIds].sort(), [1, 7]);
    assert.deepEqual(types, [TokenType.NORMAL, TokenType.CONTROL, TokenType.USER_DEFINED, TokenType.USER_DEFINED, TokenType.USER_DEFINED, TokenType.USER_DEFINED, TokenType.USER_DEFINED, TokenType.CONTROL]);
  });
});
