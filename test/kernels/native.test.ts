// src/kernels/native.ts: the addon the tests run loads, and is the whole native core (its own
// matmul, not the reference standing in). Without it this fails, so a run never passes by
// skipping the native tests, unless it says it means to (LOOM_TEST_WITHOUT_NATIVE=1).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cpuFeatures, loadNativeKernels, nativeHasMatmul, nativeUnavailableReason } from '../../src/kernels/native.js';
import { WITHOUT_NATIVE } from '../fixtures/native.js';

describe('the native core', { skip: WITHOUT_NATIVE && nativeUnavailableReason() !== undefined ? 'LOOM_TEST_WITHOUT_NATIVE=1' : false }, () => {
  it('loads (build it with npm run build:native, or set LOOM_TEST_WITHOUT_NATIVE=1 to test the reference alone)', () => {
    assert.equal(nativeUnavailableReason(), undefined, `the native core does not load: ${nativeUnavailableReason()}`);
    assert.equal(loadNativeKernels()?.name, 'native');
    assert.ok(nativeHasMatmul());
    assert.match(cpuFeatures()!.kernels, /^(avx512|avx2|portable)$/);
  });
});
