// Worker threads that load the native addon, run its compute pool and exit, in a process whose
// main thread never loads it: Node unloads the addon with the last such worker, while the
// pool's threads live on. Before the addon pinned itself in memory, those threads ran
// unmapped code and the process died of SIGSEGV (every run of this scenario; in the suite,
// now and then at the end of test/engine/worker-client.test.ts).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { nativeSkip } from '../fixtures/native.js';

const skip = nativeSkip();
const nativeModule = new URL('../../src/kernels/native.js', import.meta.url).href;

const script = `
import { Worker } from 'node:worker_threads';
const body = 'import(${JSON.stringify(nativeModule)}).then((m) => { m.allocateLarge(8 << 20, true); process.exit(0); });';
for (let i = 0; i < 20; i++) {
  const w = new Worker(body, { eval: true });
  await new Promise((res) => w.on('exit', res));
  await new Promise((res) => setTimeout(res, 5));
}
console.log('workers done');
`;

describe('native addon in worker threads', { skip }, () => {
  it('outlives the workers that loaded it: the process ends cleanly', () => {
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(run.signal, null, `the process died of ${run.signal}: ${run.stderr}`);
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout, /workers done/);
  });
});
