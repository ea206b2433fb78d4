// `loom` as a user runs it: the real story from stories260K, --json, --chat, and one
// clear line (no stack trace, exit 1) for each kind of bad model file.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { GGMLType } from '../src/tensor/weight-types.js';
import { kv, writeGGUF } from '../src/model/gguf-writer.js';
import { PROJECT_ROOT, SHARED_MODELS, ggufFixturePath, hfFixturePaths } from './fixtures/index.js';
import { GGUF_FIXTURES, HF_FIXTURES } from './fixtures/recipe.js';

const CLI = join(PROJECT_ROOT, 'dist', 'src', 'cli.js');
const STORIES = join(SHARED_MODELS, 'stories260K.gguf');
const STORY =
  ', there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball. She wanted to play with it, but it was too high.\nLily';

function loom(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 120_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const tmp = mkdtempSync(join(tmpdir(), 'loom-cli-'));
process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));

describe('loom generate', () => {
  it('has --help on every command', () => {
    for (const args of [['--help'], ['generate', '--help']]) {
      const r = loom(...args);
      assert.equal(r.status, 0);
      assert.match(r.stdout, /Usage: loom/);
    }
    assert.match(loom('generate', '--help').stdout, /--max-tokens/);
  });

  it('prints the stories260K story llama.cpp prints', { skip: !existsSync(STORIES) && 'no ../shared/models' }, () => {
    const r = loom('generate', '--model', STORIES, '--prompt', 'Once upon a time', '--temperature', '0', '--max-tokens', '60');
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, STORY + '\n');
  });

  it('--json gives prompt_ids, output_ids, text and finish_reason', { skip: !existsSync(STORIES) && 'no ../shared/models' }, () => {
    const r = loom('generate', '-m', STORIES, '-p', 'Once upon a time', '--temperature', '0', '-n', '60', '--json');
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { prompt_ids: number[]; output_ids: number[]; text: string; finish_reason: string };
    assert.deepEqual(out.prompt_ids, [1, 403, 407, 261, 378]);
    assert.equal(out.output_ids.length, 60);
    assert.equal(out.text, STORY);
    assert.equal(out.finish_reason, 'length');
  });

  it('samples reproducibly with a seed', () => {
    const model = ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === 'gpt2-q8_0')!);
    // a high temperature flattens the fixture's peaked distribution so seeds matter
    const run = (seed: string) => JSON.parse(loom('generate', '-m', model, '-p', 'hello', '-n', '12', '--seed', seed, '--temperature', '20', '--top-k', '0', '--top-p', '1', '--min-p', '0', '--json', '--ignore-eos').stdout) as { output_ids: number[] };
    assert.deepEqual(run('7').output_ids, run('7').output_ids);
    assert.notDeepEqual(run('7').output_ids, run('8').output_ids);
  });

  it('--chat applies the chat template', () => {
    const model = ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === 'qwen2-f32')!);
    const r = loom('generate', '-m', model, '-p', 'hi', '-n', '3', '--temperature', '0', '--chat', '--json');
    assert.equal(r.status, 0, r.stderr);
    const plain = JSON.parse(loom('generate', '-m', model, '-p', 'hi', '-n', '3', '--temperature', '0', '--json').stdout) as { prompt_ids: number[] };
    const chat = JSON.parse(r.stdout) as { prompt_ids: number[] };
    assert.ok(chat.prompt_ids.length > plain.prompt_ids.length + 4, 'the template wraps the prompt');
  });

  it('runs an HF folder', () => {
    const { folder } = hfFixturePaths(HF_FIXTURES[0]!);
    const r = loom('generate', '-m', folder, '-p', 'hello world', '-n', '4', '--temperature', '0', '--json', '--ignore-eos');
    assert.equal(r.status, 0, r.stderr);
    assert.equal((JSON.parse(r.stdout) as { output_ids: number[] }).output_ids.length, 4);
  });
});

