// The vocabulary trie in depth-first order: against the tokens themselves.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TokenTrie } from '../../../../src/engine/grammar/lazy/token-trie.js';

describe('TokenTrie', () => {
  const words = ['ab', 'a', 'abc', 'b', '', 'ab', 'ba', 'é'];
  const tokens = words.map((w) => Buffer.from(w, 'utf8'));
  const trie = new TokenTrie(tokens);

  it('each node spells a prefix; its subtree holds exactly the tokens that start with it', () => {
    const spell = (i: number): number[] => {
      const path: number[] = [];
      for (let j = 0; j <= i; j++) if (j > 0 && trie.subtreeEnd[j]! > i) path[trie.depth[j]! - 1] = trie.byte[j]!;
      return path.slice(0, trie.depth[i]);
    };
    for (let i = 1; i < trie.nodes; i++) {
      const prefix = Buffer.from(spell(i));
      const below = [...trie.tokenIds.subarray(trie.tokenStart[i]!, trie.tokenStart[trie.subtreeEnd[i]!]!)].sort();
      const expected = tokens.map((t, id) => (t.length > 0 && t.subarray(0, prefix.length).equals(prefix) ? id : -1)).filter((id) => id >= 0).sort();
      assert.deepEqual(below, expected, prefix.toString('latin1'));
      const here = [...trie.tokenIds.subarray(trie.tokenStart[i]!, trie.tokenStart[i + 1]!)].sort();
      assert.deepEqual(here, tokens.map((t, id) => (t.equals(prefix) ? id : -1)).filter((id) => id >= 0).sort());
    }
  });

  it('leaves empty tokens out; depth is the longest token', () => {
    assert.equal(trie.tokenIds.length, words.length - 1);
    assert.equal(trie.maxDepth, 3);
  });
});
