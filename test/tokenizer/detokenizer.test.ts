// Incremental detokenizer: for seeded random id sequences and split points the pushes
// concatenate to the full decode, text never leaves mid-character, SPM spaces are right.
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { openGGUF } from '../../src/model/gguf.js';
import { IncrementalDetokenizer } from '../../src/tokenizer/detokenizer.js';
import { tokenizerFromGGUF } from '../../src/tokenizer/gguf-tokenizer.js';
import { tokenizerFromHFFolder } from '../../src/tokenizer/hf-tokenizer.js';
import type { Tokenizer } from '../../src/tokenizer/tokenizer.js';
import { bpeFixtureVocab, bpeTokenizerJson, fixtureGGUFMetadata, spmFixtureVocab, spmTokenizerJson, tokenizerConfigJson } from '../fixtures/vocab.js';
import { EDGE_TEXTS, randomTexts, seededRandom } from '../fixtures/text-samples.js';

const MODELS = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..', 'shared', 'models');
const root = mkdtempSync(join(tmpdir(), 'loom-detok-'));
after(() => rmSync(root, { recursive: true, force: true }));

function hfFolder(name: string, json: object, config: object): Tokenizer {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(json));
  writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(config));
  return tokenizerFromHFFolder(dir);
}

const tokenizers: [string, () => Tokenizer | undefined][] = [
  ['SPM fixture (GGUF)', () => tokenizerFromGGUF('spm.gguf', fixtureGGUFMetadata(spmFixtureVocab(), 'spm'))],
  ['BPE fixture (GGUF)', () => tokenizerFromGGUF('bpe.gguf', fixtureGGUFMetadata(bpeFixtureVocab(), 'qwen2'))],
  ['SPM fixture (HF folder)', () => hfFolder('spm', spmTokenizerJson(spmFixtureVocab()), tokenizerConfigJson(spmFixtureVocab()))],
  ['BPE fixture (HF folder)', () => hfFolder('bpe', bpeTokenizerJson(bpeFixtureVocab(), 'gpt2'), tokenizerConfigJson(bpeFixtureVocab()))],
  [
    'llama-2 vocab (GGUF)',
    () => {
      const path = join(MODELS, 'llama-2-tiny-random.gguf');
      if (!existsSync(path)) return undefined;
      const g = openGGUF(path);
      try {
        return tokenizerFromGGUF(path, g.metadata);
      } finally {
        g.close();
      }
    },
  ],
];

/** push `ids` in random chunks; returns the chunks (flush last) */
function streamed(tok: Tokenizer, ids: readonly number[], rnd: () => number, opts: { skipSpecial?: boolean; prefixIds?: readonly number[] }): string[] {
  const d = new IncrementalDetokenizer(tok, opts);
  const chunks: string[] = [];
  for (let i = 0; i < ids.length; ) {
    const n = 1 + Math.floor(rnd() * 4);
    chunks.push(d.push(ids.slice(i, i + n)));
    i += n;
  }
  chunks.push(d.flush());
  return chunks;
}

