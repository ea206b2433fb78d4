// The weight types beyond Q8_0/Q4_0/Q4_K/Q6_K: dequantization against gguf-py's numpy
// dequantizers (llama.cpp's own Python, run once over random blocks to write
// fixtures/dequant-goldens.json), quantize → dequantize error bounds, and activation rounding.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { GGMLType, blockGeometry } from '../../../src/tensor/weight-types.js';
import { dequantizeRow } from '../../../src/tensor/quant/dequantize.js';
import { roundActivations } from '../../../src/tensor/quant/q8-activations.js';
import { quantize } from '../../../src/tensor/quant/quantize.js';
import { PROJECT_ROOT } from '../../fixtures/index.js';
import { gaussian } from '../../fixtures/random.js';

const NEW_TYPES = ['Q4_1', 'Q5_0', 'Q5_1', 'IQ4_NL', 'Q2_K', 'Q3_K', 'Q5_K', 'IQ4_XS', 'MXFP4'] as const;

describe('new weight types', () => {
  const goldens = JSON.parse(readFileSync(join(PROJECT_ROOT, 'test', 'fixtures', 'dequant-goldens.json'), 'utf8')) as Record<
    string,
    { blocks: string; values: string; floats?: string; quantized?: string }
  >;
  for (const name of NEW_TYPES) {
    it(`${name}: random blocks dequantize bit for bit as gguf-py does`, () => {
      const g = goldens[name]!;
      const blocks = new Uint8Array(Buffer.from(g.blocks, 'base64'));
      const want = new Float32Array(new Uint8Array(Buffer.from(g.values, 'base64')).buffer);
      const got = new Float32Array(want.length);
      dequantizeRow(GGMLType[name], blocks, 0, want.length, got, 0);
      assert.deepEqual(got, want);
    });
  }

  it('MXFP4: random rows quantize byte for byte as gguf-py does (ggml’s quantize_row_mxfp4_ref)', () => {
    const g = goldens['MXFP4']!;
    const x = new Float32Array(new Uint8Array(Buffer.from(g.floats!, 'base64')).buffer);
    const want = new Uint8Array(Buffer.from(g.quantized!, 'base64'));
    assert.deepEqual(quantize(GGMLType.MXFP4, x, x.length), want);
  });

  it('round trip within each type’s bound on random rows', () => {
    const rows = 4, n = 512;
    const x = gaussian(rows * n, 99, 0.05);
    const y = new Float32Array(rows * n);
    // relative RMS error: about step/√12 over the data's RMS (2-bit levels are coarse)
    const bound: Record<(typeof NEW_TYPES)[number], number> = {
      Q4_1: 0.1, Q5_0: 0.05, Q5_1: 0.05, IQ4_NL: 0.1, Q2_K: 0.35, Q3_K: 0.2, Q5_K: 0.04, IQ4_XS: 0.1, MXFP4: 0.2,
    };
    for (const name of NEW_TYPES) {
      const bytes = quantize(GGMLType[name], x, n);
      assert.equal(bytes.length, (rows * n / blockGeometry(GGMLType[name])!.blockSize) * blockGeometry(GGMLType[name])!.typeSize);
      dequantizeRow(GGMLType[name], bytes, 0, rows * n, y, 0);
      let se = 0, sx = 0;
      for (let i = 0; i < x.length; i++) {
        se += (x[i]! - y[i]!) ** 2;
        sx += x[i]! ** 2;
      }
      const rel = Math.sqrt(se / sx);
      assert.ok(rel <= bound[name], `${name} relative RMS error ${rel} > ${bound[name]}`);
      assert.ok(rel > 0.001, `${name}: a lossy type that lost nothing (${rel})`);
    }
  });

  it('round activations as llama.cpp’s vec_dot_type: Q8_0 for 32-blocks, Q8_K for K-quants and IQ4_XS', () => {
    const x = gaussian(512, 7, 1);
    const ref0 = new Float32Array(512), refK = new Float32Array(512), got = new Float32Array(512);
    roundActivations(GGMLType.Q8_0, x, 512, ref0);
    roundActivations(GGMLType.Q4_K, x, 512, refK);
    assert.notDeepEqual(ref0, refK);
    for (const name of NEW_TYPES) {
      roundActivations(GGMLType[name], x, 512, got);
      assert.deepEqual(got, blockGeometry(GGMLType[name])!.blockSize === 32 ? ref0 : refK, name);
    }
  });
});
