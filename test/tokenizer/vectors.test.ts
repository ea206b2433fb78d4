// Every tokenizer in llama.cpp's own test vectors (models/ggml-vocab-*.gguf with .inp/.out
// beside them, as tests/test-tokenizer-0.cpp reads them: no special tokens added or
// parsed), from the llama.cpp source node-llama-cpp ships (llama/gitRelease.bundle), cloned
// once into a cache folder. A new llama.cpp vocabulary is one line in VECTORS.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { UnsupportedModelError } from '../../src/errors.js';
import { openGGUF } from '../../src/model/gguf.js';
import { renderChat } from '../../src/tokenizer/chat-template.js';
import { tokenizerFromGGUF } from '../../src/tokenizer/gguf-tokenizer.js';
import type { Tokenizer } from '../../src/tokenizer/tokenizer.js';
import { llamaCppFiles, llamaCppSourceMissing } from '../fixtures/llama-cpp-source.js';
import { TOKENIZER_GOLDEN } from '../fixtures/oracle-tokenizers.js';
import type { TokenizerGolden } from '../fixtures/oracle-tokenizers.js';
import { OTHER_VOCABS as OTHERS, VECTOR_VOCABS as VECTORS, vocabFiles } from '../fixtures/llama-cpp-vocabs.js';

const SEP = '\n__ggml_vocab_test__\n';

const loaded = new Map<string, Tokenizer>();

function load(path: string): Tokenizer {
  const done = loaded.get(path);
  if (done !== undefined) return done;
  const g = openGGUF(path);
  try {
    const tok = tokenizerFromGGUF(path, g.metadata);
    loaded.set(path, tok);
    return tok;
  } finally {
    g.close();
  }
}

/** test-tokenizer-0.cpp's reading: inputs split at the separator, one id line per input */
function readVectors(path: string): { text: string; ids: number[] }[] {
  const inputs = readFileSync(`${path}.inp`, 'utf8').split(SEP);
  const lines = readFileSync(`${path}.out`, 'utf8').split('\n');
  assert.ok(lines.length >= inputs.length, `${path}: ${inputs.length} inputs, ${lines.length} output lines`);
  return inputs.map((text, i) => {
    const line = lines[i]!.trim();
    return { text, ids: line === '' ? [] : line.split(' ').map(Number) };
  });
}

const skip = llamaCppSourceMissing();
const root = skip ? undefined : llamaCppFiles('vocab', vocabFiles());
const models = root === undefined ? undefined : join(root, 'models');

describe("llama.cpp's tokenizer test vectors", { skip }, () => {
  for (const v of VECTORS) {
    it(`${v.name}: every case gives llama.cpp's ids${v.lossless ? ', and decodes back to its text' : ''}`, () => {
      const path = join(models!, `ggml-vocab-${v.name}.gguf`);
      const tok = load(path);
      const cases = readVectors(path);
      assert.ok(cases.length >= 40, `${v.name}: only ${cases.length} cases`);
      for (const c of cases) {
        assert.deepEqual(tok.encode(c.text, { addSpecial: false, parseSpecial: false }), c.ids, `${v.name}: ${JSON.stringify(c.text)}`);
        const text = tok.decode(c.ids, { skipSpecial: false });
        // lossy ones at least decode to text that tokenizes to the same ids ([UNK] as its text)
        if (v.lossless) assert.equal(text, c.text, `${v.name}: decode of ${JSON.stringify(c.text)}`);
        else assert.deepEqual(tok.encode(text, { addSpecial: false, parseSpecial: true }), c.ids, `${v.name}: re-encode of ${JSON.stringify(text)}`);
      }
    });
  }

  for (const o of OTHERS) {
    it(`${o.name}: ${o.refused ? 'refused by name' : 'loads and round-trips text'}`, () => {
      const path = join(models!, `ggml-vocab-${o.name}.gguf`);
      if (o.refused) {
        assert.throws(() => load(path), (e: unknown) => e instanceof UnsupportedModelError && o.refused!.test(e.message));
        return;
      }
      const tok = load(path);
      const text = 'Hello world, 1234 times: \t déjà vu!\n';
      assert.equal(tok.decode(tok.encode(text, { addSpecial: false })), text);
    });
  }
});

