// A Qwen3.5 prompt with an image, through loom's projector and text model, against what llama.cpp
// computes for it (goldens from scripts/vision-generate-goldens.mjs: libmtmd's chunks, the
// position after the prompt, greedy tokens and every step's logits). The image's embeddings take
// their rows in the batch (here through the kernels' embedRows, standing in for the engine's
// inputEmbeds) and the batch carries llama.cpp's M-RoPE positions: text (p, p, p, p), image
// token (y, x) at (p0, p0 + y, p0 + x, 0), the text after it from p0 + max(rows, cols). The
// logits agree within the text fixtures' tolerance; the same prompt with plain positions (no
// M-RoPE) or another image's embeddings does not, so the test sees both.
import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { Kernels } from '../../../src/kernels/index.js';
import { referenceKernels } from '../../../src/kernels/reference.js';
import { createArchitecture } from '../../../src/model/arch/index.js';
import { buildBatch } from '../../../src/model/batch.js';
import { KvCache } from '../../../src/model/kv-cache.js';
import type { LoadedModel } from '../../../src/model/load.js';
import { loadModel } from '../../../src/model/load.js';
import { ModelRunner } from '../../../src/model/runner.js';
import { loadProjector } from '../../../src/model/vision/projector-file.js';
import type { VisionProjector } from '../../../src/model/vision/projector.js';
import { logitDistance } from '../../fixtures/forced-logits.js';
import { GOLDEN_DIR, ggufFixturePath } from '../../fixtures/index.js';
import { QWEN3VL_PROJECTOR_FIXTURES, qwen3vlFixturePath } from '../../fixtures/mmproj-qwen3vl.js';
import { nativeSkip, requireNative } from '../../fixtures/native.js';
import { readTestImage } from '../../fixtures/test-images.js';
import { f32 } from '../../fixtures/vision-goldens.js';

type Chunk = { type: 'text'; tokens: number[] } | { type: 'image'; n_tokens: number; nx: number; ny: number; n_pos: number };
interface Run {
  readonly prompt: string;
  readonly image: string;
  readonly chunks: readonly Chunk[];
  readonly n_past: number;
  readonly tokens: readonly number[];
  readonly logits: readonly string[];
}

const BLOCK = 16;

/** The prompt's ids (image rows as 0), M-RoPE positions and image rows, as llama.cpp lays them out. */
function layout(chunks: readonly Chunk[]): { ids: number[]; rope: Int32Array; imageStart: number; nPast: number } {
  const ids: number[] = [];
  const quads: [number, number, number, number][] = [];
  let pos = 0;
  let imageStart = -1;
  for (const c of chunks) {
    if (c.type === 'text') {
      for (const t of c.tokens) {
        ids.push(t);
        quads.push([pos, pos, pos, pos]);
        pos++;
      }
      continue;
    }
    imageStart = ids.length;
    for (let y = 0; y < c.ny; y++) {
      for (let x = 0; x < c.nx; x++) {
        ids.push(0);
        quads.push([pos, pos + y, pos + x, 0]);
      }
    }
    pos += c.n_pos;
  }
  const n = ids.length;
  const rope = new Int32Array(4 * n);
  quads.forEach((q, i) => q.forEach((v, s) => (rope[s * n + i] = v)));
  return { ids, rope, imageStart, nPast: pos };
}

/**
 * loom's logits for the run: the prompt with `embeddings` in its image rows, then a decode step
 * per golden token (teacher-forced). `plainPositions`: every token at its sequence index instead.
 */
