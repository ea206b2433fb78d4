// hf: models against a local fake Hub (test/fake-hub.ts): single files and folders into the
// cache, resumed transfers, offline from the cache, and one clear line for each failure.
// Nothing here touches the real internet.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LoomError } from '../../src/errors.js';
import { DOWNLOAD_ATTEMPTS } from '../../src/model/hub-download.js';
import { HubError, HubNotCachedError } from '../../src/model/hub-errors.js';
import { parseHubRef } from '../../src/model/hub-ref.js';
import { selectRepoModel } from '../../src/model/hub-select.js';
import { resolveModelPath } from '../../src/model/hub.js';
import type { HubOptions } from '../../src/model/hub.js';
import { loadModel } from '../../src/model/load.js';
import { FakeHub } from '../fixtures/fake-hub.js';
import { PROJECT_ROOT, ggufFixturePath, hfFixturePaths } from '../fixtures/index.js';
import { GGUF_FIXTURES, HF_FIXTURES } from '../fixtures/recipe.js';

const CLI = join(PROJECT_ROOT, 'dist', 'src', 'cli.js');
const tmp = mkdtempSync(join(tmpdir(), 'loom-hub-'));
let cacheN = 0;
const freshCache = () => join(tmp, `cache-${cacheN++}`);

function fixture<T extends { name: string }>(list: readonly T[], name: string): T {
  const f = list.find((x) => x.name === name);
  assert.ok(f, name);
  return f;
}

function folderFiles(dir: string): Record<string, Buffer> {
  return Object.fromEntries(readdirSync(dir).map((f) => [f, readFileSync(join(dir, f))]));
}

const hub = new FakeHub();
const ggufPath = ggufFixturePath(fixture(GGUF_FIXTURES, 'llama-q8_0'));
const gguf = readFileSync(ggufPath);
const sharded = hfFixturePaths(fixture(HF_FIXTURES, 'hf-qwen2')).folder; // 2 shards + index
const single = hfFixturePaths(fixture(HF_FIXTURES, 'hf-llama')).folder; // model.safetensors
let endpoint = '';
let lines: string[] = [];
const opts = (cacheDir: string, offline = false): HubOptions => ({ offline, cacheDir, log: (l) => lines.push(l) });

before(async () => {
  hub.addRepo('org/gguf', { 'README.md': Buffer.from('# hi\n'), 'llama-q8_0.gguf': gguf });
  hub.addRepo('org/ggufs', {
    'llama-f32.gguf': readFileSync(ggufFixturePath(fixture(GGUF_FIXTURES, 'llama-f32'))),
    'llama-q4_k_m.gguf': readFileSync(ggufFixturePath(fixture(GGUF_FIXTURES, 'llama-q4_k_m'))),
    'llama-q8_0.gguf': gguf,
  });
  hub.addRepo('org/qwen2', { ...folderFiles(sharded), 'README.md': Buffer.from('# model card\n'), 'pytorch_model.bin': Buffer.alloc(10) });
  hub.addRepo('org/llama', folderFiles(single));
  hub.addRepo('org/empty', { 'README.md': Buffer.from('nothing\n') });
  endpoint = await hub.start();
  process.env.HF_ENDPOINT = endpoint;
  delete process.env.HF_HUB_OFFLINE;
  delete process.env.HF_TOKEN;
});

after(async () => {
  await hub.stop();
  rmSync(tmp, { recursive: true, force: true });
});

function reset(): void {
  hub.requests.length = 0;
  hub.cut = undefined;
  lines = [];
}

/** Runs the CLI without blocking this process (the fake Hub answers from here). */
function loom(args: string[], env: Record<string, string>): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((ok) => {
    execFile(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, encoding: 'utf8' }, (err, stdout, stderr) => {
      ok({ status: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr });
    });
  });
}

/** A port nobody listens on. */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((ok) => srv.listen(0, '127.0.0.1', ok));
  const { port } = srv.address() as AddressInfo;
  await new Promise<void>((ok) => srv.close(() => ok()));
  return port;
}

