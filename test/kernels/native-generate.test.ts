// The native kernels generate what the reference kernels generate: on every GGUF fixture
// and the real models in ../shared/models, greedy tokens with the native core equal
// llama.cpp's goldens (which the reference kernels equal, test/model/llama-cpp-agreement.test.ts)
// and the logits stay within the same per-type tolerance of llama.cpp's; and `loom generate`
// prints the same tokens with --backend native and --backend reference.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { runGreedy } from '../fixtures/engine-run.js';
import type { Kernels } from '../../src/kernels/index.js';
import { nativeSkip, requireNative } from '../fixtures/native.js';
import { loadModel } from '../../src/model/load.js';
import { GOLDEN_DIR, PROJECT_ROOT, SHARED_MODELS, ggufFixturePath, sha256File } from '../fixtures/index.js';
import { readGolden, SHARED_MODEL_CASES } from '../fixtures/golden.js';
import { GGUF_FIXTURES } from '../fixtures/recipe.js';
import { LLAMA_CPP_TOLERANCE } from '../fixtures/tolerance.js';

/** the bounds test/model/llama-cpp-agreement.test.ts holds the reference to */
const TOLERANCE = LLAMA_CPP_TOLERANCE;

const native = requireNative();
const skip = nativeSkip();

function checkFile(kernels: Kernels, name: string, path: string, tolerance: number): void {
  const golden = readGolden(GOLDEN_DIR, name);
  assert.equal(sha256File(path), golden.sha256, `${path} is not the file the golden was made from`);
  const model = loadModel(path);
  for (const g of golden.prompts) {
    const promptIds = model.tokenizer.encode(g.prompt, { addSpecial: true });
    assert.deepEqual(promptIds, g.promptIds);
    const run = runGreedy(model, kernels, promptIds, g.tokens.length);
    run.tokens.forEach((id, step) => {
      const ref = g.steps[step]!;
      const logits = run.logits[step]!;
      const scale = Math.max(...ref.values.map(Math.abs));
      const error = Math.max(...ref.ids.map((i, k) => Math.abs(logits[i]! - ref.values[k]!))) / scale;
      assert.ok(error <= tolerance, `"${g.prompt}" step ${step}: logits differ by ${error.toExponential(2)} (allowed ${tolerance})`);
      assert.equal(id, g.tokens[step], `"${g.prompt}" greedy token ${step} (llama.cpp's top-2 gap there: ${g.margins[step]})`);
    });
    const step = run.tokens.length;
    assert.equal(step, g.tokens.length);
  }
}

describe('native kernels: the same greedy tokens as the reference on every GGUF fixture', { skip }, () => {
  for (const f of GGUF_FIXTURES) {
    it(f.name, () => checkFile(native!, f.name, ggufFixturePath(f), TOLERANCE[f.weightType]));
  }
  for (const c of SHARED_MODEL_CASES) {
    const path = join(SHARED_MODELS, c.file);
    it(c.name, { skip: existsSync(path) ? false : `${path} is absent` }, () =>
      checkFile(native!, c.name, path, TOLERANCE[c.weightType]),
    );
  }
});

describe('loom generate --backend', () => {
  const CLI = join(PROJECT_ROOT, 'dist', 'src', 'cli.js');
  const fixture = GGUF_FIXTURES.find((f) => f.name === 'qwen3-q4_k')!;
  const run = (...args: string[]) => {
    const model = ggufFixturePath(fixture);
    const common = ['generate', '-m', model, '-p', 'Once upon a time', '--temperature', '0', '-n', '12', '--json'];
    return spawnSync(process.execPath, [CLI, ...common, ...args], { encoding: 'utf8', timeout: 120_000 });
  };

  it('native (1 and 2 threads) prints the tokens reference prints', { skip }, () => {
    const ref = run('--backend', 'reference');
    assert.equal(ref.status, 0, ref.stderr);
    for (const threads of ['1', '2']) {
      const r = run('--backend', 'native', '--threads', threads);
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.stderr, '');
      assert.deepEqual(JSON.parse(r.stdout).output_ids, JSON.parse(ref.stdout).output_ids);
    }
  });

  it('rejects an unknown backend and a bad thread count with one line', () => {
    for (const args of [['--backend', 'gpu'], ['--threads', '0'], ['--threads', 'two']]) {
      const r = run(...args);
      assert.equal(r.status, 1);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    }
  });
});
