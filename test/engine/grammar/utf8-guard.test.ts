// The grammar's UTF-8 guard against an independent reference, the WHATWG decoder
// (TextDecoder with fatal: true): on a byte-level vocabulary (one token per byte), a lead
// byte may be followed by a second byte exactly when some completion of the pair decodes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Utf8Guard } from '../../../src/engine/grammar/utf8-guard.js';

const decoder = new TextDecoder('utf-8', { fatal: true });
const decodes = (bytes: number[]) => {
  try {
    decoder.decode(new Uint8Array(bytes));
    return true;
  } catch {
    return false;
  }
};
/** the byte count of the sequence a lead byte starts (by its high bits) */
const lengthOf = (lead: number) => (lead < 0x80 ? 1 : lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2);
const allowed = (mask: Int32Array, id: number) => (mask[id >> 5]! & (1 << (id & 31))) !== 0;

describe('UTF-8 guard of grammar masks', () => {
  const tokens = Array.from({ length: 256 }, (_, b) => Uint8Array.of(b));
  tokens.push(Uint8Array.of(0x68, 0xe0, 0x80), Uint8Array.of(0x68, 0xe0, 0xa0, 0x80), Uint8Array.of(0x68, 0xf4)); // 256, 257, 258
  const guard = new Utf8Guard(tokens, Math.ceil(tokens.length / 32));

  it('a second byte is allowed after a lead exactly when the pair can be completed into valid UTF-8', () => {
    for (let lead = 0xc0; lead <= 0xff; lead++) {
      const leadOk = allowed(guard.valid, lead);
      for (let second = 0x80; second <= 0xbf; second++) {
        const n = lengthOf(lead);
        const ref = decodes([lead, second, ...Array<number>(Math.max(0, n - 2)).fill(0x80)]);
        const mask = new Int32Array(guard.valid);
        const pending = guard.leadAfter(lead);
        if (pending) guard.restrictAfter(pending, mask);
        assert.equal(leadOk && allowed(mask, second), ref, `${lead.toString(16)} ${second.toString(16)}`);
      }
    }
  });

  it('tokens holding an invalid pair are never allowed; a token ending on a lead restricts the next', () => {
    assert.equal(allowed(guard.valid, 256), false);
    assert.equal(allowed(guard.valid, 257), true);
    assert.equal(guard.leadAfter(258), 0xf4);
    assert.equal(guard.leadAfter(257), 0);
    const mask = new Int32Array(guard.valid);
    guard.restrictAfter(0xf4, mask);
    assert.deepEqual([0x8f, 0x90, 0x41].map((b) => allowed(mask, b)), [true, false, false]);
  });
});
