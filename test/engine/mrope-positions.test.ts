// Qwen's M-RoPE positions for a batch with images, against positions worked out by hand from
// llama.cpp's rules (mtmd_image_tokens_get_decoder_pos: token i of an image at p0 with nx
// columns is t = p0, y = p0 + i / nx, x = p0 + i % nx, z = 0; mtmd_image_tokens_get_n_pos:
// the text after it goes on from p0 + max(nx, ny); a text token's (p, p, p, p)).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { spansOf } from '../../src/engine/image-spans.js';
import { mropePositions, textRopePosition } from '../../src/engine/mrope-positions.js';
import { tokenImage } from '../fixtures/token-projector.js';

describe('M-RoPE positions', () => {
  // text 0..2, an image of 2 rows × 3 columns at 3..8, text 9.., a 1 × 2 image at 11..12, text 13..
  const spans = spansOf([tokenImage([1, 2, 3, 4, 5, 6], 3, 2), tokenImage([7, 8], 11, 1)]);

  it('text after an image goes on from its first position plus max(rows, cols)', () => {
    assert.deepEqual([0, 1, 2, 3, 9, 10, 11, 13, 14].map((i) => textRopePosition(spans, i)), [0, 1, 2, 3, 6, 7, 8, 10, 11]);
  });

  it('a batch of two sequences, one with images (a chunk from index 2 to 13) and one without', () => {
    const positions = Int32Array.from([2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, /* second */ 5, 6]);
    const seqStarts = Int32Array.from([0, 12, 14]);
    const got = mropePositions({ positions, seqStarts }, [spans, []]);
    const n = positions.length;
    const section = (k: number) => [...got.subarray(k * n, (k + 1) * n)];
    //                    2  [  image 3..8, p0 = 3   ]  9  10 [11 12: p0 = 8] 13 | 5  6
    assert.deepEqual(section(0), [2, 3, 3, 3, 3, 3, 3, 6, 7, 8, 8, 10, 5, 6]); // t
    assert.deepEqual(section(1), [2, 3, 3, 3, 4, 4, 4, 6, 7, 8, 8, 10, 5, 6]); // h (row)
    assert.deepEqual(section(2), [2, 3, 4, 5, 3, 4, 5, 6, 7, 8, 9, 10, 5, 6]); // w (column)
    assert.deepEqual(section(3), [2, 0, 0, 0, 0, 0, 0, 6, 7, 0, 0, 10, 5, 6]); // e
  });
});
