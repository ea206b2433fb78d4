// SPM (GGUF tokenizer.ggml.model = "llama"): ids from llama.cpp on real vocabularies, and
// the fixture vocabulary against @huggingface/tokenizers on the equivalent tokenizer.json.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Tokenizer as HFLib } from '@huggingface/tokenizers';
import { ModelFormatError, UnsupportedModelError } from '../../src/errors.js';
import { openGGUF } from '../../src/model/gguf.js';
import { tokenizerFromGGUF } from '../../src/tokenizer/gguf-tokenizer.js';
import type { Tokenizer } from '../../src/tokenizer/tokenizer.js';
import { fixtureGGUFMetadata, spmFixtureVocab, spmTokenizerJson, tokenizerConfigJson } from '../fixtures/vocab.js';
import { EDGE_TEXTS, randomTexts } from '../fixtures/text-samples.js';

const MODELS = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..', 'shared', 'models');

function realTokenizer(file: string): Tokenizer | undefined {
  const path = join(MODELS, file);
  if (!existsSync(path)) return undefined;
  const g = openGGUF(path);
  try {
    return tokenizerFromGGUF(path, g.metadata);
  } finally {
    g.close();
  }
}

describe('SPM tokenizer on real GGUF vocabularies (ids from llama.cpp)', () => {
  const stories = realTokenizer('stories260K.gguf');
  const llama2 = realTokenizer('llama-2-tiny-random.gguf');

  it('stories260K: "Once upon a time" with BOS', { skip: stories ? false : `stories260K.gguf not in ${MODELS}` }, () => {
    assert.deepEqual(stories!.encode('Once upon a time'), [1, 403, 407, 261, 378]);
    assert.equal(stories!.decode([1, 403, 407, 261, 378]), 'Once upon a time');
    assert.equal(stories!.vocabSize, 512);
  });

  it('llama-2 vocab: "Hello world, this is" with BOS', { skip: llama2 ? false : `llama-2-tiny-random.gguf not in ${MODELS}` }, () => {
    const t = llama2!;
    assert.deepEqual(t.encode('Hello world, this is'), [1, 15043, 3186, 29892, 445, 338]);
    assert.equal(t.bosId, 1);
    assert.equal(t.eosId, 2);
    assert.ok(t.addBos);
    assert.ok(t.stopIds.has(2));
  });

  it("llama-2 vocab: llama.cpp's test-tokenizer-0 cases (no BOS)", { skip: llama2 ? false : 'llama-2-tiny-random.gguf absent' }, () => {
    const cases: [string, number[]][] = [
      [' ', [259]],
      ['  ', [1678]],
      ['   ', [268]],
      ['\t', [29871, 12]],
      ['\n', [29871, 13]],
      ['Hello world', [15043, 3186]],
      [' Hello world', [29871, 15043, 3186]],
      [' Hello World!', [29871, 15043, 2787, 29991]],
      ['Hello, world!', [15043, 29892, 3186, 29991]],
      [' this is 🦙.cpp', [29871, 445, 338, 29871, 243, 162, 169, 156, 29889, 8223]],
      ['w048 7tuijk dsdfhu', [281, 29900, 29946, 29947, 29871, 29955, 9161, 13535, 18031, 2176, 6905]],
      ['нещо на Български', [1538, 4851, 665, 1386, 29713, 1305]],
      ['   Hello', [1678, 15043]],
    ];
    for (const [text, ids] of cases) assert.deepEqual(llama2!.encode(text, { addSpecial: false }), ids, JSON.stringify(text));
  });

  it('llama-2 vocab: decode round-trips text', { skip: llama2 ? false : 'llama-2-tiny-random.gguf absent' }, () => {
    for (const text of [...EDGE_TEXTS, ...randomTexts(7, 200)]) {
      if (text.includes('\u2581')) continue; // ▁ in input decodes as a space, by design of SPM
      assert.equal(llama2!.decode(llama2!.encode(text)), text, JSON.stringify(text));
    }
  });

  it('llama-2 vocab: special tokens in text', { skip: llama2 ? false : 'llama-2-tiny-random.gguf absent' }, () => {
    const t = llama2!;
    // after a special token the text gets its own space prefix (llama.cpp: is_prev_special)
    assert.deepEqual(t.encode('<s>Hello</s>', { addSpecial: false }), [1, 15043, 2]);
    assert.ok(!t.encode('<s>Hello</s>', { addSpecial: false, parseSpecial: false }).includes(1));
    assert.equal(t.decode([1, 15043, 2], { skipSpecial: false }), '<s> Hello</s>');
    assert.equal(t.decode([1, 15043, 2]), 'Hello');
  });
});

