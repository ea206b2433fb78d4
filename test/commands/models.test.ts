// `loom pull`, `loom list`, `loom rm`, and short names for cached models, as a user runs
// them, against the local fake Hub (test/fake-hub.ts); nothing touches the internet.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FakeHub } from '../fixtures/fake-hub.js';
import { PROJECT_ROOT, ggufFixturePath, hfFixturePaths } from '../fixtures/index.js';
import { GGUF_FIXTURES, HF_FIXTURES } from '../fixtures/recipe.js';

const CLI = join(PROJECT_ROOT, 'dist', 'src', 'cli.js');
const tmp = mkdtempSync(join(tmpdir(), 'loom-models-'));
const cache = join(tmp, 'cache');
const hub = new FakeHub();
let env: Record<string, string> = {};

const gguf = readFileSync(ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === 'gpt2-q8_0')!));
const folder = hfFixturePaths(HF_FIXTURES.find((f) => f.name === 'hf-llama')!).folder;

function loom(...args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((ok) => {
    execFile(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, encoding: 'utf8' }, (err, stdout, stderr) => {
      ok({ status: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr });
    });
  });
}

before(async () => {
  hub.addRepo('org/tiny-GGUF', { 'tiny-gpt2-Q8_0.gguf': gguf, 'README.md': Buffer.from('# card\n') });
  hub.addRepo('org/tiny-llama', Object.fromEntries(readdirSync(folder).map((f) => [f, readFileSync(join(folder, f))])));
  env = { HF_ENDPOINT: await hub.start(), LOOM_CACHE: cache };
});

after(async () => {
  await hub.stop();
  rmSync(tmp, { recursive: true, force: true });
});

describe('loom pull / list / rm', () => {
  it('pull downloads a file and a folder, prints where, and nothing else happens', async () => {
    const file = await loom('pull', 'hf:org/tiny-GGUF:tiny-gpt2-Q8_0.gguf');
    assert.equal(file.status, 0, file.stderr);
    const path = file.stdout.trim();
    assert.equal(path, join(cache, 'hub', 'org--tiny-GGUF', 'main', 'tiny-gpt2-Q8_0.gguf'));
    assert.deepEqual(readFileSync(path), gguf);
    assert.match(file.stderr, /tiny-gpt2-Q8_0\.gguf/, 'the progress lines name the file');
    const dir = await loom('pull', 'org/tiny-llama'); // the hf: may be left out
    assert.equal(dir.status, 0, dir.stderr);
    assert.ok(existsSync(join(dir.stdout.trim(), 'config.json')));
  });

  it('list shows each cached model with its short name, size, origin and path', async () => {
    const r = await loom('list');
    assert.equal(r.status, 0, r.stderr);
    const [header, ...rows] = r.stdout.trimEnd().split('\n');
    assert.match(header!, /^NAME\s+SIZE\s+FROM\s+PATH$/);
    assert.equal(rows.length, 2, r.stdout);
    const json = JSON.parse((await loom('list', '--json')).stdout) as { name: string; ref: string; bytes: number; path: string }[];
    const byName = new Map(json.map((m) => [m.name, m]));
    assert.equal(byName.get('tiny-gpt2-Q8_0')?.bytes, gguf.length);
    assert.equal(byName.get('tiny-gpt2-Q8_0')?.ref, 'hf:org/tiny-GGUF:tiny-gpt2-Q8_0.gguf');
    const folderBytes = readdirSync(folder).reduce((s, f) => s + readFileSync(join(folder, f)).length, 0);
    assert.equal(byName.get('tiny-llama')?.bytes, folderBytes);
    assert.equal(byName.get('tiny-llama')?.ref, 'hf:org/tiny-llama');
  });

  it('generate runs a cached model by its short name, offline', async () => {
    const requests = hub.requests.length;
    const viaName = await loom('generate', '--model', 'tiny-gpt2-Q8_0', '-p', 'hello', '-n', '5', '--temperature', '0', '--ignore-eos', '--json', '--offline');
    assert.equal(viaName.status, 0, viaName.stderr);
    const direct = await loom('generate', '--model', ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === 'gpt2-q8_0')!), '-p', 'hello', '-n', '5', '--temperature', '0', '--ignore-eos', '--json');
    assert.deepEqual(JSON.parse(viaName.stdout), JSON.parse(direct.stdout));
    const folderRun = await loom('generate', '--model', 'org/tiny-llama', '-p', 'hello', '-n', '3', '--temperature', '0', '--ignore-eos', '--json');
    assert.equal(folderRun.status, 0, folderRun.stderr);
    assert.equal(hub.requests.length, requests, 'no request to the Hub');
  });

  it('an unknown name is one line and exit 1', async () => {
    const r = await loom('generate', '--model', 'no-such-model', '-p', 'hi');
    assert.equal(r.status, 1);
    assert.equal(r.stderr, 'loom: no-such-model: no such file or folder\n');
    const rm = await loom('rm', 'no-such-model');
    assert.equal(rm.status, 1);
    assert.equal(rm.stderr, 'loom: no cached model is called "no-such-model" (see loom list)\n');
  });

  it('rm deletes a model and list no longer shows it', async () => {
    const r = await loom('rm', 'tiny-gpt2-Q8_0', 'tiny-llama');
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^deleted tiny-gpt2-Q8_0 \(hf:org\/tiny-GGUF:tiny-gpt2-Q8_0\.gguf, .*\)\ndeleted tiny-llama \(hf:org\/tiny-llama, .*\)\n$/);
    assert.equal((await loom('list')).stdout.trimEnd().split('\n').length, 1, 'only the header is left');
    assert.deepEqual(readdirSync(join(cache, 'hub')), []);
  });
});
