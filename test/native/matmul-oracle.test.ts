// native/test/matmul_test (a double-precision oracle: every weight type × kernel path ×
// awkward shape against dequantized weights times rounded activations, and SIMD activation
// preparation bit for bit against the portable code) built with its own Makefile (g++, no
// node-gyp) and run in `check` mode, so that it runs wherever npm test does. About a minute
// on 2 cores; the objects stay in build/matmul-test, so a rerun builds only what changed.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { PROJECT_ROOT } from '../fixtures/index.js';

const BUILD = join(PROJECT_ROOT, 'build', 'matmul-test');
const hasCompiler = spawnSync(process.env.CXX ?? 'g++', ['--version']).status === 0 && spawnSync('make', ['--version']).status === 0;
const skip = process.platform === 'win32' ? 'needs make and g++' : hasCompiler ? false : 'no g++ or make on this machine';

describe('native matmul against its double-precision oracle (native/test/matmul_test)', { skip }, () => {
  it('builds and passes every check', { timeout: 600_000 }, () => {
    const make = spawnSync('make', ['-s', '-j2', '-C', join(PROJECT_ROOT, 'native', 'test'), `BUILD=${BUILD}`, join(BUILD, 'matmul_test')], {
      encoding: 'utf8',
    });
    assert.equal(make.status, 0, `make failed:\n${make.stderr.split('\n').filter((l) => /error|\*\*\*/.test(l)).join('\n') || make.stderr.slice(-4000)}`);
    const run = spawnSync(join(BUILD, 'matmul_test'), ['check'], { encoding: 'utf8', maxBuffer: 64 << 20 });
    const failed = run.stdout.split('\n').filter((l) => l.includes('FAIL'));
    assert.equal(run.status, 0, `matmul_test check exited ${run.status ?? run.signal}:\n${failed.join('\n') || run.stderr.slice(-4000)}`);
    assert.match(run.stdout, /all checks passed/);
  });
});