describe('SPM fixture vocabulary', () => {
  const vocab = spmFixtureVocab();
  const tok = tokenizerFromGGUF('spm-fixture.gguf', fixtureGGUFMetadata(vocab, 'spm'));
  const hf = new HFLib(spmTokenizerJson(vocab), tokenizerConfigJson(vocab));

  it('has the llama.cpp layout', () => {
    assert.ok(vocab.tokens.length >= 400 && vocab.tokens.length <= 700, `${vocab.tokens.length} tokens`);
    assert.deepEqual(vocab.tokens.slice(0, 4), ['<unk>', '<s>', '</s>', '<0x00>']);
    assert.equal(vocab.tokens[258], '<0xFF>');
    assert.deepEqual(vocab.tokenTypes.slice(0, 4), [2, 3, 3, 6]);
    assert.equal(new Set(vocab.tokens).size, vocab.tokens.length);
  });

  it('tokenizes English into multi-character pieces', () => {
    const ids = tok.encode('Once upon a time, there was a little girl named Lily.', { addSpecial: false });
    const pieces = ids.map((id) => tok.tokenText(id)!);
    assert.ok(ids.length < 25, `${ids.length} tokens: ${pieces.join('|')}`);
    assert.ok(pieces.includes('\u2581the') || pieces.includes('\u2581there'), pieces.join('|'));
  });

  it('equals @huggingface/tokenizers on the equivalent tokenizer.json', () => {
    const texts = [...EDGE_TEXTS, ...randomTexts(11, 400, 40, ['<s>', '</s>', '<unk>'])];
    for (const text of texts) {
      assert.deepEqual(tok.encode(text), hf.encode(text).ids, JSON.stringify(text));
      assert.deepEqual(tok.encode(text, { addSpecial: false }), hf.encode(text, { add_special_tokens: false }).ids, JSON.stringify(text));
    }
  });

  it('decodes as @huggingface/tokenizers does', () => {
    for (const text of [...EDGE_TEXTS, ...randomTexts(12, 200)]) {
      const ids = tok.encode(text);
      if (ids.length === 0) continue;
      assert.equal(tok.decode(ids), hf.decode(ids, { skip_special_tokens: true, clean_up_tokenization_spaces: false }), JSON.stringify(text));
      assert.equal(tok.decode(ids, { skipSpecial: false }), hf.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false }));
    }
  });

  it('falls back to byte tokens for characters it lacks', () => {
    const ids = tok.encode('🎉', { addSpecial: false });
    const bytes = [...Buffer.from('🎉')].map((b) => 3 + b);
    assert.deepEqual(ids.slice(-4), bytes);
    assert.equal(tok.decode(ids), '🎉');
  });
});

describe('tokenizerFromGGUF errors and defaults', () => {
  it('a file without tokenizer metadata is a ModelFormatError', () => {
    assert.throws(
      () => tokenizerFromGGUF('weights-only.gguf', new Map([['general.architecture', 'llama']])),
      (e: unknown) => e instanceof ModelFormatError && e.message === 'weights-only.gguf: has no tokenizer (tokenizer.ggml.model missing)',
    );
  });

  it('an unknown tokenizer model is refused by name', () => {
    const md = fixtureGGUFMetadata(spmFixtureVocab(), 'spm');
    md.set('tokenizer.ggml.model', 't5');
    assert.throws(() => tokenizerFromGGUF('m.gguf', md), (e: unknown) => e instanceof UnsupportedModelError && /m\.gguf: .*"t5"/.test(e.message));
  });

  it("uses llama.cpp's SPM defaults when keys are absent", () => {
    const md = fixtureGGUFMetadata(spmFixtureVocab(), 'spm');
    for (const k of ['tokenizer.ggml.bos_token_id', 'tokenizer.ggml.eos_token_id', 'tokenizer.ggml.add_bos_token', 'tokenizer.ggml.unknown_token_id']) md.delete(k);
    const t = tokenizerFromGGUF('m.gguf', md);
    assert.equal(t.bosId, 1);
    assert.equal(t.eosId, 2);
    assert.ok(t.addBos);
    assert.equal(t.encode('a')[0], 1);
  });

  it('honours add_space_prefix = false', () => {
    const md = fixtureGGUFMetadata(spmFixtureVocab(), 'spm');
    md.set('tokenizer.ggml.add_space_prefix', false);
    const t = tokenizerFromGGUF('m.gguf', md);
    const ids = t.encode('the', { addSpecial: false });
    assert.ok(!t.tokenText(ids[0]!)!.startsWith('\u2581'));
    assert.equal(t.decode(ids), 'the');
  });
});

describe("Phi-3 files: special tokens drop the whitespace after them (llama.cpp's RSTRIP by general.name)", () => {
  const md = fixtureGGUFMetadata(spmFixtureVocab(), 'spm');
  const plain = tokenizerFromGGUF('spm.gguf', md);
  const phi = tokenizerFromGGUF('phi.gguf', new Map([...md, ['general.name', 'Phi 3 Mini (phi3)']]));

  it('whitespace after </s> is dropped, as if it were not there', () => {
    assert.deepEqual(phi.encode('x</s>  \n\t y', { addSpecial: false }), plain.encode('x</s>y', { addSpecial: false }));
    assert.notDeepEqual(plain.encode('x</s>  \n\t y', { addSpecial: false }), plain.encode('x</s>y', { addSpecial: false }));
  });

  it('<s> and <unk> keep it; other files are untouched', () => {
    assert.deepEqual(phi.encode('x<s>  y', { addSpecial: false }), plain.encode('x<s>  y', { addSpecial: false }));
    assert.deepEqual(phi.encode('x<unk> y', { addSpecial: false }), plain.encode('x<unk> y', { addSpecial: false }));
  });
});
