// The native addon as the tests need it: built from the sources that are here now, and loading.
//
//   node scripts/ensure-native.mjs            npm test's first step: rebuilds build/Release when any
//                                             source under native/ (its test/ folder aside) or
//                                             binding.gyp differs from what the last build was made
//                                             from, then test-loads the addon the tests will load
//                                             (LOOM_NATIVE_ADDON, else build/Release); exit 1 when it
//                                             does not load, unless LOOM_TEST_WITHOUT_NATIVE=1
//   node scripts/ensure-native.mjs --rebuild  always rebuilds (npm install, npm run build:native)
//
// "What the build was made from" is a content hash (sources, file names, binding.gyp, node's
// ABI and arch) written to build/loom_native.stamp after every build this script runs; a build
// without a stamp (node-gyp run by hand) counts as stale. Modification times play no part, so a
// checkout, a merge or an edit undone all rebuild exactly when the bytes differ.
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const STAMP = join(ROOT, 'build', 'loom_native.stamp');
const DEFAULT_ADDON = join(ROOT, 'build', 'Release', 'loom_native.node');
const SOURCE = /\.(cc|c|cpp|cxx|h|hh|hpp|inc|inl|ipp|S|gyp|gypi)$/;

function sourceFiles(dir) {
  const files = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, e.name);
    if (e.isDirectory()) {
      // native/test holds standalone harnesses (their own Makefile), not the addon
      if (relative(ROOT, path) !== join('native', 'test')) files.push(...sourceFiles(path));
    } else if (SOURCE.test(e.name)) files.push(path);
  }
  return files;
}

/** One hash of everything the addon is built from. */
function sourceHash() {
  const h = createHash('sha256');
  h.update(`node ${process.versions.modules} ${process.platform} ${process.arch}\n`);
  for (const file of [join(ROOT, 'binding.gyp'), ...sourceFiles(join(ROOT, 'native')).sort()]) {
    h.update(`${relative(ROOT, file)}\n`);
    h.update(readFileSync(file));
  }
  return h.digest('hex');
}

function rebuild(hash) {
  // npm names node-gyp in its scripts (npm_config_node_gyp) and passes its config (nodedir and
  // the like) in npm_config_*; run by hand, run node-gyp through npm so it gets the same
  const gyp = process.env.npm_config_node_gyp;
  const [cmd, args] = gyp ? [process.execPath, [gyp, 'rebuild']] : ['npm', ['exec', '--call', 'node-gyp rebuild']];
  const r = spawnSync(cmd, args, { cwd: ROOT, stdio: 'inherit' });
  if (r.status !== 0) {
    console.error(`ensure-native: node-gyp rebuild failed (${r.error?.message ?? `exit ${r.status}`})`);
    process.exit(1);
  }
  writeFileSync(STAMP, `${hash}\n`);
}

function loads(path) {
  try {
    const addon = createRequire(import.meta.url)(path);
    const out = new Float32Array(2);
    addon.rmsNorm(out, new Float32Array([3, 4]), new Float32Array([1, 2]), 1, 2, 0);
    if (Math.abs(out[0] - 3 / Math.sqrt(12.5)) > 1e-6) return 'its test RMSNorm gave a wrong answer';
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message.split('\n')[0] : String(err);
  }
}

const hash = sourceHash();
if (process.argv.includes('--rebuild')) {
  rebuild(hash);
  process.exit(0);
}

const stamped = existsSync(STAMP) ? readFileSync(STAMP, 'utf8').trim() : undefined;
if (stamped !== hash) {
  console.error(`ensure-native: ${stamped ? 'native/ or binding.gyp changed since the last build' : 'no build stamp'}: rebuilding the addon`);
  rebuild(hash);
} else {
  console.error('ensure-native: the addon in build/Release is built from the current sources');
}

const addonPath = process.env.LOOM_NATIVE_ADDON ?? DEFAULT_ADDON;
if (process.env.LOOM_NATIVE_ADDON) console.error(`ensure-native: the tests load LOOM_NATIVE_ADDON=${addonPath} (its freshness is its builder's concern)`);
const reason = loads(addonPath);
if (reason && process.env.LOOM_TEST_WITHOUT_NATIVE === '1') {
  console.error(`ensure-native: the addon does not load (${reason}); LOOM_TEST_WITHOUT_NATIVE=1: the native tests will SKIP`);
} else if (reason) {
  console.error(`ensure-native: the addon at ${addonPath} does not load: ${reason}\n` +
    'ensure-native: the native tests cannot run; fix the build, or set LOOM_TEST_WITHOUT_NATIVE=1 to test the reference kernels alone');
  process.exit(1);
}