function logits(text: LoadedModel, k: Kernels, run: Run, embeddings: Float32Array, plainPositions = false): Float32Array[] {
  const { ids, rope, imageStart, nPast } = layout(run.chunks);
  const hidden = text.config.hiddenSize;
  let inject = true;
  // the engine will write image rows through ForwardBatch.inputEmbeds; here embedRows does
  const withImage: Kernels = {
    ...k,
    embedRows: (out, table, tokenIds) => {
      k.embedRows(out, table, tokenIds);
      if (inject) out.set(embeddings, imageStart * hidden);
    },
  };
  const total = ids.length + run.tokens.length;
  const blocks = Math.ceil(total / BLOCK);
  const blockTable = Array.from({ length: blocks }, (_, i) => i);
  const runner = new ModelRunner(createArchitecture(text.config, text.tensors), KvCache.forModel(text.config, blocks, BLOCK), withImage);
  const vocab = text.config.vocabSize;
  const prefill = buildBatch([{ tokenIds: ids, startPos: 0, blockTable, stateSlot: 0, wantLogits: true }], BLOCK);
  const rows = [runner.execute(plainPositions ? prefill : { ...prefill, ropePositions: rope }).slice(0, vocab)];
  inject = false;
  run.tokens.slice(0, -1).forEach((id, i) => {
    const p = plainPositions ? ids.length + i : nPast + i;
    const batch = buildBatch([{ tokenIds: [id], startPos: ids.length + i, blockTable, stateSlot: 0, wantLogits: true }], BLOCK);
    rows.push(runner.execute({ ...batch, ropePositions: Int32Array.of(p, p, p, p) }).slice(0, vocab));
  });
  return rows;
}

/**
 * |loom − llama.cpp| as a fraction of each step's logit range (the text fixtures' F16 bound is
 * 1e-3). Worst seen (2026-11-28, both kernel sets): 5.0e-4 with the F16 projector, 1.9e-3 with
 * the Q8_0 one, whose embeddings differ most from llama-mtmd-cli's (its encoder's flash
 * attention, K and V in f16, requantized in blocks of 32 by the next layer).
 */
const TOLERANCE: Record<string, number> = { 'mmproj-qwen3vl-f16': 1e-3, 'mmproj-qwen3vl-q8_0': 4e-3 };

for (const f of QWEN3VL_PROJECTOR_FIXTURES.filter((x) => x.weightType !== 'F32')) {
  describe(`${f.name} + ${f.text.name}: a prompt with an image, against llama.cpp's logits`, () => {
    const golden = JSON.parse(readFileSync(join(GOLDEN_DIR, 'vision', `generate-${f.name}.json`), 'utf8')) as { runs: Run[] };
    const text = loadModel(ggufFixturePath(f.text));
    const projector: VisionProjector & { dispose(): void } = loadProjector(qwen3vlFixturePath(f), text.config);
    after(() => {
      projector.dispose();
      text.dispose();
    });
    const embed = async (image: string, k: Kernels): Promise<Float32Array> => projector.encode([projector.prepare(await readTestImage(image))], k)[0]!;

    for (const [name, get, skip] of [['reference', () => referenceKernels, false], ['native', () => requireNative()!, nativeSkip()]] as const) {
      for (const run of golden.runs) {
        it(`${run.image} in ${JSON.stringify(run.prompt)} (${name} kernels)`, { skip }, async () => {
          const k = get();
          const { nPast } = layout(run.chunks);
          assert.equal(nPast, run.n_past, "the position after the prompt (mtmd's n_past)");
          const expected = run.logits.map(f32);
          const got = logits(text, k, run, await embed(run.image, k));
          const d = logitDistance(got, expected);
          const bound = TOLERANCE[f.name]!;
          assert.ok(d.worst <= bound, `step ${d.at}: ${d.worst.toExponential(2)} of the logit range > ${bound}`);
          assert.deepEqual(got.map((row) => row.indexOf(Math.max(...row))), run.tokens);
        });
      }

      it(`the comparison sees the positions and the image (${name} kernels)`, { skip }, async () => {
        // wrong positions or another image must move the logits several times further from
        // llama.cpp's than loom's own distance from them
        const k = get();
        const run = golden.runs.find((r) => r.image === 'wide-97x53.png' && r.prompt.includes('tell'))!;
        const expected = run.logits.map(f32);
        const own = logitDistance(logits(text, k, run, await embed(run.image, k)), expected).worst;
        const plain = logitDistance(logits(text, k, run, await embed(run.image, k), true), expected).worst;
        assert.ok(plain > 4 * own, `plain positions: ${plain.toExponential(2)}, loom's ${own.toExponential(2)}`);
        const other = logitDistance(logits(text, k, run, await embed('tall-23x31.png', k)), expected).worst;
        assert.ok(other > 4 * own, `another image: ${other.toExponential(2)}, loom's ${own.toExponential(2)}`);
      });
    }
  });
}