for (const [name, make] of tokenizers) {
  const tok = make();
  describe(`IncrementalDetokenizer on ${name}`, { skip: tok ? false : `model file absent from ${MODELS}` }, () => {
    it('random id sequences: pushes concatenate to decode, never releasing part of a character', () => {
      const rnd = seededRandom(42);
      for (let trial = 0; trial < 300; trial++) {
        const ids = Array.from({ length: Math.floor(rnd() * 30) }, () => Math.floor(rnd() * tok!.vocabSize));
        for (const skipSpecial of [true, false]) {
          const full = tok!.decode(ids, { skipSpecial });
          const chunks = streamed(tok!, ids, rnd, { skipSpecial });
          assert.equal(chunks.join(''), full, `ids ${JSON.stringify(ids)}`);
          // every released prefix is a prefix of the final text: no U+FFFD for a character still arriving
          let soFar = '';
          for (const c of chunks.slice(0, -1)) {
            soFar += c;
            assert.ok(full.startsWith(soFar), `released ${JSON.stringify(soFar)} is not a prefix of ${JSON.stringify(full)}`);
          }
        }
      }
    });

    it('after a prompt: output = decode(prompt + output) minus decode(prompt)', () => {
      const rnd = seededRandom(7);
      const texts = [...EDGE_TEXTS, ...randomTexts(5, 100)];
      for (let i = 0; i + 1 < texts.length; i++) {
        const prefix = tok!.encode(texts[i]!);
        const out = tok!.encode(texts[i + 1]!, { addSpecial: false });
        const whole = tok!.decode([...prefix, ...out]);
        const head = tok!.decode(prefix);
        assert.ok(whole.startsWith(head));
        assert.equal(streamed(tok!, out, rnd, { prefixIds: prefix }).join(''), whole.slice(head.length), JSON.stringify([texts[i], texts[i + 1]]));
      }
    });

    it('token by token, text round-trips', () => {
      for (const text of EDGE_TEXTS) {
        const d = new IncrementalDetokenizer(tok!);
        const ids = tok!.encode(text);
        assert.equal(ids.map((id) => d.push([id])).join('') + d.flush(), text.replaceAll('\u2581', ' '));
      }
    });
  });
}

describe('IncrementalDetokenizer specifics', () => {
  const spm = tokenizerFromGGUF('spm.gguf', fixtureGGUFMetadata(spmFixtureVocab(), 'spm'));
  const bpe = tokenizerFromGGUF('bpe.gguf', fixtureGGUFMetadata(bpeFixtureVocab(), 'gpt2'));
  const byteToken = (b: number): number => 3 + b; // SPM layout: <0x00> is id 3

  it('holds a character split over byte-fallback tokens until it is complete', () => {
    const d = new IncrementalDetokenizer(spm, { prefixIds: [1] });
    const bytes = [...Buffer.from('🎉')].map(byteToken);
    assert.deepEqual(bytes.map((id) => d.push([id])), ['', '', '', '🎉']);
    assert.equal(d.flush(), '');
  });

  it('holds a character split over byte-level BPE tokens', () => {
    const d = new IncrementalDetokenizer(bpe);
    const ids = bpe.encode('日', { addSpecial: false });
    assert.equal(ids.length, 3, 'the fixture has no token for 日: three byte tokens');
    assert.deepEqual(ids.map((id) => d.push([id])), ['', '', '日']);
  });

  it('an incomplete character becomes U+FFFD on flush; invalid bytes right away', () => {
    const d = new IncrementalDetokenizer(spm);
    assert.equal(d.push([byteToken(0xe6)]), '');
    assert.equal(d.flush(), '\uFFFD');
    const e = new IncrementalDetokenizer(spm);
    assert.equal(e.push([byteToken(0xff), byteToken(0x41)]), '\uFFFDA');
  });

  it("SPM: the text's space prefix is dropped at the start, a ▁ after a prompt is a space", () => {
    const hello = spm.encode('Hello world', { addSpecial: false });
    const fresh = new IncrementalDetokenizer(spm);
    assert.equal(fresh.push(hello) + fresh.flush(), 'Hello world');
    const afterBos = new IncrementalDetokenizer(spm, { prefixIds: [1] });
    assert.equal(afterBos.push(hello), 'Hello world');
    const afterPrompt = new IncrementalDetokenizer(spm, { prefixIds: spm.encode('Once upon') });
    assert.equal(afterPrompt.push(spm.encode('a time', { addSpecial: false })), ' a time');
  });

  it('special tokens are hidden by default and shown on request', () => {
    const ids = [1, ...spm.encode('hi', { addSpecial: false }), 2];
    const hidden = new IncrementalDetokenizer(spm);
    assert.equal(hidden.push(ids), 'hi');
    const shown = new IncrementalDetokenizer(spm, { skipSpecial: false });
    assert.equal(shown.push(ids), '<s> hi</s>');
  });
});
