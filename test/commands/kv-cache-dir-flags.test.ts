// --kv-cache-dir on `loom generate` and `loom chat`, as on `loom serve`: a second run with the
// same prompt (the same conversation) finds the first run's prefix blocks on disk and gives the
// same greedy tokens; a model the disk cannot serve is refused in one line.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { PROJECT_ROOT, ggufFixturePath } from '../fixtures/index.js';
import { GGUF_FIXTURES } from '../fixtures/recipe.js';

const CLI = join(PROJECT_ROOT, 'dist', 'src', 'cli.js');
const fixture = (name: string) => ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === name)!);
const tmp = mkdtempSync(join(tmpdir(), 'loom-kvdir-cli-'));
after(() => rmSync(tmp, { recursive: true, force: true }));
const kvFiles = (dir: string): number => readdirSync(dir, { recursive: true }).filter((f) => String(f).endsWith('.kv')).length;

function loom(...args: string[]) {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 120_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

// 40 words: a prompt of several 16-token blocks whatever the fixture's tokenizer makes of them
const PROMPT = Array.from({ length: 40 }, (_, i) => ['the', 'cat', 'sat', 'on', 'a', 'mat', 'and', 'saw'][i % 8]).join(' ');

describe('--kv-cache-dir on generate and chat', () => {
  it('loom generate: the second run finds the prompt on disk (cached_tokens) and gives the same tokens', () => {
    const dir = join(tmp, 'generate');
    const run = () => {
      const r = loom('generate', '-m', fixture('llama-q8_0'), '--backend', 'reference', '-p', PROMPT, '-n', '6', '--temperature', '0', '--ignore-eos', '--json', '--kv-cache-dir', dir);
      assert.equal(r.status, 0, r.stderr);
      return JSON.parse(r.stdout) as { prompt_ids: number[]; output_ids: number[]; cached_tokens: number };
    };
    const first = run();
    assert.ok(first.prompt_ids.length > 32, `${first.prompt_ids.length} prompt tokens`);
    assert.equal(first.cached_tokens, 0);
    assert.ok(kvFiles(dir) >= 2);
    const second = run();
    assert.equal(second.cached_tokens, Math.floor((first.prompt_ids.length - 1) / 16) * 16);
    assert.deepEqual(second.output_ids, first.output_ids);
    const without = JSON.parse(loom('generate', '-m', fixture('llama-q8_0'), '--backend', 'reference', '-p', PROMPT, '-n', '6', '--temperature', '0', '--ignore-eos', '--json').stdout) as { output_ids: number[]; cached_tokens: number };
    assert.equal(without.cached_tokens, 0);
    assert.deepEqual(without.output_ids, first.output_ids);
  });

  it('loom chat: the conversation goes to disk; the same turns again give the same replies', async () => {
    const dir = join(tmp, 'chat');
    const chat = async () => {
      const child = spawn(process.execPath, [CLI, 'chat', '-m', fixture('qwen2-f32'), '--backend', 'reference', '--temperature', '0', '-n', '4', '--ignore-eos', '--kv-cache-dir', dir, '--kv-cache-dir-size', '64MiB'], { stdio: ['pipe', 'pipe', 'pipe'] });
      let stdout = '', stderr = '';
      child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
      child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
      child.stdin.end(`${PROMPT}\n${PROMPT} again\n/exit\n`);
      const [code] = (await once(child, 'exit')) as [number];
      assert.equal(code, 0, stderr);
      return stdout;
    };
    const first = await chat();
    assert.ok(kvFiles(dir) >= 2, 'the turns were written');
    assert.equal(await chat(), first);
  });

  it('refuses a model whose state the disk cannot hold, in one line', () => {
    const r = loom('generate', '-m', fixture('qwen35-q8_0'), '--backend', 'reference', '-p', 'hi', '-n', '1', '--kv-cache-dir', join(tmp, 'hybrid'));
    assert.equal(r.status, 1, r.stderr);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.match(r.stderr, /--kv-cache-dir .*not a hybrid model/);
  });
});