// Beyond llama.cpp's vectors: texts where implementations part ways (tokenizer-texts.ts),
// llama.cpp's ids written by `node dist/test/fixtures/oracle-tokenizers.js`.
describe("edge texts: llama.cpp's ids in every vocabulary loom loads", { skip }, () => {
  const golden = JSON.parse(readFileSync(TOKENIZER_GOLDEN, 'utf8')) as TokenizerGolden;
  const lossless = new Set([...VECTORS.filter((v) => v.lossless).map((v) => v.name), ...OTHERS.map((o) => o.name)]);
  for (const [name, want] of Object.entries(golden.ids)) {
    it(`${name}: ${golden.texts.length} texts`, () => {
      const tok = load(join(models!, `ggml-vocab-${name}.gguf`));
      golden.texts.forEach((text, i) => {
        const ids = tok.encode(text, { addSpecial: false, parseSpecial: false });
        assert.deepEqual(ids, want[i], `${name}: ${JSON.stringify(text)}`);
        // decode → encode is stable (text itself may not come back: a literal ▁ in SPM, a byte the vocabulary lacks)
        const back = tok.decode(ids, { skipSpecial: false });
        assert.deepEqual(tok.encode(back, { addSpecial: false, parseSpecial: !lossless.has(name) }), ids, `${name}: re-encode of ${JSON.stringify(back)}`);
      });
    });
  }
});

// Gemma 4's own chat template (the vocabulary file's tokenizer.chat_template), rendered as
// the template says (read from it: <bos>, a system turn, <|turn>role … <turn|> per message,
// the assistant as "model", and without enable_thinking an empty thought channel after the
// generation prompt, which llama.cpp's test-chat expects to end in "<|turn>model\n" when
// thinking is on), then tokenized with its special tokens.
describe("Gemma 4's chat template", { skip }, () => {
  const messages = [
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: 'Hi there' },
    { role: 'assistant', content: 'Hello!' },
    { role: 'user', content: '2+2?' },
  ];
  const turns = '<|turn>user\nHi there<turn|>\n<|turn>model\nHello!<turn|>\n<|turn>user\n2+2?<turn|>\n<|turn>model\n';

  it('renders turns, the system prompt and the thinking switch', () => {
    const tok = load(join(models!, 'ggml-vocab-gemma-4.gguf'));
    assert.equal(renderChat(tok, messages), `<bos><|turn>system\nYou are terse.<turn|>\n${turns}<|channel>thought\n<channel|>`);
    assert.equal(renderChat(tok, messages, { extra: { enable_thinking: true } }), `<bos><|turn>system\n<|think|>You are terse.<turn|>\n${turns}`);
    assert.equal(renderChat(tok, messages.slice(1), { addGenerationPrompt: false }), `<bos>${turns.slice(0, -'<|turn>model\n'.length)}`);
  });

  it('tokenizes the rendered prompt with its control tokens, ends generation at <turn|> and <eos>', () => {
    const tok = load(join(models!, 'ggml-vocab-gemma-4.gguf'));
    const prompt = renderChat(tok, messages.slice(1));
    const ids = tok.encode(prompt, { addSpecial: false, parseSpecial: true });
    const id = (text: string): number => tok.encode(text, { addSpecial: false })[0]!;
    assert.deepEqual([id('<bos>'), id('<|turn>'), id('<turn|>'), id('<eos>')], [2, 105, 106, 1]);
    assert.equal(ids[0], 2);
    assert.equal(ids.filter((i) => i === 105).length, 4);
    assert.equal(ids.filter((i) => i === 106).length, 3);
    assert.equal(tok.decode(ids, { skipSpecial: false }), prompt);
    assert.ok(tok.stopIds.has(106) && tok.stopIds.has(1), 'stops at <turn|> and <eos>');
    // llama.cpp's detokenize without special tokens: end-of-generation texts are control tokens
    // (hidden), the tool-call markers user-defined (kept)
    const mixed = tok.encode('a<|tool_response>b<turn|>c<|tool_call>d<eos>e<|"|>f', { addSpecial: false });
    assert.equal(tok.decode(mixed), 'abc<|tool_call>de<|"|>f');
    assert.ok(tok.stopIds.has(50), '<|tool_response> ends generation');
    // with special tokens added, Gemma 4 starts with <bos> even where the file says not to
    assert.deepEqual(tok.encode('Hi').slice(0, 1), [2]);
  });
});
