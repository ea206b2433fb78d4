// Every tokenizer in llama.cpp's own test vectors (models/ggml-vocab-*.gguf with .inp/.out
// beside them, as tests/test-tokenizer-0.cpp reads them: no special tokens added or
// parsed), from the llama.cpp source node-llama-cpp ships (llama/gitRelease.bundle), cloned
// once into a cache folder. A new llama.cpp vocabulary is one line in VECTORS.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { UnsupportedModelError } from '../src/errors.js';
import { openGGUF } from '../src/model/gguf.js';
import { tokenizerFromGGUF } from '../src/tokenizer/gguf-tokenizer.js';
import type { Tokenizer } from '../src/tokenizer/tokenizer.js';
import { PROJECT_ROOT } from './fixtures/index.js';

/** vocabularies with test vectors; lossless: decode of the ids gives back the text */
const VECTORS: readonly { name: string; lossless: boolean }[] = [
  { name: 'bert-bge', lossless: false }, // lowercases, strips accents, drops whitespace
  { name: 'command-r', lossless: true },
  { name: 'deepseek-coder', lossless: true },
  { name: 'deepseek-llm', lossless: true },
  { name: 'falcon', lossless: true },
  { name: 'gemma-4', lossless: true },
  { name: 'gpt-2', lossless: true },
  { name: 'llama-bpe', lossless: true },
  { name: 'llama-spm', lossless: true },
  { name: 'mpt', lossless: true },
  { name: 'phi-3', lossless: true },
  { name: 'qwen2', lossless: true },
  { name: 'qwen35', lossless: true },
  { name: 'refact', lossless: true },
  { name: 'starcoder', lossless: true },
];
/** vocabularies in that folder without vectors: loom loads them, or refuses them by name */
const OTHERS: readonly { name: string; refused?: RegExp }[] = [
  { name: 'aquila' },
  { name: 'baichuan' },
  { name: 'gpt-neox' },
  { name: 'nomic-bert-moe', refused: /tokenizer model "t5" is not supported/ },
];

const BUNDLE = join(PROJECT_ROOT, 'oracle', 'node_modules', 'node-llama-cpp', 'llama', 'gitRelease.bundle');
const SEP = '\n__ggml_vocab_test__\n';

/** llama.cpp's models/ folder out of the bundle, extracted once per bundle commit */
function llamaCppModels(): string | undefined {
  if (!existsSync(BUNDLE)) return undefined;
  const head = execFileSync('git', ['bundle', 'list-heads', BUNDLE], { encoding: 'utf8' }).split(' ')[0]!.trim();
  const dir = join(process.env.LOOM_LLAMA_CPP_CACHE ?? join(tmpdir(), 'loom-llama-cpp'), head);
  const models = join(dir, 'models');
  if (existsSync(models)) return models;
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const git = join(tmp, 'git');
  execFileSync('git', ['clone', '--quiet', '--bare', BUNDLE, git]);
  const paths = [...VECTORS.flatMap((v) => [`${v.name}.gguf`, `${v.name}.gguf.inp`, `${v.name}.gguf.out`]), ...OTHERS.map((o) => `${o.name}.gguf`)];
  const tar = join(tmp, 'vocab.tar');
  execFileSync('git', ['--git-dir', git, 'archive', '--format=tar', '-o', tar, head, '--', ...paths.map((p) => `models/ggml-vocab-${p}`)]);
  execFileSync('tar', ['-xf', tar, '-C', tmp]);
  rmSync(git, { recursive: true, force: true });
  rmSync(tar, { force: true });
  try {
    mkdirSync(dir, { recursive: true });
    renameSync(join(tmp, 'models'), models);
  } catch (err) {
    if (!existsSync(models)) throw err;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return models;
}

function load(path: string): Tokenizer {
  const g = openGGUF(path);
  try {
    return tokenizerFromGGUF(path, g.metadata);
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

const models = llamaCppModels();
const skip = models === undefined ? `llama.cpp's source is not here (${BUNDLE}): install the oracle (npm --prefix oracle install)` : false;

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
