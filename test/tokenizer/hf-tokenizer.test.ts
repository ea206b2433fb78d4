// HF model folders (tokenizer.json + tokenizer_config.json + generation_config.json)
// written from the fixture vocabularies; @huggingface/tokenizers' own decode is the
// reference for our token-bytes decode, and the GGUF tokenizer of the same vocabulary
// (llama.cpp semantics) must encode identically.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Tokenizer as HFLib } from '@huggingface/tokenizers';
import { ModelFormatError } from '../../src/errors.js';
import { tokenizerFromGGUF } from '../../src/tokenizer/gguf-tokenizer.js';
import { tokenizerFromHFFolder } from '../../src/tokenizer/hf-tokenizer.js';
import { BPE_SPECIALS, bpeFixtureVocab, bpeTokenizerJson, fixtureGGUFMetadata, spmFixtureVocab, spmTokenizerJson, tokenizerConfigJson } from '../fixtures/vocab.js';
import type { FixtureVocab } from '../fixtures/vocab.js';
import { EDGE_TEXTS, randomTexts } from '../fixtures/text-samples.js';

const root = mkdtempSync(join(tmpdir(), 'loom-hf-tok-'));
after(() => rmSync(root, { recursive: true, force: true }));

function writeFolder(name: string, files: Record<string, unknown>): string {
  const dir = join(root, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const [file, content] of Object.entries(files)) writeFileSync(join(dir, file), typeof content === 'string' ? content : JSON.stringify(content));
  return dir;
}

const cases: { name: string; vocab: FixtureVocab; json: Record<string, unknown>; kind: 'spm' | 'qwen2' | 'llama-bpe' }[] = [
  { name: 'spm', vocab: spmFixtureVocab(), json: spmTokenizerJson(spmFixtureVocab()), kind: 'spm' },
  { name: 'qwen2', vocab: bpeFixtureVocab(), json: bpeTokenizerJson(bpeFixtureVocab(), 'qwen2'), kind: 'qwen2' },
  { name: 'llama-bpe', vocab: { ...bpeFixtureVocab(), addBos: true }, json: bpeTokenizerJson({ ...bpeFixtureVocab(), addBos: true }, 'llama-bpe'), kind: 'llama-bpe' },
];

for (const c of cases) {
  describe(`HF folder tokenizer (${c.name})`, () => {
    const dir = writeFolder(c.name, { 'tokenizer.json': c.json, 'tokenizer_config.json': tokenizerConfigJson(c.vocab) });
    const tok = tokenizerFromHFFolder(dir);
    const gguf = tokenizerFromGGUF(`${c.name}.gguf`, fixtureGGUFMetadata(c.vocab, c.kind));
    const lib = new HFLib(c.json, tokenizerConfigJson(c.vocab));
    const texts = [...EDGE_TEXTS, ...randomTexts(300, 300, 40, c.kind === 'spm' ? ['<s>', '</s>'] : [...BPE_SPECIALS])];

    it('reads ids and flags from tokenizer_config.json', () => {
      assert.equal(tok.vocabSize, c.vocab.tokens.length);
      assert.equal(tok.bosId, c.vocab.bosId);
      assert.equal(tok.eosId, c.vocab.eosId);
      assert.equal(tok.addBos, c.vocab.addBos);
      assert.equal(tok.chatTemplate, c.vocab.chatTemplate);
      assert.equal(tok.bosToken, c.vocab.tokens[c.vocab.bosId]);
    });

    it('encodes as the GGUF tokenizer of the same vocabulary', () => {
      for (const text of texts) {
        assert.deepEqual(tok.encode(text), gguf.encode(text), JSON.stringify(text));
        assert.deepEqual(tok.encode(text, { addSpecial: false }), gguf.encode(text, { addSpecial: false }), JSON.stringify(text));
      }
    });

    it('parseSpecial = false encodes special-token text as text', () => {
      const special = c.kind === 'spm' ? '</s>' : '<|im_end|>';
      const ids = tok.encode(`a${special}b`, { addSpecial: false, parseSpecial: false });
      assert.ok(!ids.includes(tok.encode(special, { addSpecial: false }).at(-1)!));
      assert.equal(tok.decode(ids), `a${special}b`);
    });

    it("decodes as @huggingface/tokenizers' own decoder", () => {
      for (const text of texts) {
        const ids = tok.encode(text);
        if (ids.length === 0) continue;
        for (const skip of [true, false]) {
          assert.equal(tok.decode(ids, { skipSpecial: skip }), lib.decode(ids, { skip_special_tokens: skip, clean_up_tokenization_spaces: false }), JSON.stringify(text));
        }
      }
    });
  });
}

describe('HF folder details', () => {
  const vocab = bpeFixtureVocab();
  const json = bpeTokenizerJson(vocab, 'qwen2');
  const imEnd = vocab.tokens.indexOf('<|im_end|>');

  it('generation_config eos ids (number or array) are stop ids', () => {
    const a = tokenizerFromHFFolder(writeFolder('gen-array', { 'tokenizer.json': json, 'tokenizer_config.json': tokenizerConfigJson(vocab), 'generation_config.json': { eos_token_id: [vocab.eosId, imEnd] } }));
    assert.deepEqual([...a.stopIds].sort(), [vocab.eosId, imEnd].sort());
    const n = tokenizerFromHFFolder(writeFolder('gen-number', { 'tokenizer.json': json, 'tokenizer_config.json': tokenizerConfigJson(vocab), 'generation_config.json': { eos_token_id: imEnd } }));
    assert.ok(n.stopIds.has(imEnd) && n.stopIds.has(vocab.eosId));
  });

  it('without add_bos_token the post-processor decides BOS', () => {
    const withBos = { ...vocab, addBos: true };
    const t = tokenizerFromHFFolder(writeFolder('probe', { 'tokenizer.json': bpeTokenizerJson(withBos, 'llama-bpe'), 'tokenizer_config.json': tokenizerConfigJson(withBos, { addBos: null }) }));
    assert.ok(t.addBos);
    assert.equal(t.encode('hi')[0], vocab.bosId);
    assert.notEqual(t.encode('hi', { addSpecial: false })[0], vocab.bosId);
  });

  it('chat_template.jinja wins over tokenizer_config, named templates pick "default"', () => {
    const named = tokenizerFromHFFolder(
      writeFolder('named', { 'tokenizer.json': json, 'tokenizer_config.json': { ...tokenizerConfigJson(vocab), chat_template: [{ name: 'tool_use', template: 'T' }, { name: 'default', template: 'D' }] } }),
    );
    assert.equal(named.chatTemplate, 'D');
    const file = tokenizerFromHFFolder(writeFolder('jinja', { 'tokenizer.json': json, 'tokenizer_config.json': tokenizerConfigJson(vocab), 'chat_template.jinja': 'J' }));
    assert.equal(file.chatTemplate, 'J');
  });

  it('a folder without tokenizer.json is a ModelFormatError naming it', () => {
    const dir = writeFolder('empty', { 'config.json': {} });
    assert.throws(() => tokenizerFromHFFolder(dir), (e: unknown) => e instanceof ModelFormatError && e.message === `${dir}: no tokenizer.json`);
  });

  it('a broken tokenizer.json is a ModelFormatError', () => {
    const dir = writeFolder('broken', { 'tokenizer.json': '{ not json' });
    assert.throws(() => tokenizerFromHFFolder(dir), ModelFormatError);
  });
});
