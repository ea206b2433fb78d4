// A Hugging Face Gemma3ForConditionalGeneration folder: its text model (text_config, tensors under
// language_model.*) computes what the same weights in a Gemma3ForCausalLM folder compute, and its
// vision tower is the projector llama.cpp's converter would have written from it: the same
// prepared pixels and embeddings, bit for bit, as the mmproj file the converter writes from the
// same weights (the mmproj-gemma3-f32 fixture, whose embeddings encoders.test.ts checks against
// llama.cpp, with its input projection in F16 as the converter forces it). With do_pan_and_scan
// its prepare adds the crops pan-and-scan.ts cuts, each prepared as the file's projector prepares
// an image; an mmproj file never crops.
import { strict as assert } from 'node:assert';
import { copyFileSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { referenceKernels } from '../../../src/kernels/reference.js';
import { loadModel } from '../../../src/model/load.js';
import { builtInProjector } from '../../../src/model/vision/folder-projector.js';
import { cropImage } from '../../../src/model/vision/pan-and-scan.js';
import { loadProjector } from '../../../src/model/vision/projector-file.js';
import { forcedLogits } from '../../fixtures/forced-logits.js';
import { withCausalTwin } from '../../fixtures/causal-twin.js';
import { GEMMA3_VISION_PROJECTOR, GEMMA3_VISION_TEXT, gemma3ConvertedPath, gemma3PanAndScanFolder, gemma3VisionFolder, gemma3VisionFolderV452 } from '../../fixtures/hf-gemma3-vision.js';
import { hfFixturePaths } from '../../fixtures/index.js';
import { projectorFixturePath } from '../../fixtures/mmproj-fixture.js';
import { IMAGE_DIR, TEST_IMAGES, readTestImage } from '../../fixtures/test-images.js';
import { LLM } from '../../../src/llm.js';
import { IMAGE_MARKER } from '../../../src/pipeline/image-input.js';

describe('Gemma3ForConditionalGeneration folders', () => {
  const folder = gemma3VisionFolder();
  const causalFolder = hfFixturePaths(GEMMA3_VISION_TEXT).folder;
  const { model, causal } = withCausalTwin(folder, causalFolder);

  it("the vision tower: the projector of the converted mmproj file, bit for bit", async () => {
    const fromFolder = loadProjector(folder, model.config);
    const fromFile = loadProjector(gemma3ConvertedPath(), model.config);
    try {
      const facts = (p: typeof fromFile) => [p.kind, p.outputSize, p.imageBegin, p.imageEnd, p.nonCausalImage, p.positions, p.panAndScanText];
      assert.deepEqual(facts(fromFolder), facts(fromFile));
      for (const img of TEST_IMAGES) {
        const image = await readTestImage(img.file);
        const [a, b] = [fromFolder.prepare(image), fromFile.prepare(image)];
        assert.deepEqual(a, b, `${img.file}: prepared`);
        assert.equal(a.crops, undefined);
        assert.deepEqual(fromFolder.encode([a], referenceKernels), fromFile.encode([b], referenceKernels), `${img.file}: embeddings`);
      }
    } finally {
      fromFolder.dispose();
      fromFile.dispose();
    }
  });

  it("the converted file is the golden-checked fixture but for the input projection's f16 rounding", async () => {
    const converted = loadProjector(gemma3ConvertedPath(), model.config);
    const fixture = loadProjector(projectorFixturePath(GEMMA3_VISION_PROJECTOR), model.config);
    try {
      const image = await readTestImage('wide-97x53.png');
      const [a] = converted.encode([converted.prepare(image)], referenceKernels);
      const [b] = fixture.encode([fixture.prepare(image)], referenceKernels);
      let err = 0, scale = 0;
      for (let i = 0; i < a!.length; i++) {
        err = Math.max(err, Math.abs(a![i]! - b![i]!));
        scale = Math.max(scale, Math.abs(b![i]!));
      }
      // f16 keeps 11 significant bits: the projection's outputs move by about 2^-11 of their size
      assert.ok(err > 0 && err < 2e-3 * scale, `differ by ${err} of ${scale}`);
    } finally {
      converted.dispose();
      fixture.dispose();
    }
  });

  it('as transformers 4.52+ save it (model.language_model.*, model.vision_tower.*): the same model and projector', async () => {
    const newer = loadModel(gemma3VisionFolderV452());
    const [a, b] = [loadProjector(newer.path, newer.config), loadProjector(folder, model.config)];
    try {
      assert.deepEqual(newer.config, model.config);
      const prompt = [5, 17, 3, 40];
      assert.deepEqual(forcedLogits(newer, referenceKernels, prompt, [7]), forcedLogits(model, referenceKernels, prompt, [7]));
      const image = await readTestImage('wide-97x53.png');
      assert.deepEqual(a.encode([a.prepare(image)], referenceKernels), b.encode([b.prepare(image)], referenceKernels));
    } finally {
      a.dispose();
      b.dispose();
      newer.dispose();
    }
  });

  it('such a folder is its own projector; a text-only folder is none, and refused as one', () => {
    assert.equal(builtInProjector(folder), folder);
    assert.equal(builtInProjector(causalFolder), undefined);
    assert.throws(() => loadProjector(causalFolder, causal.config), /names no image-text architecture/);
  });

  it('a Gemma3ForConditionalGeneration config over text weights only (a stripped folder) serves text: no projector', () => {
    const dir = mkdtempSync(join(tmpdir(), 'loom-gemma3-text-'));
    try {
      for (const f of readdirSync(causalFolder)) copyFileSync(join(causalFolder, f), join(dir, f));
      copyFileSync(join(folder, 'config.json'), join(dir, 'config.json'));
      assert.equal(builtInProjector(dir), undefined);
      const stripped = loadModel(dir);
      assert.deepEqual(stripped.config, causal.config);
      stripped.dispose();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('its tower is for Gemma 3 text models only', () => {
    const other = { ...model.config, arch: 'qwen35' as const };
    assert.throws(() => loadProjector(folder, other), /a Gemma 3 vision tower is for Gemma 3 models, not a qwen35 model/);
  });

  it('do_pan_and_scan: the original image, then each crop prepared as an image of its own', async () => {
    const pas = loadProjector(gemma3PanAndScanFolder(), model.config);
    const fromFile = loadProjector(gemma3ConvertedPath(), model.config);
    try {
      assert.deepEqual(pas.panAndScanText, { before: 'Here is the original image ', between: ' and here are some crops to help you see better ', separator: ' ' });
      // min crop 16, ratio 1.2 (pan-and-scan.test.ts works these boxes out)
      const boxes: Record<string, { x: number; y: number; width: number; height: number }[]> = {
        'square-64.png': [],
        'wide-97x53.png': [{ x: 0, y: 0, width: 49, height: 53 }, { x: 49, y: 0, width: 48, height: 53 }],
        'tall-23x31.png': [{ x: 0, y: 0, width: 23, height: 16 }, { x: 0, y: 16, width: 23, height: 15 }],
      };
      for (const img of TEST_IMAGES) {
        const image = await readTestImage(img.file);
        const { crops, ...whole } = pas.prepare(image);
        assert.deepEqual(whole, fromFile.prepare(image), `${img.file}: the whole image`);
        const want = boxes[img.file]!.map((b) => fromFile.prepare(cropImage(image, b)));
        assert.deepEqual(crops ?? [], want, `${img.file}: crops`);
      }
    } finally {
      pas.dispose();
      fromFile.dispose();
    }
  });
});

describe('LLM on a Gemma3ForConditionalGeneration folder', () => {
  const prompt = `Look: ${IMAGE_MARKER} What is it?`;
  const image = () => ({ bytes: readFileSync(join(IMAGE_DIR, 'wide-97x53.png')), param: 'image' });
  const opts = { worker: false, maxModelLen: 256, kvCacheMemory: '64MiB' } as const;
  const sampling = { maxTokens: 4, temperature: 0, ignoreEos: true } as const;

  it('reads images with the folder\'s own tower (no mmproj): as with the mmproj file of the same weights; mmproj: false is text only', async () => {
    const folder = gemma3VisionFolder();
    const own = await LLM.load(folder, opts);
    const file = await LLM.load(folder, { ...opts, mmproj: gemma3ConvertedPath() });
    const textOnly = await LLM.load(folder, { ...opts, mmproj: false });
    try {
      const a = await own.generate({ text: prompt, images: [image()] }, sampling);
      const b = await file.generate({ text: prompt, images: [image()] }, sampling);
      assert.deepEqual([a.tokenIds, a.promptTokens], [b.tokenIds, b.promptTokens]);
      await assert.rejects(textOnly.generate({ text: prompt, images: [image()] }, sampling), /--mmproj/);
    } finally {
      await Promise.all([own.close(), file.close(), textOnly.close()]);
    }
  });

  it('pan and scan: the prompt carries the original image, then its two crops in Gemma3Processor\'s words', async () => {
    const llm = await LLM.load(gemma3PanAndScanFolder(), opts);
    try {
      const r = await llm.generate({ text: prompt, images: [image()] }, sampling);
      const tok = llm.model.tokenizer;
      const enc = (s: string) => tok.encode(s, { addSpecial: false, parseSpecial: true }).length;
      const image16 = enc('<start_of_image>') + 16 + enc('<end_of_image>');
      const bos = tok.addBos ? 1 : 0;
      const want = bos + enc('Look: Here is the original image ') + image16 + enc(' and here are some crops to help you see better ') + image16 + enc(' ') + image16 + enc(' What is it?');
      assert.equal(r.promptTokens, want);
    } finally {
      await llm.close();
    }
  });
});
