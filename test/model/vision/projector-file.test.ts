// loadProjector's refusals: one line naming the file for each way a projector file does not fit
// the model loom is serving.
import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { UnsupportedModelError, ModelFormatError } from '../../../src/errors.js';
import { kv } from '../../../src/model/gguf-writer.js';
import type { GGUFEntry } from '../../../src/model/gguf-writer.js';
import { loadModel } from '../../../src/model/load.js';
import { loadProjector, PROJECTOR_TYPES } from '../../../src/model/vision/projector-file.js';
import type { ModelConfig } from '../../../src/model/weights.js';
import { GGUF_FIXTURES } from '../../fixtures/recipe.js';
import { ggufFixturePath } from '../../fixtures/index.js';
import { PROJECTOR_FIXTURES, projectorFixturePath, writeProjectorGGUF } from '../../fixtures/mmproj-fixture.js';
import type { ProjectorTensor } from '../../fixtures/mmproj-fixture.js';

const dir = mkdtempSync(join(tmpdir(), 'loom-mmproj-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const fixture = PROJECTOR_FIXTURES[0]!;
const text = loadModel(ggufFixturePath(fixture.text));
const gemma3: ModelConfig = text.config;
text.dispose();

/** a variant of the fixture with its metadata (and tensors) edited */
function variant(name: string, edit: (meta: GGUFEntry[], tensors: ProjectorTensor[]) => void): string {
  const path = join(dir, `${name}.gguf`);
  writeProjectorGGUF(path, fixture, (tensors, meta) => edit(meta, tensors));
  return path;
}

function setKey(meta: GGUFEntry[], entry: GGUFEntry): void {
  const i = meta.findIndex((e) => e.key === entry.key);
  if (i >= 0) meta[i] = entry;
  else meta.push(entry);
}

/** the error's message is one line naming the file and containing every part */
function refused(fn: () => unknown, path: string, ...parts: string[]): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof UnsupportedModelError || e instanceof ModelFormatError, `${String(e)}`);
    const msg = (e as Error).message;
    assert.ok(!msg.includes('\n'), `one line: ${msg}`);
    assert.ok(msg.startsWith(`${path}: `), `names the file: ${msg}`);
    for (const p of parts) assert.ok(msg.includes(p), `"${msg}" should say "${p}"`);
    return true;
  });
}

describe('loadProjector refuses', () => {
  it('a file that is not GGUF', () => {
    const path = join(dir, 'not-gguf.gguf');
    writeFileSync(path, 'hello, not a model');
    refused(() => loadProjector(path, gemma3), path, 'not a GGUF file');
  });

  it('a text model given as the projector', () => {
    const path = ggufFixturePath(fixture.text);
    refused(() => loadProjector(path, gemma3), path, 'not a vision projector (mmproj) file', '"gemma3"', '"clip"');
  });

  it('an audio-only projector', () => {
    const path = variant('audio-only', (meta) => setKey(meta, kv.bool('clip.has_vision_encoder', false)));
    refused(() => loadProjector(path, gemma3), path, 'no vision encoder');
  });

  it('a projector type loom does not run, naming it and the ones it runs', () => {
    const path = variant('llava', (meta) => setKey(meta, kv.str('clip.projector_type', 'mlp')));
    refused(() => loadProjector(path, gemma3), path, 'projector type "mlp" is not one loom runs', ...PROJECTOR_TYPES.keys());
  });

  it('a projector of another family than the text model', () => {
    const qwen = loadModel(ggufFixturePath(GGUF_FIXTURES.find((f) => f.name.startsWith('qwen35-'))!));
    const config = qwen.config;
    qwen.dispose();
    const path = projectorFixturePath(fixture);
    refused(() => loadProjector(path, config), path, 'a gemma3 projector is for Gemma 3 models, not a qwen35 model');
  });

  it('a projection width that is not the text model hidden size', () => {
    const path = projectorFixturePath(fixture);
    refused(() => loadProjector(path, { ...gemma3, hiddenSize: 512 }), path, "embeddings are 256 wide but the text model's hidden size is 512");
  });

  it('an encoder MLP other than GELU', () => {
    const path = variant('quick-gelu', (meta) => setKey(meta, kv.bool('clip.use_gelu', false)));
    refused(() => loadProjector(path, gemma3), path, 'quick GELU');
  });

  it('a tensor llama.cpp would apply that the encoder has no place for, by name', () => {
    const path = variant('layer-scale', (_meta, tensors) => tensors.push({ name: 'v.blk.1.ls1.weight', dims: [64], values: new Float32Array(64).fill(1), matrix: false }));
    refused(() => loadProjector(path, gemma3), path, 'tensor v.blk.1.ls1.weight is part of the encoder in llama.cpp', 'SigLIP');
  });

  it('a missing tensor, by name', () => {
    const path = variant('no-soft-emb-norm', (_meta, tensors) => tensors.splice(tensors.findIndex((t) => t.name === 'mm.soft_emb_norm.weight'), 1));
    refused(() => loadProjector(path, gemma3), path, 'no tensor mm.soft_emb_norm.weight');
  });
});

describe('loadProjector reads', () => {
  it('clip.vision.projector_type when clip.projector_type is absent (files with audio too)', () => {
    const path = variant('vision-type-key', (meta) => {
      const i = meta.findIndex((e) => e.key === 'clip.projector_type');
      meta.splice(i, 1, kv.str('clip.vision.projector_type', 'gemma3'));
    });
    const p = loadProjector(path, gemma3);
    assert.equal(p.kind, 'gemma3');
    p.dispose();
  });

  it("Gemma 4's images as causal for E2B and E4B (text widths 1536 and 2560) only, as mtmd_decode_use_non_causal", () => {
    const g4 = PROJECTOR_FIXTURES.find((f) => f.kind === 'gemma4v')!;
    const model = loadModel(ggufFixturePath(g4.text));
    const config = model.config;
    model.dispose();
    for (const width of [1536, 2560, 2048]) {
      const path = join(dir, `gemma4v-${width}.gguf`);
      writeProjectorGGUF(path, { ...g4, shape: { ...g4.shape, projection: width } });
      const p = loadProjector(path, { ...config, hiddenSize: width });
      assert.equal(p.nonCausalImage, width === 2048, `text width ${width}`);
      p.dispose();
    }
  });
});
