// The byte sequences of a code-point class against the platform's own UTF-8 (TextEncoder /
// a fatal TextDecoder): every code point in the class encodes to bytes the sequences match,
// and every byte string the sequences match decodes to one code point in the class.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { complementRanges, MAX_CODE_POINT, utf8Sequences } from '../../../../src/engine/grammar/lazy/utf8-ranges.js';
import type { ByteRangeSeq } from '../../../../src/engine/grammar/lazy/utf8-ranges.js';

const matches = (seqs: readonly ByteRangeSeq[], bytes: Uint8Array): boolean =>
  seqs.some((seq) => seq.length === bytes.length && seq.every(([lo, hi], k) => bytes[k]! >= lo && bytes[k]! <= hi));

const inRanges = (ranges: ReadonlyArray<readonly [number, number]>, cp: number): boolean => ranges.some(([lo, hi]) => cp >= lo && cp <= hi);

const CLASSES: Array<ReadonlyArray<readonly [number, number]>> = [
  [[0x20, 0x21], [0x23, 0x5b], [0x5d, MAX_CODE_POINT]], // JSON string characters
  [[0x41, 0x5a], [0xe9, 0xe9], [0x4e00, 0x4e10]],
  [[0x7f, 0x80], [0x7ff, 0x800], [0xfffe, 0x10001], [0xd7ff, 0xe000]], // the length and surrogate edges
  complementRanges([[0x00, 0x7f]]),
];

describe('UTF-8 byte sequences of code-point ranges', () => {
  for (const ranges of CLASSES) {
    it(`every code point of ${JSON.stringify(ranges).slice(0, 60)} encodes into the sequences, no other`, () => {
      const seqs = utf8Sequences(ranges);
      const enc = new TextEncoder();
      for (let cp = 0; cp <= MAX_CODE_POINT; cp += cp < 0x30000 ? 1 : 97) {
        if (cp >= 0xd800 && cp <= 0xdfff) continue;
        const bytes = enc.encode(String.fromCodePoint(cp));
        assert.equal(matches(seqs, bytes), inRanges(ranges, cp), `U+${cp.toString(16)}`);
      }
    });

    it(`every byte string the sequences of ${JSON.stringify(ranges).slice(0, 60)} match is one valid character`, () => {
      const dec = new TextDecoder('utf-8', { fatal: true });
      for (const seq of utf8Sequences(ranges)) {
        // the corners and a middle of each sequence's box
        for (const pick of [0, 1, 0.5]) {
          const bytes = Uint8Array.from(seq.map(([lo, hi]) => Math.round(lo + (hi - lo) * pick)));
          const text = dec.decode(bytes);
          assert.equal([...text].length, 1);
          assert.ok(inRanges(ranges, text.codePointAt(0)!), `${[...bytes]} → U+${text.codePointAt(0)!.toString(16)}`);
        }
      }
    });
  }

  it('no sequence for surrogates', () => {
    assert.deepEqual(utf8Sequences([[0xd800, 0xdfff]]), []);
  });
});
