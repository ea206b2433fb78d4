// Byte-level BPE (GGUF tokenizer.ggml.model = "gpt2"): the fixture vocabulary with each
// pre-tokenizer against @huggingface/tokenizers on the equivalent tokenizer.json (whose
// regexes are the models' originals), pre-tokenizer splits written by hand, errors.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Tokenizer as HFLib } from '@huggingface/tokenizers';
import { UnsupportedModelError } from '../../src/errors.js';
import { BYTE_TO_UNICODE } from '../../src/tokenizer/bpe.js';
import { tokenizerFromGGUF } from '../../src/tokenizer/gguf-tokenizer.js';
import { compilePreTokenizer, preTokenizerSpec } from '../../src/tokenizer/pre-tokenizers.js';
import { BPE_SPECIALS, bpeFixtureVocab, bpeTokenizerJson, fixtureGGUFMetadata, tokenizerConfigJson } from '../fixtures/vocab.js';
import type { FixturePre } from '../fixtures/vocab.js';
import { EDGE_TEXTS, randomTexts } from '../fixtures/text-samples.js';

const vocab = bpeFixtureVocab();
const PRES: FixturePre[] = ['gpt2', 'llama-bpe', 'qwen2', 'smollm'];

describe('GPT-2 byte-to-unicode table', () => {
  it('maps printable bytes to themselves and the rest above U+0100, in order', () => {
    assert.equal(BYTE_TO_UNICODE[0x41], 'A');
    assert.equal(BYTE_TO_UNICODE[0x20], '\u0120'); // Ġ
    assert.equal(BYTE_TO_UNICODE[0x0a], '\u010a'); // Ċ
    assert.equal(BYTE_TO_UNICODE[0x00], '\u0100');
    assert.equal(BYTE_TO_UNICODE[0xad], '\u0143'); // soft hyphen: the 68th unprintable byte
    assert.equal(new Set(BYTE_TO_UNICODE).size, 256);
  });
});

describe('BPE fixture vocabulary', () => {
  it('has 256 byte tokens, learned merges and the ChatML specials', () => {
    assert.ok(vocab.tokens.length >= 400 && vocab.tokens.length <= 700, `${vocab.tokens.length} tokens`);
    assert.deepEqual(vocab.tokens.slice(0, 256), [...BYTE_TO_UNICODE]);
    assert.deepEqual(vocab.tokens.slice(-3), [...BPE_SPECIALS]);
    assert.deepEqual(vocab.tokenTypes.slice(-3), [3, 3, 3]);
    assert.equal(new Set(vocab.tokens).size, vocab.tokens.length);
    for (const m of vocab.merges!) assert.ok(vocab.tokens.includes(m.replace(' ', '')), m);
  });
});

for (const pre of PRES) {
  describe(`BPE with pre-tokenizer ${pre}`, () => {
    const tok = tokenizerFromGGUF(`bpe-${pre}.gguf`, fixtureGGUFMetadata(vocab, pre));
    const hf = new HFLib(bpeTokenizerJson(vocab, pre), tokenizerConfigJson(vocab));

    it('equals @huggingface/tokenizers on the equivalent tokenizer.json', () => {
      for (const text of [...EDGE_TEXTS, ...randomTexts(100 + pre.length, 400, 40, [...BPE_SPECIALS])]) {
        assert.deepEqual(tok.encode(text), hf.encode(text).ids, JSON.stringify(text));
      }
    });

    it('decodes losslessly, as @huggingface/tokenizers does', () => {
      for (const text of [...EDGE_TEXTS, ...randomTexts(200 + pre.length, 200)]) {
        const ids = tok.encode(text);
        assert.equal(tok.decode(ids), text, JSON.stringify(text));
        if (ids.length > 0) assert.equal(tok.decode(ids), hf.decode(ids, { clean_up_tokenization_spaces: false }));
      }
    });
  });
}

