// The weight type table: one row per ggml type, and the lookups that read it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GGMLType, WEIGHT_TYPES, blockGeometry, computeTypes, fileType, rowBytes, typeName, weightType } from '../../src/tensor/weight-types.js';

const ids = Object.values(GGMLType).filter((v): v is GGMLType => typeof v === 'number');

describe('the weight type table', () => {
  it('has one row per ggml type, keyed by its id and named as the enum names it', () => {
    assert.equal(WEIGHT_TYPES.size, ids.length);
    for (const id of ids) {
      const row = weightType(id);
      assert.ok(row, `no row for ${GGMLType[id]}`);
      assert.equal(row.type, id);
      assert.equal(row.name, GGMLType[id]);
      assert.equal(typeName(id), GGMLType[id]);
    }
    assert.equal(typeName(200 as GGMLType), 'type 200');
    assert.equal(weightType(200 as GGMLType), undefined);
  });

  it('geometry: as GGUF lays the types out', () => {
    assert.deepEqual([blockGeometry(GGMLType.Q4_K)!.blockSize, blockGeometry(GGMLType.Q4_K)!.typeSize], [256, 144]);
    assert.equal(rowBytes(GGMLType.Q4_K, 512), 288);
    assert.equal(rowBytes(GGMLType.Q8_0, 48), undefined);
    assert.equal(rowBytes(GGMLType.MXFP4, 64), 34);
    assert.equal(rowBytes(GGMLType.BF16, 3), 6);
  });

  it('the types loom computes with, each paired with an activation type that is a row of its own', () => {
    assert.deepEqual(computeTypes().map(typeName), ['F32', 'F16', 'BF16', 'Q8_0', 'Q4_0', 'Q4_1', 'Q5_0', 'Q5_1', 'IQ4_NL', 'Q2_K', 'Q3_K', 'Q4_K', 'Q5_K', 'Q6_K', 'IQ4_XS', 'MXFP4']);
    for (const id of computeTypes()) {
      const row = weightType(id)!;
      const act = weightType(row.compute!.activation)!;
      // a float type rounds x to itself; a block type to the 8-bit type of its own block size
      if (row.blockSize === 1) assert.equal(act.type, id);
      else assert.deepEqual([act.name, act.blockSize], [row.blockSize === 32 ? 'Q8_0' : 'Q8_K', row.blockSize]);
    }
  });

  it('a layout holds its file type\'s values in that type\'s block geometry, and is no file type loom computes with', () => {
    for (const [id, row] of WEIGHT_TYPES) {
      if (!row.layout) {
        assert.equal(fileType(id), id);
        continue;
      }
      assert.equal(fileType(id), row.layout.of);
      assert.equal(row.typeSize, weightType(row.layout.of)!.typeSize);
      assert.equal(row.blockSize, weightType(row.layout.of)!.blockSize);
      assert.equal(row.typeSize, 2 + row.layout.payload);
      assert.equal(row.compute, undefined);
    }
  });
});