describe('--kv-cache-dtype', () => {
  const model = () => ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === 'llama-q8_0')!);
  const ids = (dtype: string) => loom('generate', '-m', model(), '-p', 'Once upon a time', '-n', '12', '--temperature', '0', '--ignore-eos', '--json', '--kv-cache-dtype', dtype);

  it('q8_0 generates the f16 cache\'s greedy tokens (auto is f16)', () => {
    const [q8, f16, auto] = [ids('q8_0'), ids('f16'), ids('auto')];
    assert.equal(q8.status, 0, q8.stderr);
    const out = (r: { stdout: string }) => (JSON.parse(r.stdout) as { output_ids: number[] }).output_ids;
    assert.deepEqual(out(q8), out(f16));
    assert.deepEqual(out(auto), out(f16));
  });

  it('refuses other values, and q8_0 for heads not whole blocks of 32, in one line', () => {
    for (const [r, pattern] of [
      [loom('generate', '-m', model(), '-p', 'hi', '--kv-cache-dtype', 'fp8'), /argument 'fp8' is invalid. Allowed choices are auto, f16, f32, q8_0, q4_0/],
      [loom('serve', '-m', model(), '--kv-cache-dtype', 'q4'), /argument 'q4' is invalid. Allowed choices are auto, f16, f32, q8_0, q4_0/],
      ...(existsSync(STORIES) ? [[loom('generate', '-m', STORIES, '-p', 'hi', '--kv-cache-dtype', 'q8_0'), /q8_0 needs attention head sizes that are a multiple of 32 .* head size is 8/] as const] : []),
    ] as const) {
      assert.equal(r.status, 1, r.stderr);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
      assert.match(r.stderr, pattern);
    }
  });
});

describe('bad model files get one clear line and exit code 1', () => {
  const expectOneLine = (path: string, pattern: RegExp) => {
    const r = loom('generate', '--model', path, '--prompt', 'hi', '-n', '1');
    assert.equal(r.status, 1, `exit ${r.status}: ${r.stderr}`);
    const lines = r.stderr.trim().split('\n');
    assert.equal(lines.length, 1, `expected one line, got:\n${r.stderr}`);
    assert.ok(lines[0]!.includes(path), `the message names the file: ${lines[0]}`);
    assert.match(lines[0]!, pattern);
    assert.doesNotMatch(r.stderr, /\n\s+at /);
  };
  const good = () => ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === 'llama-q4_0')!);

  it('a missing file', () => expectOneLine(join(tmp, 'nope.gguf'), /no such file/i));

  it('a truncated file', () => {
    const path = join(tmp, 'truncated.gguf');
    copyFileSync(good(), path);
    truncateSync(path, Math.floor(readFileSync(path).length * 0.6));
    expectOneLine(path, /truncated/i);
  });

  it('a file that is not a model', () => {
    const path = join(tmp, 'corrupt.gguf');
    writeFileSync(path, Buffer.from('this is not a model file at all, just text'));
    expectOneLine(path, /not a GGUF file/i);
  });

  it('a corrupt header', () => {
    const path = join(tmp, 'corrupt-header.gguf');
    const bytes = readFileSync(good());
    bytes.writeBigUInt64LE(0xffffffffffn, 8); // tensor count
    writeFileSync(path, bytes);
    expectOneLine(path, /corrupt|truncated|tensor count/i);
  });

  it('an unknown architecture', () => {
    const path = join(tmp, 'mamba.gguf');
    writeGGUF(path, {
      metadata: [kv.str('general.architecture', 'mamba')],
      tensors: [{ name: 'token_embd.weight', type: GGMLType.F32, dims: [4, 4], data: new Uint8Array(64) }],
    });
    expectOneLine(path, /architecture "mamba"/);
  });

  it('an unsupported tensor type', () => {
    const path = join(tmp, 'iq2.gguf');
    const source = good();
    writeGGUF(path, {
      metadata: [kv.str('general.architecture', 'llama'), kv.u32('llama.embedding_length', 256)],
      tensors: [{ name: 'token_embd.weight', type: GGMLType.IQ2_XXS, dims: [256, 2], data: new Uint8Array(2 * 66) }],
    });
    assert.ok(source);
    expectOneLine(path, /IQ2_XXS/);
  });

  it('a folder without a tokenizer', () => {
    const { folder } = hfFixturePaths(HF_FIXTURES[0]!);
    const copy = join(tmp, 'no-tokenizer');
    cpSync(folder, copy, { recursive: true });
    rmSync(join(copy, 'tokenizer.json'));
    expectOneLine(copy, /tokenizer\.json/);
  });

  it('--debug shows the stack', () => {
    const r = loom('generate', '--debug', '--model', join(tmp, 'nope.gguf'), '--prompt', 'hi');
    assert.equal(r.status, 1);
    assert.match(r.stderr, /\n\s+at /);
  });
});
