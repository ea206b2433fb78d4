import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ResponseStore } from '../../src/server/responses-store.js';

describe('the Responses store', () => {
  it('evicts the least recently used past its count', () => {
    const s = new ResponseStore({ maxResponses: 2, maxBytes: 1e9 });
    s.put('a', { id: 'a' }, []);
    s.put('b', { id: 'b' }, []);
    assert.ok(s.get('a')); // a is now the most recent
    s.put('c', { id: 'c' }, []);
    assert.equal(s.size, 2);
    assert.equal(s.get('b'), undefined);
    assert.ok(s.get('a') && s.get('c'));
  });

  it('evicts past its bytes, but keeps the newest even alone; delete frees', () => {
    const big = [{ type: 'message', role: 'user', content: 'x'.repeat(1000) }];
    const s = new ResponseStore({ maxResponses: 10, maxBytes: 1500 });
    s.put('a', { id: 'a' }, big);
    s.put('b', { id: 'b' }, big);
    assert.equal(s.size, 1);
    assert.ok(s.get('b'));
    assert.equal(s.delete('b'), true);
    assert.equal(s.delete('b'), false);
    assert.equal(s.size, 0);
  });
});
