// Stop strings over streamed text, against the obvious reference (the whole text cut at
// the earliest occurrence of any stop string), for random texts split at random points:
// what is emitted never includes a stop string or anything after it, and all of the text
// before it comes out, however the pieces fall.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Rng } from '../../src/engine/rng.js';
import { StopStringMatcher } from '../../src/pipeline/stop-strings.js';

function reference(text: string, stops: readonly string[]): { text: string; stop?: string } {
  let cut = -1;
  let hit: string | undefined;
  for (const s of stops) {
    const at = text.indexOf(s);
    if (at >= 0 && (cut < 0 || at < cut || (at === cut && s.length < hit!.length))) {
      cut = at;
      hit = s;
    }
  }
  return cut < 0 ? { text } : { text: text.slice(0, cut), stop: hit! };
}

function run(pieces: readonly string[], stops: readonly string[]): { text: string; stop?: string } {
  const m = new StopStringMatcher(stops);
  let out = '';
  for (const p of pieces) {
    const r = m.push(p);
    out += r.text;
    if (r.stopped) return { text: out, stop: r.stop! };
  }
  return { text: out + m.flush() };
}

describe('StopStringMatcher', () => {
  it('holds back a possible start, releases it when it is not one', () => {
    const m = new StopStringMatcher(['END']);
    assert.deepEqual(m.push('abc E'), { text: 'abc ', stopped: false });
    assert.deepEqual(m.push('N'), { text: '', stopped: false });
    assert.deepEqual(m.push('x'), { text: 'ENx', stopped: false });
    assert.deepEqual(m.push('..EN'), { text: '..', stopped: false });
    assert.deepEqual(m.push('D and more'), { text: '', stopped: true, stop: 'END' });
  });

  it('agrees with the reference on random texts, stops and splits', () => {
    const rng = new Rng(42);
    const alphabet = 'ab c\n';
    const word = (n: number) => Array.from({ length: n }, () => alphabet[Math.floor(rng.next() * alphabet.length)]).join('');
    for (let trial = 0; trial < 3000; trial++) {
      const text = word(1 + Math.floor(rng.next() * 40));
      const stops = Array.from({ length: 1 + Math.floor(rng.next() * 3) }, () => word(1 + Math.floor(rng.next() * 4)));
      const pieces: string[] = [];
      for (let at = 0; at < text.length; ) {
        const len = Math.floor(rng.next() * 6); // empty pieces too (a token that adds no text yet)
        pieces.push(text.slice(at, at + len));
        at += len;
      }
      const want = reference(text, stops);
      const got = run(pieces, stops);
      assert.equal(got.text, want.text, `text ${JSON.stringify(text)} stops ${JSON.stringify(stops)} pieces ${JSON.stringify(pieces)}`);
      assert.equal(got.stop === undefined, want.stop === undefined);
      if (got.stop !== undefined) assert.ok(text.slice(want.text.length).startsWith(got.stop), 'the reported stop string is the one found there');
    }
  });
});