async function rejection(p: Promise<unknown>): Promise<LoomError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof LoomError, `not a LoomError: ${String(err)}`);
    assert.doesNotMatch(err.message, /\n/, 'one line');
    return err;
  }
  assert.fail('expected a rejection');
}

describe('hf: references', () => {
  it('parses repo, revision and file', () => {
    assert.deepEqual(parseHubRef('hf:org/repo'), { spec: 'hf:org/repo', repo: 'org/repo', revision: 'main', file: undefined });
    assert.deepEqual(parseHubRef('hf:org/repo@v1.0:sub/m.gguf'), { spec: 'hf:org/repo@v1.0:sub/m.gguf', repo: 'org/repo', revision: 'v1.0', file: 'sub/m.gguf' });
    for (const bad of ['hf:', 'hf:org/re po', 'hf:a/b/c', 'hf:org/repo:../x', 'hf:org/repo:', 'hf:org/repo@:x', 'hf:../x']) {
      assert.throws(() => parseHubRef(bad), LoomError, bad);
    }
  });

  it('leaves local paths alone', async () => {
    assert.equal(await resolveModelPath('/models/x.gguf', { offline: true }), '/models/x.gguf');
  });

  it('picks the model files of a repo', () => {
    assert.deepEqual(selectRepoModel('s', ['a-Q8_0.gguf', 'a-F16.gguf', 'a-Q4_K_M.gguf', 'mmproj-a.gguf']), { kind: 'gguf', file: 'a-Q4_K_M.gguf', count: 3 });
    assert.deepEqual(selectRepoModel('s', ['b.gguf', 'a-q8_0.gguf']), { kind: 'gguf', file: 'a-q8_0.gguf', count: 2 });
    assert.deepEqual(selectRepoModel('s', ['z.gguf', 'b.gguf']), { kind: 'gguf', file: 'b.gguf', count: 2 });
    assert.deepEqual(selectRepoModel('s', ['config.json', 'model.safetensors', 'tokenizer.json', 'x.gguf']), {
      kind: 'folder',
      files: ['config.json', 'tokenizer.json', 'model.safetensors'],
      index: undefined,
    });
    assert.throws(() => selectRepoModel('hf:o/r', ['README.md']), /hf:o\/r: the repository has neither/);
  });
});

