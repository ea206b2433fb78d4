// A new user's first minutes: the built-in model when --model is omitted, `loom --version`,
// and `loom serve` configured from the environment and a --config YAML file.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { WITHOUT_NATIVE, nativeSkip } from './fixtures/native.js';
import { PROJECT_ROOT } from './fixtures/index.js';

const CLI = join(PROJECT_ROOT, 'dist', 'src', 'cli.js');
const tmp = mkdtempSync(join(tmpdir(), 'loom-oob-'));
process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));
// llama.cpp's greedy continuation of "Once upon a time" on stories260K (../shared/models/README.md)
const STORY =
  ', there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball. She wanted to play with it, but it was too high.\nLily';

function loom(args: string[], env: Record<string, string> = {}): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 120_000, env: { ...process.env, ...env } });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('the built-in model', () => {
  it('generate without --model runs stories260K and says so in one line', () => {
    const r = loom(['generate', '--prompt', 'Once upon a time', '--temperature', '0', '--max-tokens', '60']);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, STORY + '\n');
    // (without the addon, under LOOM_TEST_WITHOUT_NATIVE=1, the fallback's notice is a second line)
    const notice = WITHOUT_NATIVE ? /\nloom: native core unavailable \(.*\); using the TypeScript reference kernels\n$/ : /^\n$/;
    assert.match(r.stderr, /^loom: no --model given; using the built-in stories260K .*models\/stories260K\.gguf\n/);
    assert.match(r.stderr.replace(/^[^\n]*/, ''), notice);
  });

  it('ships in the package with its licence', () => {
    const pkg = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { name: string; files: string[]; bin: Record<string, string> };
    assert.ok(pkg.files.includes('models'));
    assert.equal(pkg.bin.loom, 'dist/src/cli.js');
    assert.match(readFileSync(join(PROJECT_ROOT, 'models', 'LICENSE'), 'utf8'), /MIT License/);
  });
});

describe('loom --version', () => {
  it('prints the version, the kernels in use and the thread count', { skip: nativeSkip() }, () => {
    const pkg = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { name: string; version: string };
    const r = loom(['--version']);
    assert.equal(r.status, 0, r.stderr);
    const [first, kernels, threads] = r.stdout.trimEnd().split('\n');
    assert.ok(first!.startsWith(`${pkg.name} ${pkg.version} (node ${process.version}`), first);
    assert.match(kernels!, /^kernels: native, (AVX-512|AVX2|portable C\+\+)$/);
    assert.equal(threads, `threads: ${cpus().length} (--threads N to change)`);
    assert.match(loom(['-V'], { LOOM_NO_SIMD: '1' }).stdout, /\nkernels: native, portable C\+\+ \(LOOM_NO_SIMD=1\)\n/);
  });
});

describe('loom serve options from LOOM_* and --config', () => {
  it('takes the command line over the environment over the file, and says where it serves', async () => {
    const config = join(tmp, 'serve.yaml');
    writeFileSync(config, 'served-model-name: from-file\nmax-model-len: 64\napi-key: file-key\nport: 0\nbackend: reference\nkv-cache-memory: 16MiB\nenable-prefix-caching: false\n');
    const child = spawn(process.execPath, [CLI, 'serve', '--config', config, '--served-model-name', 'from-cli'], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, LOOM_MAX_MODEL_LEN: '48', LOOM_API_KEY: 'env-key' },
    });
    let log = '';
    child.stderr.setEncoding('utf8');
    try {
      const base = await new Promise<string>((resolve, reject) => {
        child.stderr.on('data', (chunk: string) => {
          log += chunk;
          const m = /OpenAI API at (http:\/\/127\.0\.0\.1:\d+)\/v1, Ollama API at \1\/api, web chat at \1\/\n/.exec(log);
          if (m) resolve(m[1]!);
        });
        child.once('exit', () => reject(new Error(`serve exited: ${log}`)));
      });
      assert.match(log, /using the built-in stories260K/);
      assert.equal((await fetch(`${base}/v1/models`, { headers: { authorization: 'Bearer file-key' } })).status, 401);
      const models = (await (await fetch(`${base}/v1/models`, { headers: { authorization: 'Bearer env-key' } })).json()) as { data: { id: string; max_model_len: number }[] };
      assert.deepEqual(models.data.map((m) => [m.id, m.max_model_len]), [['from-cli', 48]]);
    } finally {
      child.kill('SIGTERM');
    }
  });

  it('a bad value or an unknown key is one line and exit 1', () => {
    const port = loom(['serve'], { LOOM_PORT: 'abc' });
    assert.equal(port.status, 1);
    assert.equal(port.stderr, 'loom: --port expects an integer, got "abc"\n');
    const flag = loom(['serve'], { LOOM_ENABLE_PREFIX_CACHING: 'maybe' });
    assert.equal(flag.stderr, 'loom: LOOM_ENABLE_PREFIX_CACHING: expected true or false, got "maybe"\n');
    const file = join(tmp, 'bad.yaml');
    writeFileSync(file, 'max-num-seq: 4\n');
    const unknown = loom(['serve', '--config', file]);
    assert.equal(unknown.status, 1);
    assert.equal(unknown.stderr, `loom: --config ${file}: unknown option "max-num-seq" (see loom serve --help)\n`);
    writeFileSync(file, 'backend: gpu\n');
    assert.equal(loom(['serve', '--config', file]).stderr, `loom: ${file}: backend: "gpu" is not one of auto, native, reference\n`);
  });
});
