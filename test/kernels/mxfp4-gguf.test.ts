// A GGUF file holding MXFP4 tensors (ggml type 39, as gpt-oss's experts and llama-quantize's
// MXFP4_MOE write them) loads: the writer lays it out, the reader maps its tensors with
// MXFP4's geometry and hands them to the kernels, whose matmul over it (and over one expert
// of a 3-D tensor, as the MoE layer views it) agrees with the reference's; and MXFP4 is among the types a refusal of another type lists.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { referenceKernels as ref } from '../../src/kernels/reference.js';
import { UnsupportedModelError } from '../../src/errors.js';
import { expertViews } from '../../src/model/arch/moe.js';
import { openGGUF } from '../../src/model/gguf.js';
import { writeGGUF } from '../../src/model/gguf-writer.js';
import { dequantizeTensorRow } from '../../src/tensor/quant/dequantize.js';
import { quantize } from '../../src/tensor/quant/quantize.js';
import { GGMLType } from '../../src/tensor/weight-types.js';
import { gaussian } from '../fixtures/random.js';
import { nativeSkip, requireNative } from '../fixtures/native.js';

const tmp = mkdtempSync(join(tmpdir(), 'loom-mxfp4-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

// gpt-oss's expert rows are 2880 values (90 blocks); experts stack as a third dimension
const K = 2880, N = 6, EXPERTS = 3;

describe('a GGUF file with MXFP4 tensors', () => {
  const experts = gaussian(K * N * EXPERTS, 39, 0.02);
  const expertBytes = quantize(GGMLType.MXFP4, experts, K);
  const down = gaussian(K * 5, 40, 0.02);
  const downBytes = quantize(GGMLType.MXFP4, down, K);
  const path = join(tmp, 'mxfp4.gguf');
  writeGGUF(path, {
    metadata: [],
    tensors: [
      { name: 'blk.0.ffn_gate_exps.weight', type: GGMLType.MXFP4, dims: [K, N, EXPERTS], data: expertBytes },
      { name: 'blk.0.attn_output.weight', type: GGMLType.MXFP4, dims: [K, 5], data: downBytes },
      { name: 'blk.0.ffn_up.weight', type: GGMLType.IQ2_XXS, dims: [256, 2], data: new Uint8Array(2 * 66) },
    ],
  });

  it('reads back with MXFP4 geometry (17 bytes a block of 32), its bytes as written', () => {
    const g = openGGUF(path);
    try {
      assert.equal(g.tensorInfos.get('blk.0.ffn_gate_exps.weight')!.byteLength, (K / 32) * 17 * N * EXPERTS);
      const t = g.get('blk.0.ffn_gate_exps.weight');
      assert.equal(t.type, GGMLType.MXFP4);
      assert.deepEqual(t.dims, [K, N, EXPERTS]);
      assert.deepEqual(new Uint8Array(t.data), expertBytes);
      // the last expert's last row dequantizes near what was quantized
      const row = dequantizeTensorRow(t, N * EXPERTS - 1);
      const x = experts.subarray(K * (N * EXPERTS - 1));
      let se = 0, sx = 0;
      for (let i = 0; i < K; i++) { se += (row[i]! - x[i]!) ** 2; sx += x[i]! ** 2; }
      assert.ok(Math.sqrt(se / sx) < 0.2, `relative RMS error ${Math.sqrt(se / sx)}`);
    } finally {
      g.close();
    }
  });

  it('refuses another type naming MXFP4 among the types loom runs', () => {
    const g = openGGUF(path);
    try {
      assert.throws(() => g.get('blk.0.ffn_up.weight'), (e: unknown) => e instanceof UnsupportedModelError && /IQ2_XXS.*loom runs .*MXFP4/.test(e.message));
    } finally {
      g.close();
    }
  });

  it('native matmul over the loaded tensor agrees with the reference', { skip: nativeSkip() }, () => {
    const native = requireNative()!;
    const g = openGGUF(path);
    try {
      // a 2-D tensor, and the last expert of the 3-D one as the MoE layer views it (arch/moe.ts)
      const last = expertViews(g.get('blk.0.ffn_gate_exps.weight'), EXPERTS)[EXPERTS - 1]!;
      for (const w of [g.get('blk.0.attn_output.weight'), last]) {
        const outF = w.dims[1]!;
        for (const rows of [1, 3, 12]) {
          const x = gaussian(rows * K, 41 + rows, 1);
          const want = new Float32Array(rows * outF), got = new Float32Array(rows * outF);
          ref.matmul(want, x, w, rows);
          native.matmul(got, x, w, rows);
          let worst = 0, scale = 0;
          for (let i = 0; i < want.length; i++) { worst = Math.max(worst, Math.abs(got[i]! - want[i]!)); scale = Math.max(scale, Math.abs(want[i]!)); }
          assert.ok(worst <= 2e-5 * scale, `${w.name} rows ${rows}: ${worst} of ${scale}`);
        }
      }
    } finally {
      g.close();
    }
  });
});
