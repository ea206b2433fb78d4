// Gemma 3, Gemma 4 and Qwen3.5 with their projectors end to end, against llama.cpp: a PNG decoded by the
// pipeline, prepared and encoded by loom's projector, laid out at its marker, run by the serving
// engine (non-causal image span; Gemma 4: in its sliding layers only, its per-layer input token
// 0's; image rows unscaled) and sampled greedily. The goldens are
// llama.cpp's whole path on the same files (scripts/vision-goldens.mjs: mtmd_tokenize,
// mtmd_helper_eval_chunks, as llama-mtmd-cli): the prompt's layout, the logits at the prompt's
// last position (they differ by image) and 8 greedy tokens.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { EngineCore } from '../../src/engine/engine.js';
import { InProcessEngineClient } from '../../src/engine/in-process-client.js';
import { resolveEngineConfig } from '../../src/engine/options.js';
import type { Kernels } from '../../src/kernels/index.js';
import { referenceKernels } from '../../src/kernels/reference.js';
import { loadProjector } from '../../src/model/vision/projector-file.js';
import { localContext } from '../../src/pipeline/context.js';
import { newSummary, runPrompt } from '../../src/pipeline/generate.js';
import { inlineVision } from '../../src/pipeline/images.js';
import { resolveRequest } from '../../src/pipeline/request.js';
import { GOLDEN_DIR, PROJECT_ROOT, ggufFixturePath } from '../fixtures/index.js';
import { GGUF_FIXTURES } from '../fixtures/recipe.js';
import { fixtureModel } from '../fixtures/engine-run.js';
import { PROJECTOR_FIXTURES, projectorFixturePath } from '../fixtures/mmproj-fixture.js';
import { QWEN3VL_PROJECTOR_FIXTURES, qwen3vlFixturePath } from '../fixtures/mmproj-qwen3vl.js';
import { requireNative } from '../fixtures/native.js';
import { IMAGE_DIR, TEST_IMAGES } from '../fixtures/test-images.js';
import { LLAMA_CPP_TOLERANCE } from '../fixtures/tolerance.js';
import { f32 } from '../fixtures/vision-goldens.js';
import { LLM } from '../../src/llm.js';

interface Generation {
  readonly prompt: string;
  readonly chunks: readonly ({ type: 'text'; tokens: number[] } | { type: 'image'; n_tokens: number })[];
  readonly logits: string;
  readonly tokens: readonly number[];
}
interface Golden { readonly images: Record<string, { readonly generation: Generation }> }


/**
 * The last prompt position's logits against llama.cpp's, as a fraction of its largest |logit|:
 * the Q8_0 text fixture's bound (fixtures/tolerance.ts). Seen (2026-11-28, reference and native,
 * both projector fixtures): 5.6e-3 to 8.8e-3. llama.cpp's logits differ by 2.7e-2 to 7.7e-2
 * from one image to another (checked below), and a sliding window measured from the span's end
 * instead of each token's own position put them 5.4e-2 apart.
 */
const LOGIT_TOLERANCE = LLAMA_CPP_TOLERANCE.Q8_0;

const native = requireNative();
const KERNELS: [string, Kernels | undefined][] = [['reference', referenceKernels], ['native', native]];

// Gemma 3's and Gemma 4's projectors, and Qwen3.5's (M-RoPE positions, causal images)
const END_TO_END = [
  ...PROJECTOR_FIXTURES.filter((p) => p.name !== 'mmproj-gemma3-f16').map((f) => ({ f, path: () => projectorFixturePath(f) })),
  ...QWEN3VL_PROJECTOR_FIXTURES.map((f) => ({ f, path: () => qwen3vlFixturePath(f) })),
];

for (const { f, path } of END_TO_END) {
  const golden = JSON.parse(readFileSync(join(GOLDEN_DIR, 'vision', `${f.name}.json`), 'utf8')) as Golden;
  const text = fixtureModel(f.text.name);
  for (const [kernelName, k] of KERNELS) {
    describe(`${f.text.name} + ${f.name} through the pipeline and engine (${kernelName} kernels)`, { skip: k ? false : 'native core unavailable' }, () => {
      for (const image of TEST_IMAGES) {
        it(`${image.file}: llama.cpp's prompt layout, last-position logits and greedy tokens`, async () => {
          const g = golden.images[image.file]!.generation;
          const projector = loadProjector(path(), text.config);
          try {
            const engine = new EngineCore({ ...text, projector }, k!, resolveEngineConfig({ model: '', maxModelLen: 128, blockSize: 16 }, text.config, [...text.tokenizer.stopIds]));
            const rows: Float32Array[] = [];
            engine.logitsTap = (_id, _i, row) => rows.push(row.slice());
            const ctx = { ...localContext(new InProcessEngineClient(engine), text.tokenizer), vision: inlineVision(projector) };
            const bytes = readFileSync(join(IMAGE_DIR, image.file));
            const r = await resolveRequest(ctx, {
              prompts: [{ text: g.prompt, images: [{ bytes, param: 'images[0]' }] }], promptParam: 'prompt', addSpecialTokens: true,
              maxTokens: g.tokens.length, maxTokensParam: 'max_tokens', defaultMaxTokens: 8, sampling: { temperature: 0, ignoreEos: true }, idPrefix: 'v',
            });
            const expectedIds = g.chunks.flatMap((c) => (c.type === 'text' ? c.tokens : Array<number>(c.n_tokens).fill(0)));
            assert.deepEqual(r.prompts[0]!.ids, expectedIds);
            const tokens: number[] = [];
            for await (const e of runPrompt(ctx, r, 0, new AbortController().signal, newSummary())) tokens.push(...e.tokenIds);
            assert.deepEqual(tokens, g.tokens);
            const want = f32(g.logits);
            const got = rows[0]!;
            const scale = Math.max(...want.map(Math.abs));
            let err = 0;
            for (let i = 0; i < want.length; i++) err = Math.max(err, Math.abs(got[i]! - want[i]!));
            assert.ok(err / scale <= LOGIT_TOLERANCE, `logits differ from llama.cpp's by ${(err / scale).toExponential(2)} of max |logit|`);
          } finally {
            projector.dispose();
          }
        });
      }

      it('llama.cpp\'s logits differ by image by more than the tolerance (a lost or wrong image would show)', () => {
        const all = TEST_IMAGES.map((i) => f32(golden.images[i.file]!.generation.logits));
        for (const [i, a] of all.entries()) {
          for (const b of all.slice(i + 1)) {
            let d = 0;
            for (let j = 0; j < a.length; j++) d = Math.max(d, Math.abs(a[j]! - b[j]!));
            assert.ok(d / Math.max(...a.map(Math.abs)) > LOGIT_TOLERANCE);
          }
        }
      });
    });
  }
}

