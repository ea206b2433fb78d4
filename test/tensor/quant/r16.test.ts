// Q4_0 and Q8_0 interleaved by 16 rows (GGMLType.Q4_0_R16, Q8_0_R16): a layout is a
// rearrangement only (every row dequantizes to its plain row, the reference's products are the
// plain ones bit for bit), the native rewrite gives the TypeScript one's bytes, the native
// kernels agree with the reference on it at every row count, and a GGUF file's Q4_0 and Q8_0
// matrices are read into it where the native core has AVX2 or AVX-512 VNNI kernels.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { allocateLarge, nativeR16Interleaver } from '../../../src/kernels/native.js';
import { nativeSkip, requireNative } from '../../fixtures/native.js';
import { referenceKernels as ref } from '../../../src/kernels/reference.js';
import { GGMLType, fileType } from '../../../src/tensor/weight-types.js';
import { loadVector } from '../../../src/model/arch/architecture.js';
import { openGGUF } from '../../../src/model/gguf.js';
import { writeGGUF } from '../../../src/model/gguf-writer.js';
import { dequantizeTensorRow } from '../../../src/tensor/quant/dequantize.js';
import { interleaveR16, interleaved, r16TypeFor } from '../../../src/tensor/quant/r16.js';
import { RUN_SEED, matmulRelError, randomWeight, rngFor } from '../../fixtures/kernel-cases.js';

const seedNote = `(LOOM_TEST_SEED=${RUN_SEED})`;
const native = requireNative();
const interleaver = nativeR16Interleaver();
const LAYOUTS = [
  { plain: 'Q4_0', type: GGMLType.Q4_0_R16, fileType: GGMLType.Q4_0, blockBytes: 18 },
  { plain: 'Q8_0', type: GGMLType.Q8_0_R16, fileType: GGMLType.Q8_0, blockBytes: 34 },
] as const;

for (const L of LAYOUTS) {
  describe(`${L.plain} interleaved by 16 rows`, () => {
    it(`every row dequantizes to its ${L.plain} row, and the reference gives the ${L.plain} products bit for bit`, () => {
      const rng = rngFor(`r16 rows ${L.plain}`);
      const plain = randomWeight(rng, L.plain, 96, 48);
      const r16 = interleaved(plain);
      assert.equal(r16.type, L.type);
      assert.equal(r16.data.length, plain.data.length);
      assert.notDeepEqual(r16.data, plain.data);
      for (let o = 0; o < 48; o++) assert.deepEqual(dequantizeTensorRow(r16, o), dequantizeTensorRow(plain, o), `row ${o}`);
      const x = rng.fill(3 * 96, 1);
      const [a, b] = [new Float32Array(3 * 48), new Float32Array(3 * 48)];
      ref.matmul(a, x, plain, 3);
      ref.matmul(b, x, r16, 3);
      assert.deepEqual(b, a);
      const ids = Int32Array.from([0, 47, 16, 15]);
      const [ea, eb] = [new Float32Array(4 * 96), new Float32Array(4 * 96)];
      ref.embedRows(ea, plain, ids);
      ref.embedRows(eb, r16, ids);
      assert.deepEqual(eb, ea);
      assert.equal(fileType(L.type), L.fileType);
    });

    it(`only ${L.plain} matrices of whole groups of 16 rows take the layout`, () => {
      assert.equal(r16TypeFor(L.fileType, [64, 32]), L.type);
      assert.equal(r16TypeFor(L.fileType, [64, 40]), undefined);
      assert.equal(r16TypeFor(L.fileType, [64]), undefined);
      assert.throws(() => interleaveR16(L.type, new Uint8Array(L.blockBytes * 2 * 40), 64, 40), RangeError);
      assert.throws(() => interleaveR16(L.type, new Uint8Array(L.blockBytes * 2 * 16 + 1), 64, 16), RangeError);
    });

    describe('native', { skip: nativeSkip() }, () => {
      it('the native rewrite gives the TypeScript bytes', { skip: interleaver ? false : 'no AVX2 or AVX-512 VNNI kernels: tensors keep their layout' }, () => {
        const plain = randomWeight(rngFor(`r16 native rewrite ${L.plain}`), L.plain, 544, 64);
        const data = plain.data.slice();
        interleaver!(L.type, data, 544, 64);
        assert.deepEqual(data, interleaved(plain).data);
      });

      it('matmul agrees with the reference at 1 to 130 rows, embedRows exactly, on rows of 32 to 4128 values', () => {
        for (const [i, inF] of [32, 96, 544, 992, 4128].entries()) {
          for (const [j, rows] of [1, 2, 3, 8, 9, 17, 64, 130].entries()) {
            const outF = [16, 48, 144, 32][(i + j) % 4]!;
            const rng = rngFor(`r16 matmul ${L.plain} ${rows}x${inF}x${outF}`);
            const w = interleaved(randomWeight(rng, L.plain, inF, outF));
            const x = rng.fill(rows * inF, 1);
            const [expected, out] = [new Float32Array(rows * outF), new Float32Array(rows * outF).fill(NaN)];
            ref.matmul(expected, x, w, rows);
            native!.matmul(out, x, w, rows);
            const err = matmulRelError(out, expected, x, w, rows);
            assert.ok(err <= 2e-5, `rows ${rows}, ${inF} → ${outF}: error ${err.toExponential(2)} of Σ|w·x| ${seedNote}`);
            // a row's products are the same bits alone and in any batch
            const alone = new Float32Array(outF);
            native!.matmul(alone, x.subarray(0, inF), w, 1);
            assert.deepEqual(alone, out.subarray(0, outF), `row 0 alone and among ${rows}`);
          }
          const table = interleaved(randomWeight(rngFor(`r16 embed ${L.plain} ${inF}`), L.plain, inF, 32));
          const ids = Int32Array.from([0, 31, 16, 16, 5]);
          const [expected, out] = [new Float32Array(ids.length * inF), new Float32Array(ids.length * inF)];
          ref.embedRows(expected, table, ids);
          native!.embedRows(out, table, ids);
          assert.deepEqual(out, expected);
        }
      });

      it('writes an LM head-wide output (rows 64 KB apart, streamed when 64-byte aligned) as the reference does', () => {
        const [inF, outF, rows] = [64, 16400, 5]; // a last group without a pair; a pass of 4 rows and one of 1
        const rng = rngFor(`r16 wide ${L.plain}`);
        const w = interleaved(randomWeight(rng, L.plain, inF, outF));
        const x = rng.fill(rows * inF, 1);
        const expected = new Float32Array(rows * outF);
        ref.matmul(expected, x, w, rows);
        const aligned = new Float32Array(allocateLarge(4 * rows * outF)).fill(NaN);
        const unaligned = new Float32Array(rows * outF + 1).fill(NaN).subarray(1);
        native!.matmul(aligned, x, w, rows);
        native!.matmul(unaligned, x, w, rows);
        const err = matmulRelError(aligned, expected, x, w, rows);
        assert.ok(err <= 2e-5, `error ${err.toExponential(2)} of Σ|w·x| ${seedNote}`);
        assert.deepEqual(aligned, unaligned, 'streamed and plain stores give the same bits');
      });

      it('refuses an interleaved tensor whose rows are not whole groups of 16', () => {
        const w = interleaved(randomWeight(rngFor(`r16 bad ${L.plain}`), L.plain, 64, 32));
        const cut = { ...w, dims: [64, 24], data: w.data.subarray(0, 2 * L.blockBytes * 24) };
        assert.throws(() => native!.matmul(new Float32Array(24), new Float32Array(64), cut, 1), RangeError);
        assert.throws(() => native!.embedRows(new Float32Array(64), cut, Int32Array.from([0])), RangeError);
      });
    });
  });
}

