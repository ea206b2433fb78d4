// Random quantized blocks (`loom bench make-model --weights blocks`): every value finite, the
// requested RMS, the same bytes for the same seed, whole blocks per chunk; a file made of them
// loads in loom and gives finite, spread logits, and with LOOM_LLAMA_SERVER=<llama-server binary>
// llama-server's greedy tokens on it. (A 2-layer gpt-oss-20b MXFP4_MOE file made this way was
// checked by hand: llama-server loads it and greedy text matches loom's.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeGGUFStream } from '../../src/bench/gguf-stream.js';
import { startLlamaServer } from '../../src/bench/llama-server.js';
import { benchModelPath, makeModel } from '../../src/bench/make-model.js';
import { defaultBenchWeights } from '../../src/bench/bench-types.js';
import { hasRandomBlocks, randomBlockRows } from '../../src/bench/random-blocks.js';
import { referenceKernels } from '../../src/kernels/reference.js';
import { loadModel } from '../../src/model/load.js';
import { openGGUF } from '../../src/model/gguf.js';
import { dequantizeRow } from '../../src/tensor/quant/dequantize.js';
import { GGMLType, rowBytes, typeName } from '../../src/tensor/weight-types.js';
import { runGreedy } from '../fixtures/engine-run.js';

const TYPES = [GGMLType.Q8_0, GGMLType.Q4_0, GGMLType.Q5_0, GGMLType.Q5_1, GGMLType.Q4_K, GGMLType.Q5_K, GGMLType.Q6_K, GGMLType.MXFP4];

function joined(chunks: Iterable<Uint8Array>): Uint8Array {
  return Buffer.concat([...chunks].map((c) => Buffer.from(c)));
}

for (const type of TYPES) {
  test(`random blocks ${typeName(type)}: finite values of the requested RMS, seeded`, () => {
    const rowLength = 512;
    const rows = 64;
    for (const std of [1, 1 / Math.sqrt(2880)]) {
      const bytes = joined(randomBlockRows(type, rowLength, rows, std, 7)!);
      assert.equal(bytes.length, rowBytes(type, rowLength)! * rows);
      const values = new Float32Array(rowLength * rows);
      for (let r = 0; r < rows; r++) dequantizeRow(type, bytes, r * rowBytes(type, rowLength)!, rowLength, values, r * rowLength);
      let sum = 0;
      for (const x of values) {
        assert.ok(Number.isFinite(x));
        sum += x * x;
      }
      const rms = Math.sqrt(sum / values.length);
      // MXFP4's scale is a power of two: within √2; an f16 scale: within a few percent
      const tolerance = type === GGMLType.MXFP4 ? Math.SQRT2 : 1.1;
      assert.ok(rms > std / tolerance && rms < std * tolerance, `${typeName(type)} std ${std}: RMS ${rms}`);
    }
    assert.deepEqual(joined(randomBlockRows(type, rowLength, rows, 0.1, 7)!), joined(randomBlockRows(type, rowLength, rows, 0.1, 7)!));
    assert.notDeepEqual(joined(randomBlockRows(type, rowLength, rows, 0.1, 7)!), joined(randomBlockRows(type, rowLength, rows, 0.1, 8)!));
  });
}

test('random blocks: Q8_0 has no −128 codes; MXFP4 exponents sit in a narrow band; rows of partial blocks and F16 are refused', () => {
  const q8 = joined(randomBlockRows(GGMLType.Q8_0, 256, 256, 0.05, 1)!);
  for (let p = 0; p < q8.length; p += 34) for (let j = 2; j < 34; j++) assert.notEqual(q8[p + j], 0x80);
  const mx = joined(randomBlockRows(GGMLType.MXFP4, 256, 256, 0.05, 1)!);
  const exponents = new Set<number>();
  for (let p = 0; p < mx.length; p += 17) exponents.add(mx[p]!);
  assert.equal(exponents.size, 2);
  assert.equal(randomBlockRows(GGMLType.Q4_K, 576, 4, 0.1, 1), undefined);
  assert.equal(hasRandomBlocks(GGMLType.F16), false);
  assert.equal(randomBlockRows(GGMLType.F16, 64, 4, 0.1, 1), undefined);
});

test('random blocks stream in chunks of whole blocks, and writeGGUFStream writes chunked tensors as one', (t) => {
  const rowLength = 2880;
  const rows = 2880; // 259200 MXFP4 blocks: several chunks
  const chunks = [...randomBlockRows(GGMLType.MXFP4, rowLength, rows, 0.02, 3)!];
  assert.ok(chunks.length > 1);
  for (const c of chunks) assert.equal(c.length % 17, 0);
  const dir = mkdtempSync(join(tmpdir(), 'loom-blocks-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'chunked.gguf');
  const bias = Float32Array.from({ length: 3 }, (_, i) => i);
  writeGGUFStream(path, [], [
    { name: 'experts', type: GGMLType.MXFP4, dims: [rowLength, rows], produce: () => randomBlockRows(GGMLType.MXFP4, rowLength, rows, 0.02, 3)! },
    { name: 'bias', type: GGMLType.F32, dims: [3], produce: () => new Uint8Array(bias.buffer) },
  ]);
  const file = openGGUF(path);
  try {
    assert.deepEqual(Buffer.from(file.get('experts').data), Buffer.concat(chunks));
    assert.deepEqual(new Float32Array(Uint8Array.from(file.get('bias').data).buffer), bias);
  } finally {
    file.close();
  }
});

const llamaServer = process.env.LOOM_LLAMA_SERVER;

test('make-model --weights blocks: a Q4_K_M-mix file of random blocks loads in loom and gives finite, spread logits (and llama-server\'s greedy tokens, with LOOM_LLAMA_SERVER)', async (t) => {
  assert.equal(defaultBenchWeights('mxfp4_moe'), 'blocks');
  assert.equal(defaultBenchWeights('q4_k_m'), 'quantized');
  const options = { shape: 'smollm2-135m', type: 'q4_k_m', seed: 0, layers: 2, weights: 'blocks' } as const;
  assert.match(benchModelPath('/x', options), /-q4_k_m-blocks-s0-/);
  const dir = mkdtempSync(join(tmpdir(), 'loom-blocks-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'model.gguf');
  makeModel(path, options);
  const model = loadModel(path);
  try {
    const run = runGreedy(model, referenceKernels, [1, 2, 3, 4], 2);
    assert.equal(run.tokens.length, 2);
    for (const row of run.logits) {
      let sum = 0;
      let sq = 0;
      for (const x of row) {
        assert.ok(Number.isFinite(x));
        sum += x;
        sq += x * x;
      }
      const sd = Math.sqrt(sq / row.length - (sum / row.length) ** 2);
      assert.ok(sd > 0.1 && sd < 1e3, `logits' spread ${sd}`);
    }
    if (llamaServer) {
      const server = await startLlamaServer(llamaServer, path, { threads: 1, parallel: 1, slotContext: 64 }, () => {});
      try {
        const res = await fetch(`${server.url}/completion`, { method: 'POST', body: JSON.stringify({ prompt: [1, 2, 3, 4], n_predict: 2, temperature: 0, return_tokens: true }) });
        const body = (await res.json()) as { tokens: number[] };
        assert.deepEqual(body.tokens, run.tokens);
      } finally {
        await server.stop();
      }
    }
  } finally {
    model.dispose();
  }
});
