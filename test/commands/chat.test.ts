// `loom chat` driven through piped stdin as a user's terminal would: streamed replies
// through the chat template with the history kept, /clear and /system, plain completion for
// a model without a template, and Ctrl-C (SIGINT) stopping a reply but not the program.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { PNG_1X1, bytesOf } from '../fixtures/api-images.js';
import { PROJECT_ROOT, ggufFixturePath } from '../fixtures/index.js';
import { GGUF_FIXTURES } from '../fixtures/recipe.js';

const CLI = join(PROJECT_ROOT, 'dist', 'src', 'cli.js');
// the pseudo-terminal driver is Python's pty module (Python 3 is there wherever node-gyp built the core)
const noPython = spawnSync('python3', ['-c', 'import pty'], { encoding: 'utf8' }).status === 0 ? false : 'no python3 with the pty module';

interface Turn {
  promptTokens: number;
  replyTokens: number;
  finish: string;
}

function turns(stderr: string): Turn[] {
  return [...stderr.matchAll(/^loom: prompt (\d+) tokens, reply (\d+) tokens in [\d.]+ s \(([\d.]+|-) tokens\/s\), (\w+)$/gm)].map((m) => ({
    promptTokens: Number(m[1]),
    replyTokens: Number(m[2]),
    finish: m[4]!,
  }));
}

function chat(args: string[]) {
  const child = spawn(process.execPath, [CLI, 'chat', '--verbose', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  const out = { stdout: '', stderr: '' };
  child.stdout.setEncoding('utf8').on('data', (s: string) => (out.stdout += s));
  child.stderr.setEncoding('utf8').on('data', (s: string) => (out.stderr += s));
  return { child, out };
}

describe('loom chat', () => {
  it('keeps the history through the chat template; /clear forgets it, /system adds one', async () => {
    const model = ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === 'qwen2-f32')!);
    const { child, out } = chat(['--model', model, '--backend', 'reference', '--temperature', '0', '-n', '4', '--ignore-eos']);
    child.stdin.end('hi\nhow are you\n/clear\nhi\n/system You are brief.\nhi\n/exit\nnever read\n');
    const [code] = (await once(child, 'exit')) as [number];
    assert.equal(code, 0, out.stderr);
    const t = turns(out.stderr);
    assert.equal(t.length, 4, out.stderr);
    assert.ok(t.every((x) => x.replyTokens === 4 && x.finish === 'length'));
    assert.ok(t[1]!.promptTokens > t[0]!.promptTokens + 4, 'the second prompt carries the first turn');
    assert.equal(t[2]!.promptTokens, t[0]!.promptTokens, 'after /clear the same message is the same prompt');
    assert.ok(t[3]!.promptTokens > t[0]!.promptTokens + 2, 'the system prompt is in the prompt');
    assert.ok(out.stdout.length >= 4, 'the replies are printed');
    assert.match(out.stderr, /conversation cleared/);
    assert.doesNotMatch(out.stderr, /no chat template/);
  });

  it('attaches images (--image, /image) to the next message; a model without a projector refuses it and the chat goes on', async () => {
    const model = ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === 'qwen2-f32')!);
    const dir = mkdtempSync(join(tmpdir(), 'loom-chat-image-'));
    const png = join(dir, 'dot.png');
    const text = join(dir, 'notes.txt');
    writeFileSync(png, bytesOf(PNG_1X1));
    writeFileSync(text, 'not an image');
    const { child, out } = chat(['--model', model, '--backend', 'reference', '--temperature', '0', '-n', '2', '--ignore-eos', '--image', png]);
    child.stdin.end(`what is this?\n/image ${join(dir, 'missing.png')}\n/image ${text}\n/image ${png}\n/image ${png}\nand these?\nhi\n/exit\n`);
    const [code] = (await once(child, 'exit')) as [number];
    assert.equal(code, 0, out.stderr);
    assert.match(out.stderr, /dot\.png attached to your next message \(1 image\)/);
    assert.match(out.stderr, /dot\.png attached to your next message \(2 images\)/);
    assert.match(out.stderr, /cannot read .*missing\.png: ENOENT/);
    assert.match(out.stderr, /notes\.txt is not a PNG, JPEG, GIF or WebP file/);
    // both messages with images reach the pipeline, which has no projector to read them
    assert.equal(out.stderr.match(/This model cannot read images: start loom with a vision projector \(--mmproj\)/g)?.length, 2, out.stderr);
    // the refused messages are not in the history: "hi" is the first turn
    const t = turns(out.stderr);
    assert.equal(t.length, 1, out.stderr);
    assert.equal(t[0]!.replyTokens, 2);
  });

  it('continues a model without a template as plain text; Ctrl-C stops the reply, not the program', async () => {
    const { child, out } = chat(['--backend', 'reference', '--temperature', '0', '-n', '150', '--ignore-eos']);
    child.stdin.write('Once upon a time\n');
    await new Promise<void>((ok) => child.stdout.once('data', () => ok()));
    child.kill('SIGINT');
    await new Promise<void>((ok) => {
      const check = (): void => void (/loom: stopped/.test(out.stderr) && turns(out.stderr).length === 1 ? ok() : setTimeout(check, 20));
      check();
    });
    child.stdin.end('Lily\n/exit\n');
    const [code] = (await once(child, 'exit')) as [number];
    assert.equal(code, 0, out.stderr);
    assert.match(out.stderr, /using the built-in stories260K/);
    assert.match(out.stderr, /stories260K has no chat template: each message continues the conversation as plain text/);
    const [first, second] = turns(out.stderr);
    assert.equal(first!.finish, 'abort');
    assert.ok(first!.replyTokens < 150, `stopped after ${first!.replyTokens} tokens`);
    assert.equal(first!.promptTokens, 5, 'BOS + "Once upon a time"');
    assert.ok(second!.promptTokens > first!.promptTokens + first!.replyTokens, 'the transcript so far is continued');
    // the stopped reply is the start of llama.cpp's greedy story (../shared/models/README.md)
    const stopped = out.stdout.slice(0, out.stdout.indexOf('\n'));
    assert.ok(stopped.length > 0 && ', there was a little girl named Lily. She loved to play outside in the park.'.startsWith(stopped), out.stdout);
  });

  it('in a terminal: Ctrl-C stops the reply, Ctrl-C on a typed line clears it, /exit leaves', { skip: noPython }, () => {
    const driver = join(PROJECT_ROOT, 'test', 'helpers', 'chat-pty.py');
    const r = spawnSync('python3', [driver, process.execPath, CLI, 'chat', '--backend', 'reference', '--temperature', '0', '--ignore-eos', '-n', '400', '--verbose'], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /\nEXIT 0\n$/, r.stdout);
    const [turn] = turns(r.stdout.replaceAll('\r', ''));
    assert.equal(turn?.finish, 'abort', r.stdout);
    assert.ok(turn!.replyTokens < 400);
    assert.match(r.stdout, />>> /, 'a prompt is shown in a terminal');
  });
});
