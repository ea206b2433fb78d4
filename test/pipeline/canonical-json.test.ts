// Tool arguments in one key order: the schema's, then the rest sorted, at every depth.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { canonicalArguments } from '../../src/pipeline/canonical-json.js';

describe('canonicalArguments', () => {
  const schema = {
    type: 'object',
    properties: { command: { type: 'string' }, options: { type: 'object', properties: { cwd: {}, env: {} } }, files: { type: 'array', items: { type: 'object', properties: { path: {}, mode: {} } } } },
  };

  it("orders keys as the schema's properties, then the others sorted, in nested objects and arrays", () => {
    const a = canonicalArguments({ zeta: 1, files: [{ mode: 'r', path: 'a' }], alpha: 2, options: { env: {}, cwd: '/' }, command: 'ls' }, schema);
    assert.equal(JSON.stringify(a), '{"command":"ls","options":{"cwd":"/","env":{}},"files":[{"path":"a","mode":"r"}],"alpha":2,"zeta":1}');
  });

  it('gives the same text whatever order the keys came in; values are untouched', () => {
    const x = { command: 'ls', options: { cwd: '/', env: { B: '1', A: '2' } } };
    const y = { options: { env: { A: '2', B: '1' }, cwd: '/' }, command: 'ls' };
    assert.equal(JSON.stringify(canonicalArguments(x, schema)), JSON.stringify(canonicalArguments(y, schema)));
    assert.deepEqual(canonicalArguments(x, schema), x);
    assert.deepEqual(canonicalArguments([3, 'a', null], undefined), [3, 'a', null]);
    assert.equal(JSON.stringify(canonicalArguments({ b: 1, a: 2 })), '{"a":2,"b":1}');
  });
});