describe('pre-tokenizer splits (written by hand from the regexes)', () => {
  const split = (pre: string, text: string): string[] => compilePreTokenizer(preTokenizerSpec(pre)!)(text);

  it('gpt-2: letters with one leading space, digit runs, whitespace before a word stays apart', () => {
    assert.deepEqual(split('gpt-2', "Hello world's 12345  x!"), ['Hello', ' world', "'s", ' 12345', ' ', ' x', '!']);
  });
  it('llama-bpe: digits in groups of three, case-insensitive contractions, newlines grouped', () => {
    assert.deepEqual(split('llama-bpe', "1234567 IT'S\n\nok"), ['123', '456', '7', ' IT', "'S", '\n\n', 'ok']);
  });
  it('qwen2: single digits', () => {
    assert.deepEqual(split('qwen2', 'a 123'), ['a', ' ', '1', '2', '3']);
  });
  it('smollm: single digits first, then the GPT-2 rules', () => {
    assert.deepEqual(split('smollm', 'x 42 yz'), ['x', ' ', '4', '2', ' yz']);
  });
  it('gpt-4o (Phi-4-mini): case-aware words, contractions kept, digits by three, punctuation takes newlines and slashes', () => {
    assert.deepEqual(split('gpt-4o', "Hello World's HTTPServer camelCase 12345 ok!!\n\n/x"), [
      'Hello', " World's", ' HTTPServer', ' camel', 'Case', ' ', '123', '45', ' ok', '!!\n\n/', 'x',
    ]);
  });
  it('default: punctuation runs split out first', () => {
    assert.deepEqual(split('default', 'a+b=c'), ['a', '+', 'b', '=', 'c']);
  });
});

describe('BPE special tokens and metadata', () => {
  const tok = tokenizerFromGGUF('bpe.gguf', fixtureGGUFMetadata(vocab, 'qwen2'));
  const [eot, imStart, imEnd] = BPE_SPECIALS.map((s) => vocab.tokens.indexOf(s)) as [number, number, number];

  it('recognises special-token text, or not when parseSpecial is false', () => {
    const ids = tok.encode('<|im_start|>user\nhi<|im_end|>\n');
    assert.equal(ids[0], imStart);
    assert.ok(ids.includes(imEnd));
    assert.deepEqual(ids.slice(1, -2), tok.encode('user\nhi'));
    const plain = tok.encode('<|im_start|>user', { parseSpecial: false });
    assert.ok(!plain.includes(imStart));
    assert.equal(tok.decode(plain), '<|im_start|>user');
  });

  it('hides special tokens on decode unless asked', () => {
    const ids = tok.encode('<|im_start|>hi<|im_end|>');
    assert.equal(tok.decode(ids), 'hi');
    assert.equal(tok.decode(ids, { skipSpecial: false }), '<|im_start|>hi<|im_end|>');
  });

  it('stops on eos and on end-of-turn tokens', () => {
    assert.ok(tok.stopIds.has(eot) && tok.stopIds.has(imEnd));
    assert.ok(!tok.stopIds.has(imStart));
    assert.ok(!tok.addBos);
  });

  it('llama-bpe adds BOS by default when the file does not say', () => {
    const md = fixtureGGUFMetadata(vocab, 'llama-bpe');
    md.delete('tokenizer.ggml.add_bos_token');
    const t = tokenizerFromGGUF('m.gguf', md);
    assert.ok(t.addBos);
    assert.equal(t.encode('hi')[0], vocab.bosId);
  });

  it('an unknown pre-tokenizer is refused by name', () => {
    const md = fixtureGGUFMetadata(vocab, 'gpt2');
    md.set('tokenizer.ggml.pre', 'mystery-bpe');
    assert.throws(() => tokenizerFromGGUF('m.gguf', md), (e: unknown) => e instanceof UnsupportedModelError && e.message.includes('"mystery-bpe"') && e.message.startsWith('m.gguf: '));
  });

  it('a missing pre-tokenizer means "default"', () => {
    const md = fixtureGGUFMetadata(vocab, 'gpt2');
    md.delete('tokenizer.ggml.pre');
    const t = tokenizerFromGGUF('m.gguf', md);
    for (const text of EDGE_TEXTS) assert.equal(t.decode(t.encode(text)), text);
  });
});
