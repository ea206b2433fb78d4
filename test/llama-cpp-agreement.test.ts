// loom against llama.cpp's answers (goldens written by `npm run oracle`) on every GGUF
// fixture, every HF fixture's GGUF twin, and the real models in ../shared/models:
// the same prompt ids, the same greedy tokens, and last-position logits within a
// tolerance per weight type.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { GREEDY } from '../src/engine/sampler.js';
import { generateTokens } from '../src/engine/generate.js';
import { referenceKernels } from '../src/kernels/reference.js';
import { createArchitecture } from '../src/model/arch/index.js';
import { KvCache } from '../src/model/kv-cache.js';
import { loadModel } from '../src/model/load.js';
import type { LoadedModel } from '../src/model/load.js';
import { ModelRunner } from '../src/model/runner.js';
import { GOLDEN_DIR, SHARED_MODELS, ggufFixturePath, hfFixturePaths, sha256File } from './fixtures/index.js';
import { readGolden, SHARED_MODEL_CASES } from './fixtures/golden.js';
import type { GoldenPrompt } from './fixtures/golden.js';
import { GGUF_FIXTURES, HF_FIXTURES } from './fixtures/recipe.js';
import { LLAMA_CPP_TOLERANCE } from './fixtures/tolerance.js';

const TOLERANCE = LLAMA_CPP_TOLERANCE;

/** Largest |loom − llama.cpp| over the ids llama.cpp reported, as a fraction of its largest |logit|. */
function logitError(loom: Float32Array, step: { ids: number[]; values: number[] }): number {
  const scale = Math.max(...step.values.map(Math.abs));
  return Math.max(...step.ids.map((id, i) => Math.abs(loom[id]! - step.values[i]!))) / scale;
}

export function compareWithGolden(model: LoadedModel, golden: GoldenPrompt, tolerance: number): void {
  const promptIds = model.tokenizer.encode(golden.prompt, { addSpecial: true });
  assert.deepEqual(promptIds, golden.promptIds, 'prompt token ids differ from llama.cpp');
  const { config } = model;
  const length = golden.promptIds.length + golden.tokens.length;
  const kv = KvCache.forModel(config, Math.ceil(length / 16), 16);
  const runner = new ModelRunner(createArchitecture(config, model.tensors), kv, referenceKernels);
  const stream = generateTokens(runner, promptIds, {
    maxTokens: golden.tokens.length,
    sampling: GREEDY,
    stopIds: model.tokenizer.stopIds,
    ignoreEos: true,
    contextLength: length,
  });
  let step = 0;
  for (const token of stream) {
    const error = logitError(token.logits, golden.steps[step]!);
    assert.ok(error <= tolerance, `step ${step}: logits differ by ${error.toExponential(2)} of max |logit| (allowed ${tolerance})`);
    const expected = golden.tokens[step];
    assert.equal(token.id, expected, `greedy token ${step} is ${token.id}, llama.cpp's is ${expected} (its top-2 gap there: ${golden.margins[step]})`);
    step++;
  }
  assert.equal(step, golden.tokens.length);
}

function checkFile(name: string, path: string, tolerance: number): void {
  const golden = readGolden(GOLDEN_DIR, name);
  assert.equal(sha256File(path), golden.sha256, `${path} is not the file the golden was made from: run npm run oracle`);
  const model = loadModel(path);
  for (const prompt of golden.prompts) compareWithGolden(model, prompt, tolerance);
}

describe('agreement with llama.cpp on GGUF fixtures', () => {
  for (const f of GGUF_FIXTURES) {
    it(f.name, () => checkFile(f.name, ggufFixturePath(f), TOLERANCE[f.weightType]));
  }
});

describe('HF folders: the GGUF twin agrees with llama.cpp, the folder with the twin', () => {
  for (const f of HF_FIXTURES) {
    it(f.name, () => {
      const { folder, gguf } = hfFixturePaths(f);
      checkFile(f.name, gguf, TOLERANCE[f.dtype]);
      // the same weights and vocabulary through safetensors + tokenizer.json give the same tokens
      const golden = readGolden(GOLDEN_DIR, f.name);
      for (const prompt of golden.prompts) compareWithGolden(loadModel(folder), prompt, TOLERANCE[f.dtype]);
    });
  }
});

describe('agreement with llama.cpp on ../shared/models', () => {
  for (const c of SHARED_MODEL_CASES) {
    const path = join(SHARED_MODELS, c.file);
    it(c.name, { skip: existsSync(path) ? false : `${path} is absent` }, () => checkFile(c.name, path, TOLERANCE[c.weightType]));
  }
});
