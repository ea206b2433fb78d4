// `loom bench liveness` end to end on a fixture, small: every scenario gets the answer it
// should (the byte refusal a 400, the rest 200) with /health probed and a side stream
// running meanwhile, and the memory check refuses every prompt. No figure is asserted.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatLivenessReport, runLiveness } from '../../src/bench/liveness.js';
import { ggufFixturePath } from '../fixtures/index.js';
import { GGUF_FIXTURES } from '../fixtures/recipe.js';

describe('loom bench liveness', () => {
  it('runs every scenario against loom serve and reports the heap around refused prompts', async () => {
    const model = ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === 'llama-q8_0')!);
    const report = await runLiveness({ model, poolSize: 1, promptBytes: 64 * 1024, fanOut: 20, refusedPrompts: 3 }, () => {});
    assert.deepEqual(report.scenarios.map((s) => s.status), [200, 400, 200, 200, 200, 200]);
    for (const s of report.scenarios) assert.ok(s.probes >= 1 && Number.isFinite(s.healthMaxMs), s.name);
    assert.equal(report.memory.refused, 3);
    assert.ok(report.memory.heapAfterBytes > 0);
    assert.match(formatLivenessReport(report), /refused 4 MiB prompts/);
  });
});