describe('hf: downloads from a fake Hub', () => {
  it('downloads a single file into the cache with the right bytes', async () => {
    reset();
    const cache = freshCache();
    const path = await resolveModelPath('hf:org/gguf:llama-q8_0.gguf', opts(cache));
    assert.equal(path, join(cache, 'hub', 'org--gguf', 'main', 'llama-q8_0.gguf'));
    assert.ok(readFileSync(path).equals(gguf));
    assert.ok(!existsSync(path + '.part'));
    assert.equal(hub.transfers().length, 1);
    assert.match(lines[0]!, /^loom: downloading hf:org\/gguf:llama-q8_0\.gguf \(1\.\d+ MiB\)$/);
    assert.match(lines[1]!, /^loom: downloaded hf:org\/gguf:llama-q8_0\.gguf/);
    assert.equal(loadModel(path).format, 'gguf');

    // online again: the cached copy is current, only the metadata probe goes out
    reset();
    assert.equal(await resolveModelPath('hf:org/gguf:llama-q8_0.gguf', opts(cache)), path);
    assert.equal(hub.transfers().length, 0);
    assert.deepEqual(lines, []);
  });

  it('downloads a file again when the Hub has a new version', async () => {
    reset();
    const cache = freshCache();
    hub.addRepo('org/changing', { 'notes.txt': Buffer.from('one') });
    const path = await resolveModelPath('hf:org/changing:notes.txt', opts(cache));
    hub.addRepo('org/changing', { 'notes.txt': Buffer.from('two!') });
    assert.equal(await resolveModelPath('hf:org/changing:notes.txt', opts(cache)), path);
    assert.equal(readFileSync(path, 'utf8'), 'two!');
    assert.equal(hub.transfers().length, 2);
  });

  it('downloads a sharded safetensors folder that loadModel opens', async () => {
    reset();
    const cache = freshCache();
    const dir = await resolveModelPath('hf:org/qwen2', opts(cache));
    assert.equal(dir, join(cache, 'hub', 'org--qwen2', 'main'));
    const want = readdirSync(sharded).sort();
    assert.ok(want.includes('model-00002-of-00002.safetensors'));
    assert.deepEqual(readdirSync(dir).sort(), want, 'the model files, not README.md or pytorch_model.bin');
    for (const f of want) assert.ok(readFileSync(join(dir, f)).equals(readFileSync(join(sharded, f))), f);
    const got = loadModel(dir);
    const ref = loadModel(sharded);
    assert.equal(got.format, 'hf');
    assert.deepEqual(got.config, ref.config);
    assert.deepEqual(got.tokenizer.encode('hello world', { addSpecial: true }), ref.tokenizer.encode('hello world', { addSpecial: true }));
  });

  it('downloads a single-file safetensors folder', async () => {
    reset();
    const dir = await resolveModelPath('hf:org/llama', opts(freshCache()));
    assert.deepEqual(readdirSync(dir).sort(), readdirSync(single).sort());
    assert.equal(loadModel(dir).format, 'hf');
  });

  it('picks Q4_K_M in a repo of GGUF files and says so', async () => {
    reset();
    const path = await resolveModelPath('hf:org/ggufs', opts(freshCache()));
    assert.equal(basename(path), 'llama-q4_k_m.gguf');
    assert.deepEqual(readdirSync(join(path, '..')), ['llama-q4_k_m.gguf']);
    assert.match(lines[0]!, /^loom: hf:org\/ggufs: using llama-q4_k_m\.gguf \(one of 3 GGUF files; choose with hf:org\/ggufs:FILE\)$/);
  });

  it('resumes an interrupted transfer with a Range request', async () => {
    reset();
    hub.cut = { path: 'llama-q8_0.gguf', afterBytes: 300_000, times: 1 };
    const path = await resolveModelPath('hf:org/gguf:llama-q8_0.gguf', opts(freshCache()));
    assert.ok(readFileSync(path).equals(gguf));
    // resumed where the first transfer's bytes ended (all 300,000, or fewer when the cut
    // overtook bytes still in flight on a busy host)
    const ranges = hub.transfers().map((r) => r.range);
    assert.equal(ranges.length, 2);
    assert.equal(ranges[0], undefined);
    const resumedAt = Number(/^bytes=(\d+)-$/.exec(ranges[1] ?? '')?.[1]);
    assert.ok(resumedAt > 0 && resumedAt <= 300_000, `resumed at ${ranges[1]}`);
    assert.ok(lines.some((l) => /broke off after .* resuming \(attempt 2 of 3\)$/.test(l)), lines.join('\n'));
  });

  it('resumes in the next run from the .part an interrupted run left', async () => {
    reset();
    const cache = freshCache();
    hub.cut = { path: 'llama-q8_0.gguf', afterBytes: 100_000, times: DOWNLOAD_ATTEMPTS };
    const err = await rejection(resolveModelPath('hf:org/gguf:llama-q8_0.gguf', opts(cache)));
    assert.ok(err instanceof HubError);
    assert.match(err.message, /^hf:org\/gguf:llama-q8_0\.gguf: the transfer from http:\/\/127\.0\.0\.1:\d+\/org\/gguf\/resolve\/main\/llama-q8_0\.gguf broke off after/);
    const part = join(cache, 'hub', 'org--gguf', 'main', 'llama-q8_0.gguf.part');
    const partSize = statSync(part).size; // 100,000 a try, or less when a cut overtook bytes in flight
    assert.ok(partSize > 0 && partSize <= DOWNLOAD_ATTEMPTS * 100_000, `.part holds ${partSize} bytes`);

    reset();
    const path = await resolveModelPath('hf:org/gguf:llama-q8_0.gguf', opts(cache));
    assert.ok(readFileSync(path).equals(gguf));
    assert.deepEqual(hub.transfers().map((r) => r.range), [`bytes=${partSize}-`]);
    assert.match(lines[0]!, new RegExp(`resuming at ${(partSize / 1024).toFixed(1).replace('.', '\\.')} KiB`));
    assert.ok(!existsSync(part));
  });

  it('throws away a .part of another version and a corrupt result', async () => {
    reset();
    const cache = freshCache();
    const dir = join(cache, 'hub', 'org--gguf', 'main');
    await resolveModelPath('hf:org/gguf:README.md', opts(cache)); // makes the folders
    writeFileSync(join(dir, 'llama-q8_0.gguf.part'), Buffer.alloc(1000, 7)); // no ETag on record: not ours to continue
    reset();
    const path = await resolveModelPath('hf:org/gguf:llama-q8_0.gguf', opts(cache));
    assert.ok(readFileSync(path).equals(gguf));
    assert.deepEqual(hub.transfers().map((r) => r.range), [undefined]);

    reset();
    hub.wrongEtag.add('README.md');
    try {
      const err = await rejection(resolveModelPath('hf:org/gguf:README.md', opts(freshCache())));
      assert.match(err.message, /^hf:org\/gguf:README\.md: the download is corrupt \(sha256 [0-9a-f]{64}, the Hub says [0-9a-f]{64}\); removed it, run again$/);
    } finally {
      hub.wrongEtag.clear();
    }
  });

  it('sends HF_TOKEN as a bearer token', async () => {
    reset();
    process.env.HF_TOKEN = 'secret-token';
    try {
      await resolveModelPath('hf:org/gguf:README.md', opts(freshCache()));
    } finally {
      delete process.env.HF_TOKEN;
    }
    assert.ok(hub.requests.length > 0);
    for (const r of hub.requests) assert.equal(r.authorization, 'Bearer secret-token');
  });
});

