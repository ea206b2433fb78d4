// Gemma 4's real chat template (llama.cpp's models/templates/google-gemma-4-31B-it.jinja, the
// gemma4 fixture's tokenizer.chat_template) through POST /v1/chat/completions on the gemma4
// fixture: the prompt the server runs is the template's rendering (written out here from the
// template's text), split at its turn/channel markers as llama.cpp parses special tokens; the
// completion comes back, and <turn|> (an end-of-generation token of Gemma 4) ends it.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { fixtureBy, MODEL, startTestServer } from '../../fixtures/server.js';
import type { TestServer } from '../../fixtures/server.js';

interface ChatResponse {
  choices: { message: { role: string; content: string | null }; finish_reason: string; token_ids?: number[] }[];
  prompt_token_ids: number[];
  usage: { prompt_tokens: number; completion_tokens: number };
}

describe('Gemma 4 chat template through /v1/chat/completions', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer(fixtureBy((f) => f.name === 'gemma4-q8_0'));
  });
  after(async () => s.close());

  const messages = [
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: 'Once upon a time' },
  ];
  const id = (text: string): number => {
    const ids = s.model.tokenizer.encode(text, { addSpecial: false });
    assert.equal(ids.length, 1, `${text} is one special token`);
    return ids[0]!;
  };
  const text = (t: string): number[] => s.model.tokenizer.encode(t, { addSpecial: false, parseSpecial: false });

  it('renders system + user as the template does, generation prompt with an empty thought channel', async () => {
    const res = await s.post('/v1/chat/completions', { model: MODEL, messages, max_tokens: 6, temperature: 0, ignore_eos: true, return_token_ids: true });
    assert.equal(res.status, 200);
    const body = (await res.json()) as ChatResponse;
    // bos, <|turn>system\n{system}<turn|>\n<|turn>user\n{user}<turn|>\n<|turn>model\n<|channel>thought\n<channel|>
    const [turn, turnEnd, channel, channelEnd] = ['<|turn>', '<turn|>', '<|channel>', '<channel|>'].map(id);
    const expected = [
      2,
      turn!, ...text('system\nYou are terse.'), turnEnd!, ...text('\n'),
      turn!, ...text('user\nOnce upon a time'), turnEnd!, ...text('\n'),
      turn!, ...text('model\n'), channel!, ...text('thought\n'), channelEnd!,
    ];
    assert.deepEqual(body.prompt_token_ids, expected);
    assert.equal(body.usage.prompt_tokens, expected.length);
    const choice = body.choices[0]!;
    assert.equal(choice.finish_reason, 'length');
    assert.equal(body.usage.completion_tokens, 6);
    assert.equal(choice.message.content, s.model.tokenizer.decode(choice.token_ids!));
  });

  it('<turn|> ends the reply', async () => {
    const turnEnd = id('<turn|>');
    const res = await s.post('/v1/chat/completions', { model: MODEL, messages, max_tokens: 6, temperature: 0, logit_bias: { [turnEnd]: 100 } });
    const body = (await res.json()) as ChatResponse;
    assert.equal(body.choices[0]!.finish_reason, 'stop');
    assert.equal(body.usage.completion_tokens, 1);
    assert.equal(body.choices[0]!.message.content, '');
  });
});
