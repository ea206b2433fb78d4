// The EBNF notation loom's schema compiler writes, parsed into expressions.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EbnfSyntaxError, parseEbnf } from '../../../../src/engine/grammar/lazy/ebnf.js';

describe('parseEbnf', () => {
  it('reads rules, literals with escapes, classes, groups and repetitions', () => {
    const rules = parseEbnf('root ::= "a\\"\\u00e9" [^"\\\\\\0-\\x1f] (x | "y")* x{2,3} x? x+ x{4} x{1,}\nx ::= [a-c\\-] ""');
    assert.deepEqual([...rules.keys()], ['root', 'x']);
    const root = rules.get('root')!;
    assert.equal(root.kind, 'seq');
    if (root.kind !== 'seq') return;
    assert.deepEqual(root.items[0], { kind: 'bytes', bytes: [0x61, 0x22, 0xc3, 0xa9] });
    assert.deepEqual(root.items[1], { kind: 'class', ranges: [[0x20, 0x21], [0x23, 0x5b], [0x5d, 0x10ffff]] });
    assert.equal(root.items[2]!.kind, 'repeat');
    assert.deepEqual(
      root.items.slice(3).map((e) => (e.kind === 'repeat' ? [e.min, e.max] : e.kind)),
      [
        [2, 3],
        [0, 1],
        [1, Infinity],
        [4, 4],
        [1, Infinity],
      ],
    );
    assert.deepEqual(rules.get('x'), { kind: 'seq', items: [{ kind: 'class', ranges: [[0x2d, 0x2d], [0x61, 0x63]] }, { kind: 'bytes', bytes: [] }] });
  });

  it('reads a lookahead assertion as nothing', () => {
    assert.deepEqual(parseEbnf('root ::= "a" (= [,}])').get('root'), { kind: 'seq', items: [{ kind: 'bytes', bytes: [0x61] }, { kind: 'seq', items: [] }] });
  });

  it('refuses what it does not know, naming where', () => {
    assert.throws(() => parseEbnf('root ::= missing'), EbnfSyntaxError);
    assert.throws(() => parseEbnf('root ::= "open'), /unterminated string/);
    assert.throws(() => parseEbnf('root ::= x{3,1}\nx ::= "a"'), /max below min/);
    assert.throws(() => parseEbnf('root ::= %'), /unexpected "%" at offset 9/);
  });
});
