// A Hugging Face Gemma3ForConditionalGeneration folder: its text model (text_config, tensors under
// language_model.*) computes what the same weights in a Gemma3ForCausalLM folder compute, and its
// vision tower is the projector llama.cpp's converter would have written from it: the same
// prepared pixels and embeddings, bit for bit, as the mmproj file of the same weights (whose
// embeddings test/model/vision/encoders.test.ts checks against llama.cpp). With do_pan_and_scan
// its prepare adds the crops pan-and-scan.ts cuts, each prepared as the file's projector prepares
// an image; an mmproj file never crops.
import { strict as assert } from 'node:assert';
import { after, describe, it } from 'node:test';
import { referenceKernels } from '../../../src/kernels/reference.js';
import { loadModel } from '../../../src/model/load.js';
import { builtInProjector } from '../../../src/model/vision/folder-projector.js';
import { cropImage } from '../../../src/model/vision/pan-and-scan.js';
import { loadProjector } from '../../../src/model/vision/projector-file.js';
import { forcedLogits } from '../../fixtures/forced-logits.js';
import { GEMMA3_VISION_PROJECTOR, GEMMA3_VISION_TEXT, gemma3PanAndScanFolder, gemma3VisionFolder } from '../../fixtures/hf-gemma3-vision.js';
import { hfFixturePaths } from '../../fixtures/index.js';
import { projectorFixturePath } from '../../fixtures/mmproj-fixture.js';
import { TEST_IMAGES, readTestImage } from '../../fixtures/test-images.js';

describe('Gemma3ForConditionalGeneration folders', () => {
  const folder = gemma3VisionFolder();
  const model = loadModel(folder);
  const causalFolder = hfFixturePaths(GEMMA3_VISION_TEXT).folder;
  const causal = loadModel(causalFolder);
  after(() => {
    model.dispose();
    causal.dispose();
  });

  it('the text model: text_config read as the CausalLM config, and the same logits', () => {
    assert.deepEqual(model.config, causal.config);
    const prompt = [5, 17, 3, 40, 41, 42];
    assert.deepEqual(forcedLogits(model, referenceKernels, prompt, [7, 8]), forcedLogits(causal, referenceKernels, prompt, [7, 8]));
  });

  it("the vision tower: the projector of the same weights' mmproj file, bit for bit", async () => {
    const fromFolder = loadProjector(folder, model.config);
    const fromFile = loadProjector(projectorFixturePath(GEMMA3_VISION_PROJECTOR), model.config);
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

  it('such a folder is its own projector; a text-only folder is none, and refused as one', () => {
    assert.equal(builtInProjector(folder), folder);
    assert.equal(builtInProjector(causalFolder), undefined);
    assert.throws(() => loadProjector(causalFolder, causal.config), /names no image-text architecture/);
  });

  it('its tower is for Gemma 3 text models only', () => {
    const other = { ...model.config, arch: 'qwen35' as const };
    assert.throws(() => loadProjector(folder, other), /a Gemma 3 vision tower is for Gemma 3 models, not a qwen35 model/);
  });

  it('do_pan_and_scan: the original image, then each crop prepared as an image of its own', async () => {
    const pas = loadProjector(gemma3PanAndScanFolder(), model.config);
    const fromFile = loadProjector(projectorFixturePath(GEMMA3_VISION_PROJECTOR), model.config);
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
