// Chat templates: the fixture templates and real-world ones (ChatML, Llama 2 [INST],
// Llama 3) rendered against expected strings written by hand; failures are clear.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ChatTemplateError, loadChatTemplate, renderChat, requireChatTemplate } from '../../src/tokenizer/chat-template.js';
import { InvalidArgumentError } from '../../src/errors.js';
import { tokenizerFromGGUF } from '../../src/tokenizer/gguf-tokenizer.js';
import { bpeFixtureVocab, fixtureGGUFMetadata, fixtureTemplates, spmFixtureVocab } from '../fixtures/vocab.js';

// Llama 2 chat's template as published in its tokenizer_config.json
const LLAMA2 =
  "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}" +
  "{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}" +
  "{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}" +
  "{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}";

const CHATML =
  "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

const LLAMA3 =
  "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}";

const conversation = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'Hi there' },
  { role: 'assistant', content: 'Hello.' },
  { role: 'user', content: 'What is 2+2?' },
];

describe('renderChat with real-world templates', () => {
  it('ChatML', () => {
    assert.equal(
      renderChat(CHATML, conversation, { addGenerationPrompt: true }),
      '<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n',
    );
    assert.equal(renderChat(CHATML, [{ role: 'user', content: 'x' }], { addGenerationPrompt: false }), '<|im_start|>user\nx<|im_end|>\n');
  });

  it('Llama 2 [INST] with a system prompt', () => {
    assert.equal(
      renderChat(LLAMA2, conversation, { bosToken: '<s>', eosToken: '</s>' }),
      '<s>[INST] <<SYS>>\nYou are terse.\n<</SYS>>\n\nHi there [/INST] Hello. </s><s>[INST] What is 2+2? [/INST]',
    );
  });

  it('Llama 3', () => {
    assert.equal(
      renderChat(LLAMA3, conversation.slice(1, 2), { bosToken: '<|begin_of_text|>' }),
      '<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n',
    );
  });

  it('raise_exception in a template becomes a ChatTemplateError with its message', () => {
    const bad = [
      { role: 'user', content: 'a' },
      { role: 'user', content: 'b' },
    ];
    assert.throws(() => renderChat(LLAMA2, bad), (e: unknown) => e instanceof ChatTemplateError && e.message.includes('Conversation roles must alternate'));
  });

  it('a template that does not parse is a ChatTemplateError', () => {
    assert.throws(() => renderChat('{% for m in messages %}', conversation), ChatTemplateError);
  });
});

describe('renderChat with the fixture tokenizers', () => {
  it("the SPM fixture's Llama 2 template, with the tokenizer's BOS/EOS", () => {
    const tok = tokenizerFromGGUF('spm.gguf', fixtureGGUFMetadata(spmFixtureVocab(), 'spm'));
    assert.equal(tok.chatTemplate, fixtureTemplates.llama2);
    assert.equal(renderChat(tok, conversation), '<s>[INST] <<SYS>>\nYou are terse.\n<</SYS>>\n\nHi there [/INST] Hello. </s><s>[INST] What is 2+2? [/INST]');
    // the rendered BOS text encodes to the BOS id
    const ids = tok.encode(renderChat(tok, [{ role: 'user', content: 'hi' }]), { addSpecial: false });
    assert.equal(ids[0], tok.bosId);
  });

  it("the BPE fixture's ChatML template; special tokens encode to their ids", () => {
    const tok = tokenizerFromGGUF('bpe.gguf', fixtureGGUFMetadata(bpeFixtureVocab(), 'qwen2'));
    const text = renderChat(tok, [{ role: 'user', content: 'hi' }]);
    assert.equal(text, '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n');
    const ids = tok.encode(text, { addSpecial: false });
    const imStart = bpeFixtureVocab().tokens.indexOf('<|im_start|>');
    assert.equal(ids.filter((id) => id === imStart).length, 2);
  });

  it('a model without a template fails clearly', () => {
    const md = fixtureGGUFMetadata(bpeFixtureVocab(), 'gpt2');
    md.delete('tokenizer.chat_template');
    const tok = tokenizerFromGGUF('plain.gguf', md);
    assert.throws(() => renderChat(tok, conversation), (e: unknown) => e instanceof ChatTemplateError && /has no chat template/.test(e.message));
    assert.throws(() => requireChatTemplate(tok, 'plain.gguf'), /plain\.gguf has no chat template/);
  });
});

describe('--chat-template FILE_OR_STRING', () => {
  it('reads a file, takes a template string, refuses anything else clearly', () => {
    const dir = mkdtempSync(join(tmpdir(), 'loom-template-'));
    try {
      const file = join(dir, 'chatml.jinja');
      writeFileSync(file, CHATML);
      assert.equal(loadChatTemplate(file), CHATML);
      assert.equal(loadChatTemplate(CHATML), CHATML);
      assert.throws(() => loadChatTemplate(join(dir, 'missing.jinja')), (e: Error) => e instanceof InvalidArgumentError && /neither a file nor a Jinja template/.test(e.message));
      assert.throws(() => loadChatTemplate('{% for m in messages %}'), (e: Error) => e instanceof InvalidArgumentError && /--chat-template/.test(e.message));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('renders tool calls and tool results with the messages, tools as a variable', () => {
    const t = '{% for t in tools %}[{{ t.function.name }}]{% endfor %}{% for m in messages %}{{ m.role }}:{{ m.content }}{% for c in m.tool_calls or [] %}<{{ c.function.name }} {{ c.function.arguments | tojson }}>{% endfor %}{% if m.tool_call_id %}#{{ m.tool_call_id }}{% endif %};{% endfor %}';
    const out = renderChat(t, [
      { role: 'assistant', content: '', tool_calls: [{ type: 'function', function: { name: 'f', arguments: { x: 1 } } }] },
      { role: 'tool', content: '2', tool_call_id: 'call_a' },
    ], { extra: { tools: [{ type: 'function', function: { name: 'f' } }] } });
    assert.equal(out, '[f]assistant:<f {"x": 1}>;tool:2#call_a;');
  });
});
