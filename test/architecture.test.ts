// Every arrow runs down: reads the import lines of src/ and checks them against the layers of
// /work/shared/DESIGN.md's layout. tensor/ and kernels/ are strict (tensor imports nothing
// outside itself, kernels only tensor); the other rooms must not gain an upward arrow beyond
// the ones KNOWN lists, which documents where the layout is not yet what it should be.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { PROJECT_ROOT } from './fixtures/index.js';

const SRC = join(PROJECT_ROOT, 'src');

/** Files at src/'s root that import nothing from src/: any room may import them. */
const LEAVES = ['errors.ts', 'package-info.ts'];

/** Rooms (folders of src/, or files at its root) from the bottom up: a room may import the
 *  leaves and any room before it. formats/, hub/ and pipeline/ do not exist yet; their files
 *  are still in model/ and server/. bench/ is imported by commands/ only. */
const LAYERS = [
  'tensor', 'formats', 'hub', 'kernels', 'tokenizer', 'model', 'engine', 'pipeline',
  'llm.ts', 'index.ts', 'server', 'bench', 'commands', 'cli.ts',
];

/** Upward arrows that exist today, as `importer -> imported` (paths under src/). Each is a
 *  file not yet in its room: a test fails on an arrow not listed here; one listed here that
 *  no longer occurs is only reported, so the file that fixes it need not edit this list. */
const KNOWN = new Set([
  // gguf-metadata.ts is a formats/ file still in model/
  'tokenizer/gguf-tokenizer.ts -> model/gguf-metadata.ts',
]);

interface Arrow {
  readonly from: string;
  readonly to: string;
}

function room(path: string): string {
  const slash = path.indexOf('/');
  return slash < 0 ? path : path.slice(0, slash);
}

function sourceFiles(): string[] {
  return (readdirSync(SRC, { recursive: true }) as string[])
    .filter((f) => f.endsWith('.ts'))
    .map((f) => f.split('\\').join('/'))
    .sort();
}

/** Every module specifier a file names: static imports and re-exports, side-effect imports, dynamic imports. */
function specifiers(text: string): string[] {
  const found: string[] = [];
  for (const re of [/^\s*(?:import|export)\s[^;]*?\bfrom\s*['"]([^'"]+)['"]/gm, /^\s*import\s*['"]([^'"]+)['"]/gm, /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g]) {
    for (const m of text.matchAll(re)) found.push(m[1]!);
  }
  return found;
}

const files = sourceFiles();
const arrows: Arrow[] = [];
const packages: { from: string; spec: string }[] = [];
for (const from of files) {
  for (const spec of specifiers(readFileSync(join(SRC, from), 'utf8'))) {
    if (!spec.startsWith('.')) {
      packages.push({ from, spec });
      continue;
    }
    const to = relative(SRC, resolve(dirname(join(SRC, from)), spec)).split('\\').join('/').replace(/\.js$/, '.ts');
    if (room(from) !== room(to) && !arrows.some((a) => a.from === from && a.to === to)) arrows.push({ from, to });
  }
}

function allowed(a: Arrow): boolean {
  const to = room(a.to);
  if (LEAVES.includes(to)) return !LEAVES.includes(room(a.from));
  const i = LAYERS.indexOf(room(a.from));
  const j = LAYERS.indexOf(to);
  if (to === 'bench') return room(a.from) === 'commands';
  return i >= 0 && j >= 0 && j < i;
}

const show = (list: readonly Arrow[]): string => list.map((a) => `  src/${a.from} -> src/${a.to}`).join('\n');

describe('architecture: every arrow runs down', () => {
  it('finds the source and its arrows', () => {
    assert.ok(files.includes('tensor/weight-types.ts'), `no src/tensor/weight-types.ts under ${SRC}`);
    assert.ok(arrows.length > 100);
    for (const f of files) assert.ok(LEAVES.includes(f) || LAYERS.includes(room(f)), `src/${f} is in no room of the layout`);
  });

  it('tensor/ imports nothing outside itself but the leaves and node built-ins', () => {
    const out = arrows.filter((a) => room(a.from) === 'tensor' && !LEAVES.includes(room(a.to)));
    assert.deepEqual(out, [], `tensor/ imports upwards:\n${show(out)}`);
    const pkgs = packages.filter((p) => room(p.from) === 'tensor' && !p.spec.startsWith('node:'));
    assert.deepEqual(pkgs, []);
  });

  it('kernels/ imports tensor/ only (and the leaves, node built-ins)', () => {
    const out = arrows.filter((a) => room(a.from) === 'kernels' && !['tensor', ...LEAVES].includes(room(a.to)));
    assert.deepEqual(out, [], `kernels/ imports beyond tensor/:\n${show(out)}`);
    const pkgs = packages.filter((p) => room(p.from) === 'kernels' && !p.spec.startsWith('node:'));
    assert.deepEqual(pkgs, []);
  });

  it('the leaves import nothing from src/', () => {
    const out = arrows.filter((a) => LEAVES.includes(a.from));
    assert.deepEqual(out, [], show(out));
  });

  it('no other upward arrow than the known ones', (t) => {
    const up = arrows.filter((a) => !allowed(a));
    const key = (a: Arrow): string => `${a.from} -> ${a.to}`;
    const known = up.filter((a) => KNOWN.has(key(a)));
    for (const a of known) t.diagnostic(`known upward arrow (a file not yet in its room): src/${a.from} -> src/${a.to}`);
    for (const k of KNOWN) if (!up.some((a) => key(a) === k)) t.diagnostic(`KNOWN arrow no longer in the source, remove it from the list: ${k}`);
    const fresh = up.filter((a) => !KNOWN.has(key(a)));
    assert.deepEqual(fresh, [], `upward arrows (a room imports one above it, DESIGN.md's layout):\n${show(fresh)}`);
  });
});
