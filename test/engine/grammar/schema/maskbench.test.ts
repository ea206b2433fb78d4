// MaskBench (loom bench grammar's method) over the corpus fixtures, with a byte vocabulary
// (token i = byte i, fast to compile): the counts may only get better. A valid instance must
// pass the mask token by token, an invalid one must be stopped; refusals name the keyword.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { runGrammarBench } from '../../../../src/bench/grammar.js';
import { PROJECT_ROOT } from '../../../fixtures/index.js';

const STOP = 256;
const bytes = {
  vocabSize: 257,
  stopIds: new Set([STOP]),
  isSpecial: (id: number) => id === STOP,
  tokenBytes: (id: number) => (id < 256 ? Uint8Array.of(id) : new Uint8Array(0)),
  encode: (text: string) => [...Buffer.from(text, 'utf8')],
};

describe('MaskBench on the corpus fixtures', () => {
  it('passing, compile, validation and invalidation errors do not go back', async () => {
    const r = await runGrammarBench({ dir: join(PROJECT_ROOT, 'test', 'fixtures', 'jsonschema'), separators: 'compact', timeoutMs: 600_000 }, undefined, bytes);
    const failing = r.results.filter((x) => x.outcome !== 'pass').map((x) => `${x.file}: ${x.outcome} ${x.detail ?? ''}`.slice(0, 300));
    assert.equal(r.schemas, 63);
    assert.equal(r.invalidationErrors, 0, failing.join('\n'));
    assert.ok(r.validationErrors <= MAX_VALIDATION, failing.join('\n'));
    assert.ok(r.passing >= MIN_PASSING, `${r.passing} passing:\n${failing.join('\n')}`);
    for (const x of r.results) if (x.outcome === 'compile') assert.match(x.detail ?? '', /\(at #[^)]*\)/, x.file);
  });
});

/** the results at the commit that set them (docs/benchmarks.md has the whole set's) */
const MIN_PASSING = 59;
const MAX_VALIDATION = 0;