describe('hf: offline', () => {
  it('serves a cached file and folder without a single request', async () => {
    reset();
    const cache = freshCache();
    const file = await resolveModelPath('hf:org/gguf:llama-q8_0.gguf', opts(cache));
    const dir = await resolveModelPath('hf:org/qwen2', opts(cache));
    const ggufs = await resolveModelPath('hf:org/ggufs', opts(cache));
    reset();
    assert.equal(await resolveModelPath('hf:org/gguf:llama-q8_0.gguf', opts(cache, true)), file);
    assert.equal(await resolveModelPath('hf:org/qwen2', opts(cache, true)), dir);
    assert.equal(await resolveModelPath('hf:org/ggufs', opts(cache, true)), ggufs);
    process.env.HF_HUB_OFFLINE = '1';
    try {
      assert.equal(await resolveModelPath('hf:org/qwen2', opts(cache)), dir);
    } finally {
      delete process.env.HF_HUB_OFFLINE;
    }
    assert.deepEqual(hub.requests, []);
    assert.equal(loadModel(dir).format, 'hf');
  });

  it('fails in one line when the cache has no copy', async () => {
    reset();
    const cache = freshCache();
    const err = await rejection(resolveModelPath('hf:org/gguf:llama-q8_0.gguf', opts(cache, true)));
    assert.ok(err instanceof HubNotCachedError);
    assert.equal(err.message, `hf:org/gguf:llama-q8_0.gguf is not in the cache (${join(cache, 'hub', 'org--gguf', 'main')}) and --offline (or HF_HUB_OFFLINE=1) forbids downloading`);
    // a folder whose download never finished is not a copy
    await resolveModelPath('hf:org/qwen2:config.json', opts(cache));
    await rejection(resolveModelPath('hf:org/qwen2', opts(cache, true)));
    assert.equal(hub.requests.filter((r) => !r.url.includes('config.json')).length, 0);
  });

  it('loom generate --offline without a copy: exit 1, one line, no request', async () => {
    reset();
    const r = await loom(['generate', '--model', 'hf:org/missing:x.gguf', '--offline', '-p', 'hi'], { LOOM_CACHE: freshCache(), HF_ENDPOINT: endpoint });
    assert.equal(r.status, 1);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /^loom: hf:org\/missing:x\.gguf is not in the cache \(.*org--missing.*\) and --offline \(or HF_HUB_OFFLINE=1\) forbids downloading\n$/);
    assert.deepEqual(hub.requests, []);
  });

  it('falls back to the cache when the Hub cannot be reached', async () => {
    reset();
    const cache = freshCache();
    const file = await resolveModelPath('hf:org/gguf:llama-q8_0.gguf', opts(cache));
    const port = await closedPort();
    process.env.HF_ENDPOINT = `http://127.0.0.1:${port}`;
    try {
      assert.equal(await resolveModelPath('hf:org/gguf:llama-q8_0.gguf', opts(cache)), file);
      assert.match(lines.at(-1)!, new RegExp(`cannot reach http://127\\.0\\.0\\.1:${port}/.*ECONNREFUSED; using the cached copy`));
      const err = await rejection(resolveModelPath('hf:org/gguf:other.gguf', opts(cache)));
      assert.match(err.message, new RegExp(`^hf:org/gguf:other\\.gguf: cannot reach http://127\\.0\\.0\\.1:${port}/org/gguf/resolve/main/other\\.gguf: ECONNREFUSED$`));
    } finally {
      process.env.HF_ENDPOINT = endpoint;
    }
  });
});