describe('reading a GGUF file into layouts interleaved by 16 rows', () => {
  const dir = mkdtempSync(join(tmpdir(), 'loom-r16-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const rng = rngFor('r16 gguf');
  const q4 = randomWeight(rng, 'Q4_0', 64, 32);
  const q8 = randomWeight(rng, 'Q8_0', 64, 16);
  const ragged = randomWeight(rng, 'Q4_0', 64, 40);
  const k = randomWeight(rng, 'Q4_K', 256, 16);
  const path = join(dir, 'mixed.gguf');
  writeGGUF(path, {
    metadata: [],
    tensors: [
      { name: 'q4', type: GGMLType.Q4_0, dims: [64, 32], data: q4.data },
      { name: 'q8', type: GGMLType.Q8_0, dims: [64, 16], data: q8.data },
      { name: 'ragged', type: GGMLType.Q4_0, dims: [64, 40], data: ragged.data },
      { name: 'k', type: GGMLType.Q4_K, dims: [256, 16], data: k.data },
    ],
  });
  const interleaving = (): ReturnType<typeof openGGUF> => openGGUF(path, undefined, interleaveR16);

  it('Q4_0 and Q8_0 matrices of whole groups are read interleaved when an interleaver is given, the others as they are', () => {
    const file = interleaving();
    try {
      assert.equal(file.get('q4').type, GGMLType.Q4_0_R16);
      assert.deepEqual(file.get('q4').data, interleaved(q4).data);
      assert.equal(file.get('q8').type, GGMLType.Q8_0_R16);
      assert.deepEqual(file.get('q8').data, interleaved(q8).data);
      assert.equal(file.get('ragged').type, GGMLType.Q4_0);
      assert.deepEqual(file.get('ragged').data, ragged.data);
      assert.equal(file.get('k').type, GGMLType.Q4_K);
    } finally {
      file.close();
    }
    const plain = openGGUF(path);
    const r16 = interleaving();
    try {
      assert.equal(plain.get('q4').type, GGMLType.Q4_0);
      // a whole tensor widened to f32 reads the same values from either layout
      for (const name of ['q4', 'q8']) assert.deepEqual(loadVector(r16, name), loadVector(plain, name), name);
    } finally {
      r16.close();
      plain.close();
    }
  });

  it('a file that claims an in-memory layout as a tensor type is refused', () => {
    const bad = join(dir, 'claims-r16.gguf');
    writeGGUF(bad, { metadata: [], tensors: [{ name: 'w', type: GGMLType.Q8_0_R16, dims: [64, 16], data: new Uint8Array(68 * 16) }] });
    const file = openGGUF(bad);
    try {
      assert.throws(() => file.get('w'), /type Q8_0_R16, which loom does not support/);
    } finally {
      file.close();
    }
  });
});
