// The engine's side of "resolve once": assertSamplingParams checks what the frontend
// resolved and fills nothing in; the engine refuses an unresolved request as a frontend bug.
import assert from 'node:assert/strict';
import { AssertionError } from 'node:assert';
import { describe, it } from 'node:test';
import { EngineCore } from '../../src/engine/engine.js';
import { resolveEngineConfig } from '../../src/engine/options.js';
import { DEFAULT_SAMPLING_PARAMS, assertSamplingParams, resolveSamplingParams } from '../../src/engine/sampling-params.js';
import type { SamplingParams } from '../../src/engine/sampling-params.js';
import { InvalidArgumentError } from '../../src/errors.js';
import { referenceKernels } from '../../src/kernels/reference.js';
import { loadModel } from '../../src/model/load.js';
import { ggufFixturePath } from '../fixtures/index.js';
import { GGUF_FIXTURES } from '../fixtures/recipe.js';

describe('assertSamplingParams', () => {
  it('passes resolved parameters through as they are', () => {
    const p = resolveSamplingParams({ temperature: 0.5, logitBias: { '3': 1 }, n: 2 }, 10);
    assert.equal(assertSamplingParams(p, 10), p);
  });

  it('refuses an input form (a missing field) as an assertion, and bad values by name', () => {
    const partial = { temperature: 0, maxTokens: 4 } as unknown as SamplingParams;
    assert.throws(() => assertSamplingParams(partial), (e: unknown) => e instanceof AssertionError && /the engine takes resolved parameters/.test(e.message));
    const record = { ...DEFAULT_SAMPLING_PARAMS, logitBias: { '3': 1 } } as unknown as SamplingParams;
    assert.throws(() => assertSamplingParams(record), AssertionError);
    assert.throws(() => assertSamplingParams({ ...DEFAULT_SAMPLING_PARAMS, topP: 0 }), (e: unknown) => e instanceof InvalidArgumentError && e.param === 'top_p');
    assert.throws(() => assertSamplingParams({ ...DEFAULT_SAMPLING_PARAMS, stopTokenIds: [10] }, 10), (e: unknown) => e instanceof InvalidArgumentError && e.param === 'stop_token_ids');
  });

  it('the engine answers an unresolved request with a refusal, not a crash', () => {
    const m = loadModel(ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === 'llama-q8_0')!));
    const e = new EngineCore(m, referenceKernels, resolveEngineConfig({ model: '', kvCacheMemory: '16MiB' }, m.config, [...m.tokenizer.stopIds]));
    const refused = e.add({ type: 'add', id: 'raw', promptIds: Int32Array.from([1, 2]), params: { temperature: 0 } as unknown as SamplingParams, arrivalTime: 0 });
    assert.match(refused?.error ?? '', /resolved parameters/);
    assert.equal(e.hasWork, false);
  });
});