describe('hf: errors', () => {
  it('a missing repo, file or revision is one clear line', async () => {
    reset();
    const cache = freshCache();
    let err = await rejection(resolveModelPath('hf:org/nope', opts(cache)));
    assert.match(err.message, /^hf:org\/nope: HTTP 404: Repository not found from GET http:\/\/127\.0\.0\.1:\d+\/api\/models\/org\/nope\/tree\/main\?recursive=false&expand=false \(no such repository, revision or file\)$/);
    err = await rejection(resolveModelPath('hf:org/nope:x.gguf', opts(cache)));
    assert.match(err.message, /^hf:org\/nope:x\.gguf: HTTP 404: Repository not found from GET http:\/\/127\.0\.0\.1:\d+\/org\/nope\/resolve\/main\/x\.gguf/);
    err = await rejection(resolveModelPath('hf:org/gguf:x.gguf', opts(cache)));
    assert.equal(err.message, 'hf:org/gguf:x.gguf: no such file in org/gguf at revision main');
    err = await rejection(resolveModelPath('hf:org/gguf@v9:llama-q8_0.gguf', opts(cache)));
    assert.match(err.message, /^hf:org\/gguf@v9:llama-q8_0\.gguf: HTTP 404: Invalid rev id: v9 from GET/);
    err = await rejection(resolveModelPath('hf:org/empty', opts(cache)));
    assert.match(err.message, /^hf:org\/empty: the repository has neither/);
  });

  it('loom generate on a missing repo: exit 1, one line', async () => {
    const r = await loom(['generate', '--model', 'hf:org/nope:x.gguf', '-p', 'hi'], { LOOM_CACHE: freshCache(), HF_ENDPOINT: endpoint });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /^loom: hf:org\/nope:x\.gguf: HTTP 404: Repository not found from GET http:\/\/127\.0\.0\.1:\d+\/org\/nope\/resolve\/main\/x\.gguf \(no such repository, revision or file\)\n$/);
  });

  it('a commit revision works like a branch', async () => {
    reset();
    const cache = freshCache();
    const path = await resolveModelPath('hf:org/gguf@c0ffee0000000000000000000000000000000000:llama-q8_0.gguf', opts(cache));
    assert.equal(path, join(cache, 'hub', 'org--gguf', 'c0ffee0000000000000000000000000000000000', 'llama-q8_0.gguf'));
  });
});
