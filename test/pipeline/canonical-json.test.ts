import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { canonicalJson, canonicalJsonValue } from '../../src/pipeline/canonical-json.js';

describe('canonical JSON (tool-call arguments)', () => {
  it('sorts every object\'s keys, keeps arrays in order, leaves scalars', () => {
    assert.equal(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } }), '{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}');
    assert.equal(canonicalJson(JSON.parse('{"unit":"C","city":"Paris"}')), canonicalJson(JSON.parse('{"city":"Paris","unit":"C"}')));
    assert.equal(canonicalJsonValue('x'), 'x');
    assert.deepEqual(canonicalJsonValue([2, 1]), [2, 1]);
  });
});
