// The native core picks its kernels (matmul, norms, activations, attention) from the CPU's
// features (AVX-512, AVX2, portable), so on one machine the suite would only see the widest.
// This runs the conformance suite again with the wider ones switched off (LOOM_NO_SIMD), so
// every path that some user's CPU takes is checked against the reference here too.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadNativeKernels, nativeUnavailableReason } from '../../src/kernels/native.js';
import { PROJECT_ROOT } from '../fixtures/index.js';

const SUITE = ['conformance.test.js', 'sliding-window.test.js', 'recurrent.test.js'].map((f) => join(PROJECT_ROOT, 'dist', 'test', 'kernels', f));
const skip = loadNativeKernels() ? false : `native core unavailable (${nativeUnavailableReason()})`;

describe('conformance on the narrower instruction sets', { skip }, () => {
  for (const off of ['avx512', '1']) {
    it(`LOOM_NO_SIMD=${off}: every kernel still agrees with the reference`, () => {
      // a child `node --test` reports to a parent runner instead of printing when it sees
      // NODE_TEST_CONTEXT: drop it, so the child prints its own TAP
      const { NODE_TEST_CONTEXT: _, ...env } = process.env;
      const r = spawnSync(process.execPath, ['--test', '--test-reporter=tap', ...SUITE], {
        encoding: 'utf8',
        timeout: 120_000,
        env: { ...env, LOOM_NO_SIMD: off },
      });
      assert.equal(r.status, 0, r.stdout.split('\n').filter((l) => l.includes('not ok') || l.includes('Error')).join('\n'));
      assert.match(r.stdout, /# fail 0/);
    });
  }

  it('the switch is seen: LOOM_NO_SIMD=1 reports the portable kernels', () => {
    const r = spawnSync(process.execPath, ['-e', `import('${join(PROJECT_ROOT, 'dist', 'src', 'kernels', 'native.js')}').then((m) => console.log(JSON.stringify(m.cpuFeatures())))`], {
      encoding: 'utf8',
      env: { ...process.env, LOOM_NO_SIMD: '1' },
    });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).kernels, 'portable');
  });
});
