// The benchmark's projectors are files llama.cpp's loader takes (checked by hand with
// llama-mtmd-cli when written); here: loom's own projector reader takes every shape, with the
// text model of the same name, and places its tokens as the real model does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeGGUFStream } from '../../src/bench/gguf-stream.js';
import { BENCH_SHAPES } from '../../src/bench/bench-shapes.js';
import { MMPROJ_SHAPES, mmprojContents } from '../../src/bench/make-mmproj.js';
import type { MmprojShapeName } from '../../src/bench/make-mmproj.js';
import type { ModelConfig } from '../../src/model/weights.js';
import { loadProjector } from '../../src/model/vision/projector-file.js';

for (const name of Object.keys(MMPROJ_SHAPES) as MmprojShapeName[]) {
  test(`bench make-mmproj ${name}: loom's projector reader takes it with its text shape`, (t) => {
    const shape = MMPROJ_SHAPES[name];
    const textShape = BENCH_SHAPES[shape.text];
    const dir = mkdtempSync(join(tmpdir(), 'loom-mmproj-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'mmproj.gguf');
    const { metadata, tensors } = mmprojContents({ shape: name, type: 'f16', seed: 0 });
    // the layout only (a sparse file): names, dims, types and keys are what is checked
    writeGGUFStream(path, metadata, tensors, true);
    const sections = 'linear' in textShape ? { ropeSections: textShape.linear.ropeSections } : {};
    const text = { arch: textShape.arch, hiddenSize: textShape.hidden, ...sections } as ModelConfig;
    const projector = loadProjector(path, text);
    try {
      assert.equal(projector.outputSize, shape.textHidden);
      assert.equal(shape.textHidden, textShape.hidden);
      const image = projector.prepare({ width: 896, height: 896, data: new Uint8Array(896 * 896 * 3) });
      // Gemma 3: 896 px, patch 14, pooled 4×4 → 256 tokens; Qwen3.5: 896 px at patch 16 → 56×56 patches, merged 2×2 → 784
      assert.equal(image.numTokens, name === 'gemma3-4b' ? 256 : 784);
    } finally {
      projector.dispose();
    }
  });
}
