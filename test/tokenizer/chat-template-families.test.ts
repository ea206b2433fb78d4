// The chat templates of Llama 3.1/3.2, Phi-3.5-mini, Phi-4-mini and SmolLM3 as the models
// publish them (test/fixtures/templates/: llama.cpp's models/templates copies, and Phi-4-mini's
// tokenizer_config.json chat_template) render through @huggingface/jinja to the strings their
// template text prescribes, written out by hand here.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { renderChat } from '../../src/tokenizer/chat-template.js';
import { PROJECT_ROOT } from '../fixtures/index.js';

const template = (name: string): string => readFileSync(join(PROJECT_ROOT, 'test', 'fixtures', 'templates', `${name}.jinja`), 'utf8');

const conversation = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'Hi there' },
  { role: 'assistant', content: 'Hello.' },
  { role: 'user', content: 'What is 2+2?' },
];

const LLAMA3_TURNS =
  '<|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>' +
  '<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>' +
  '<|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>' +
  '<|start_header_id|>assistant<|end_header_id|>\n\n';

describe('chat templates of the Llama 3, Phi and SmolLM3 families', () => {
  it('Llama 3.1: BOS, a system header with the knowledge and default dates, header-framed turns', () => {
    assert.equal(
      renderChat(template('meta-llama-Llama-3.1-8B-Instruct'), conversation, { bosToken: '<|begin_of_text|>' }),
      '<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n' +
        'You are terse.<|eot_id|>' +
        LLAMA3_TURNS,
    );
  });

  it('Llama 3.2: the same frame, today date from date_string; an empty system block without a system message', () => {
    const t = template('meta-llama-Llama-3.2-3B-Instruct');
    const extra = { date_string: '01 Jan 2025' };
    assert.equal(
      renderChat(t, conversation, { bosToken: '<|begin_of_text|>', extra }),
      '<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 01 Jan 2025\n\n' +
        'You are terse.<|eot_id|>' +
        LLAMA3_TURNS,
    );
    assert.equal(
      renderChat(t, [{ role: 'user', content: '  hi  ' }], { bosToken: '<|begin_of_text|>', extra, addGenerationPrompt: false }),
      '<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 01 Jan 2025\n\n<|eot_id|>' +
        '<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>',
    );
  });

  it('Phi-3.5-mini: <|role|> and newline, <|end|> and newline; EOS closes a conversation without a generation prompt', () => {
    const t = template('microsoft-Phi-3.5-mini-instruct');
    assert.equal(
      renderChat(t, conversation, { eosToken: '<|endoftext|>' }),
      '<|system|>\nYou are terse.<|end|>\n<|user|>\nHi there<|end|>\n<|assistant|>\nHello.<|end|>\n<|user|>\nWhat is 2+2?<|end|>\n<|assistant|>\n',
    );
    assert.equal(
      renderChat(t, [{ role: 'system', content: '' }, { role: 'user', content: 'x' }], { eosToken: '<|endoftext|>', addGenerationPrompt: false }),
      '<|user|>\nx<|end|>\n<|endoftext|>',
    );
  });

  it('Phi-4-mini: <|role|>content<|end|> with no newlines', () => {
    assert.equal(
      renderChat(template('microsoft-Phi-4-mini-instruct'), conversation, { eosToken: '<|endoftext|>' }),
      '<|system|>You are terse.<|end|><|user|>Hi there<|end|><|assistant|>Hello.<|end|><|user|>What is 2+2?<|end|><|assistant|>',
    );
  });

  it('SmolLM3: a metadata system block; /no_think in the system message switches reasoning off', () => {
    const t = template('HuggingFaceTB-SmolLM3-3B');
    const header = (mode: string, instructions: string): string =>
      `<|im_start|>system\n## Metadata\n\nKnowledge Cutoff Date: June 2025\nReasoning Mode: ${mode}\n\n## Custom Instructions\n\n${instructions}\n\n<|im_end|>\n`;
    assert.equal(
      renderChat(t, conversation),
      header('/think', 'You are terse.') +
        '<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n',
    );
    assert.equal(
      renderChat(t, [{ role: 'system', content: 'Be brief. /no_think' }, { role: 'user', content: 'Hi' }]),
      header('/no_think', 'Be brief.') + '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n',
    );
  });
});