describe('loom generate --mmproj --image', () => {
  it('prints llama-mtmd-cli\'s greedy tokens for the fixture and an image', () => {
    const f = PROJECTOR_FIXTURES.find((p) => p.name === 'mmproj-gemma3-q8_0')!;
    const golden = JSON.parse(readFileSync(join(GOLDEN_DIR, 'vision', `${f.name}.json`), 'utf8')) as Golden;
    const g = golden.images['wide-97x53.png']!.generation;
    const model = ggufFixturePath(GGUF_FIXTURES.find((t) => t.name === 'gemma3-q8_0')!);
    const r = spawnSync(process.execPath, [
      join(PROJECT_ROOT, 'dist', 'src', 'cli.js'), 'generate', '-m', model, '--mmproj', projectorFixturePath(f), '--image', join(IMAGE_DIR, 'wide-97x53.png'),
      '-p', g.prompt, '--temperature', '0', '-n', String(g.tokens.length), '--json',
    ], { encoding: 'utf8', timeout: 120_000 });
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { prompt_ids: number[]; output_ids: number[] };
    assert.deepEqual(out.output_ids, g.tokens);
    assert.deepEqual(out.prompt_ids, g.chunks.flatMap((c) => (c.type === 'text' ? c.tokens : Array<number>(c.n_tokens).fill(0))));
  });

  it('refuses a projector for another model in one line naming the file', () => {
    const f = PROJECTOR_FIXTURES.find((p) => p.name === 'mmproj-gemma3-q8_0')!;
    const model = ggufFixturePath(GGUF_FIXTURES.find((t) => t.name === 'llama-f32')!);
    const r = spawnSync(process.execPath, [join(PROJECT_ROOT, 'dist', 'src', 'cli.js'), 'generate', '-m', model, '--mmproj', projectorFixturePath(f), '-p', 'hi', '-n', '2'], { encoding: 'utf8', timeout: 60_000 });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /mmproj-gemma3-q8_0\.gguf: a gemma3 projector is for Gemma 3 models, not a llama model/);
  });

  it('refuses an image without a projector, naming the flag', () => {
    const model = ggufFixturePath(GGUF_FIXTURES.find((t) => t.name === 'gemma3-q8_0')!);
    const r = spawnSync(process.execPath, [join(PROJECT_ROOT, 'dist', 'src', 'cli.js'), 'generate', '-m', model, '--image', join(IMAGE_DIR, 'wide-97x53.png'), '-p', 'hi', '-n', '2'], { encoding: 'utf8', timeout: 60_000 });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /--image needs a vision projector \(--mmproj\)/);
  });
});

describe('LLM with mmproj, the engine in a worker thread', () => {
  it('generates llama-mtmd-cli\'s greedy tokens (the images cross to the worker)', async () => {
    const f = PROJECTOR_FIXTURES.find((p) => p.name === 'mmproj-gemma3-q8_0')!;
    const golden = JSON.parse(readFileSync(join(GOLDEN_DIR, 'vision', `${f.name}.json`), 'utf8')) as Golden;
    const model = ggufFixturePath(GGUF_FIXTURES.find((t) => t.name === 'gemma3-q8_0')!);
    const llm = await LLM.load(model, { mmproj: projectorFixturePath(f), maxModelLen: 128, kvCacheMemory: '64MiB' });
    try {
      for (const image of TEST_IMAGES) {
        const g = golden.images[image.file]!.generation;
        const r = await llm.generate({ text: g.prompt, images: [{ bytes: readFileSync(join(IMAGE_DIR, image.file)), param: 'image' }] }, { maxTokens: g.tokens.length, temperature: 0, ignoreEos: true });
        assert.deepEqual(r.tokenIds, g.tokens, image.file);
        assert.equal(r.promptTokens, g.chunks.reduce((n, c) => n + (c.type === 'text' ? c.tokens.length : c.n_tokens), 0));
      }
    } finally {
      await llm.close();
    }
  });
});
