// A Hugging Face Qwen3_5ForConditionalGeneration folder: its text model (text_config, tensors
// under model.language_model) computes what the same weights in a Qwen3_5ForCausalLM folder
// compute, and its vision tower (model.visual.*) is the projector llama.cpp's converter would
// have written from it: the same embeddings, bit for bit, as the mmproj file of the same weights
// (whose embeddings test/model/vision/qwen3vl.test.ts checks against llama.cpp).
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { referenceKernels } from '../../../src/kernels/reference.js';
import { qwen35FolderProjector } from '../../../src/model/vision/hf-qwen3vl.js';
import { builtInProjector } from '../../../src/model/vision/folder-projector.js';
import { loadProjector } from '../../../src/model/vision/projector-file.js';
import { withCausalTwin } from '../../fixtures/causal-twin.js';
import { QWEN35_VISION_PROJECTOR, QWEN35_VISION_TEXT, qwen35VisionFolder } from '../../fixtures/hf-qwen35-vision.js';
import { hfFixturePaths } from '../../fixtures/index.js';
import { qwen3vlFixturePath } from '../../fixtures/mmproj-qwen3vl.js';
import { TEST_IMAGES, readTestImage } from '../../fixtures/test-images.js';

describe('Qwen3_5ForConditionalGeneration folders', () => {
  const folder = qwen35VisionFolder();
  const { model, causal } = withCausalTwin(folder, hfFixturePaths(QWEN35_VISION_TEXT).folder);

  it("the vision tower: the projector of the same weights' mmproj file, bit for bit", async () => {
    const fromFolder = qwen35FolderProjector(folder, model.config)!;
    const fromFile = loadProjector(qwen3vlFixturePath(QWEN35_VISION_PROJECTOR), model.config);
    try {
      assert.deepEqual([fromFolder.kind, fromFolder.outputSize, fromFolder.imageBegin, fromFolder.positions], [fromFile.kind, fromFile.outputSize, fromFile.imageBegin, fromFile.positions]);
      for (const img of TEST_IMAGES) {
        const image = await readTestImage(img.file);
        const [a, b] = [fromFolder.prepare(image), fromFile.prepare(image)];
        assert.deepEqual(a, b, `${img.file}: prepared`);
        assert.deepEqual(fromFolder.encode([a], referenceKernels), fromFile.encode([b], referenceKernels), `${img.file}: embeddings`);
      }
    } finally {
      fromFolder.dispose();
      fromFile.dispose();
    }
  });

  it('a folder without a vision tower has no projector; one with is its own (no --mmproj needed)', () => {
    assert.equal(qwen35FolderProjector(hfFixturePaths(QWEN35_VISION_TEXT).folder, causal.config), undefined);
    assert.equal(builtInProjector(hfFixturePaths(QWEN35_VISION_TEXT).folder), undefined);
    assert.equal(builtInProjector(folder), folder);
    const loaded = loadProjector(folder, model.config);
    assert.equal(loaded.kind, 'qwen3vl');
    loaded.dispose();
  });
});
