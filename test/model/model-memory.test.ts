// Memory-mapped loading (src/model/model-memory.ts): tensors used in place give the logits
// tensors read into memory give, the mapping goes with the model's dispose, files truncated
// beyond their headers' promise are one error naming them (with and without mmap, also when
// the file shrinks after it was opened), and --mlock refused by the system is a warning.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, copyFileSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import type { WorkerOptions } from 'node:worker_threads';
import { ModelFormatError } from '../../src/errors.js';
import { LLM } from '../../src/llm.js';
import { loadNativeKernels, mappingStats } from '../../src/kernels/native.js';
import { createArchitecture } from '../../src/model/arch/index.js';
import { buildBatch } from '../../src/model/batch.js';
import { openGGUF } from '../../src/model/gguf.js';
import type { GGUFFile } from '../../src/model/gguf.js';
import { ModelMemory } from '../../src/model/model-memory.js';
import { KvCache } from '../../src/model/kv-cache.js';
import { loadModel } from '../../src/model/load.js';
import type { LoadedModel, LoadOptions } from '../../src/model/load.js';
import { ModelRunner } from '../../src/model/runner.js';
import { ggufFixturePath, hfFixturePaths, PROJECT_ROOT } from '../fixtures/index.js';
import { GGUF_FIXTURES, HF_FIXTURES } from '../fixtures/recipe.js';

const kernels = loadNativeKernels();
const CLI = join(PROJECT_ROOT, 'dist', 'src', 'cli.js');
const gguf = (name: string): string => ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === name)!);
const hf = (name: string): string => hfFixturePaths(HF_FIXTURES.find((f) => f.name === name)!).folder;
const prompt = Array.from({ length: 23 }, (_, i) => (i * 7919 + 3) % 250);

/** the logits of every prompt position, native kernels */
function logitsOf(model: LoadedModel): Float32Array {
  const runner = new ModelRunner(createArchitecture(model.config, model.tensors), KvCache.forModel(model.config, 4, 16), kernels!);
  return runner.execute(buildBatch([{ tokenIds: prompt, startPos: 0, blockTable: [0, 1], wantLogits: true }], 16)).slice();
}

const dir = mkdtempSync(join(tmpdir(), 'loom-mmap-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('memory-mapped loading', { skip: kernels === undefined && 'the native core did not load' }, () => {
  for (const [name, path] of [
    ['llama-q4_k_m', gguf('llama-q4_k_m')],
    ['llama-q8_0 (16-row layout copies beside mapped tensors)', gguf('llama-q8_0')],
    ['qwen3moe-q4_k_m', gguf('qwen3moe-q4_k_m')],
    ['gemma4-q8_0', gguf('gemma4-q8_0')],
    ['hf-qwen2 (BF16 safetensors, 2 shards)', hf('hf-qwen2')],
    ['hf-gpt2 (Conv1D weights transposed)', hf('hf-gpt2')],
  ] as const) {
    it(`${name}: the same logits with and without mmap`, () => {
      const mapped = loadModel(path);
      const read = loadModel(path, { mmap: false });
      try {
        const a = logitsOf(mapped);
        const b = logitsOf(read);
        assert.equal(a.length, b.length);
        assert.ok(a.every((x, i) => Object.is(x, b[i])), 'logits differ');
      } finally {
        mapped.dispose();
        read.dispose();
      }
    });
  }

  it('GGUF tensors are views of the mapping, but those rewritten into a 16-row layout', () => {
    const model = loadModel(gguf('llama-q4_k_m'));
    try {
      const file = model.tensors as GGUFFile;
      logitsOf(model);
      assert.ok(file.bytesInPlace > 0, 'tensors in place');
      assert.equal(file.bytesRead, 0, 'nothing read into memory: no Q4_0/Q8_0 matrix in this file');
    } finally {
      model.dispose();
    }
    const off = loadModel(gguf('llama-q4_k_m'), { mmap: false });
    try {
      logitsOf(off);
      assert.equal((off.tensors as GGUFFile).bytesInPlace, 0, 'with mmap off every tensor is read');
    } finally {
      off.dispose();
    }
  });

  it("Gemma 4's per-layer token table is mapped (read by rows) even with mmap off", () => {
    const model = loadModel(gguf('gemma4-q8_0'), { mmap: false });
    try {
      const file = model.tensors as GGUFFile;
      logitsOf(model);
      const table = file.tensorInfos.get('per_layer_token_embd.weight')!;
      assert.equal(file.bytesInPlace, table.byteLength, 'only the per-layer table in place');
      assert.ok(file.bytesRead > 0);
    } finally {
      model.dispose();
    }
  });

  it('a tensor read by rows stays in place, in the file layout, where others of its type get a 16-row copy', () => {
    const path = gguf('llama-q8_0');
    const probe = openGGUF(path);
    const info = probe.tensorInfos.get('blk.0.attn_q.weight')!;
    const fd = openSync(path, 'r');
    const memory = new ModelMemory();
    try {
      const range = { path, fd, fileSize: probe.fileSize, offset: info.offset, length: info.byteLength, relayout: true };
      assert.equal(memory.inPlace({ ...range, name: info.name }), undefined, 'a matrix with a measured layout is copied');
      const rows = memory.inPlace({ ...range, name: 'per_layer_token_embd.weight' });
      assert.deepEqual(rows, new Uint8Array(readFileSync(path).subarray(info.offset, info.offset + info.byteLength)));
      // and the reader keeps the file's type for a tensor served in place, whatever layout it would get
      const file = openGGUF(path, undefined, (type, data) => data.fill(type), (r) => (r.name === info.name ? rows : undefined));
      assert.equal(file.tensor(info.name).type, info.type);
      assert.equal(file.tensor(info.name).data, rows);
      assert.notEqual(file.tensor('blk.0.attn_k.weight').type, info.type, 'the others are rewritten');
      file.close();
    } finally {
      memory.release();
      closeSync(fd);
      probe.close();
    }
  });

  it('dispose unmaps the file: the counter drops and the tensors read as empty, never freed memory', () => {
    const before = mappingStats().count;
    const model = loadModel(gguf('llama-q4_k_m'));
    logitsOf(model);
    assert.equal(mappingStats().count, before + 1, 'one mapping for the file, however many tensors view it');
    assert.ok(mappingStats().bytes >= statSync(gguf('llama-q4_k_m')).size);
    const w = model.tensors.get('blk.0.attn_q.weight');
    assert.ok(w.data.byteLength > 0);
    model.dispose();
    assert.equal(mappingStats().count, before, 'the mapping went with dispose');
    assert.equal(w.data.byteLength, 0, 'views of it are detached');
    assert.throws(() => kernels!.matmul(new Float32Array(w.dims[1]!), new Float32Array(w.dims[0]!), w, 1), RangeError);
    const shown = readFileSync('/proc/self/maps', 'utf8');
    assert.ok(!shown.includes(gguf('llama-q4_k_m')), '/proc/self/maps no longer lists the file');
  });

  it("an engine worker's mappings go when it exits (a supervisor's restart leaks none)", async () => {
    const before = mappingStats().count;
    const dist = join(PROJECT_ROOT, 'dist', 'src');
    const code = `
      const { loadModel } = await import(${JSON.stringify(join(dist, 'model', 'load.js'))});
      const { createArchitecture } = await import(${JSON.stringify(join(dist, 'model', 'arch', 'index.js'))});
      const { mappingStats } = await import(${JSON.stringify(join(dist, 'kernels', 'native.js'))});
      const m = loadModel(${JSON.stringify(gguf('llama-q4_k_m'))});
      createArchitecture(m.config, m.tensors);
      (await import('node:worker_threads')).parentPort.postMessage(mappingStats().count);`;
    const w = new Worker(code, { eval: true, type: 'module' } as WorkerOptions);
    const inWorker = await new Promise<number>((resolve, reject) => w.once('message', resolve).once('error', reject));
    await new Promise((resolve) => w.once('exit', resolve));
    assert.equal(inWorker, before + 1, 'the worker mapped the file (the counter is process-wide)');
    assert.equal(mappingStats().count, before);
  });

  it('the library takes mmap: false and mlock, and close() unmaps what it mapped', async () => {
    const before = mappingStats().count;
    const read = await LLM.load(gguf('llama-q4_k_m'), { worker: false, mmap: false, kvCacheMemory: '16MiB' });
    const a = await read.generate('Once', { maxTokens: 4, temperature: 0 });
    assert.equal(mappingStats().count, before, 'mmap: false maps nothing');
    await read.close();
    const mapped = await LLM.load(gguf('llama-q4_k_m'), { worker: false, mlock: true, kvCacheMemory: '16MiB' });
    const b = await mapped.generate('Once', { maxTokens: 4, temperature: 0 });
    assert.equal(mappingStats().count, before + 1);
    await mapped.close();
    assert.equal(mappingStats().count, before, 'close() unmapped the file');
    assert.deepEqual(b.tokenIds, a.tokenIds);
  });

  describe('a truncated file is one error naming it', () => {
    const whole = gguf('llama-q4_k_m');
    const cut = join(dir, 'cut.gguf');
    copyFileSync(whole, cut);
    truncateSync(cut, statSync(whole).size - 100);

    for (const opts of [{}, { mmap: false }] satisfies LoadOptions[]) {
      const label = opts.mmap === false ? '--no-mmap' : 'mmap';
      it(`loading (${label})`, () => {
        assert.throws(() => loadModel(cut, opts), (e: unknown) => e instanceof ModelFormatError && e.message.startsWith(`${cut}: file is truncated: tensor `));
      });

      it(`from the command line (${label})`, () => {
        const args = [CLI, 'generate', '--model', cut, '--prompt', 'hi', '-n', '1', ...(opts.mmap === false ? ['--no-mmap'] : [])];
        const r = spawnSync(process.execPath, args, { encoding: 'utf8', timeout: 60_000 });
        assert.equal(r.status, 1, r.stderr);
        assert.equal(r.signal, null);
        const lines = r.stderr.trim().split('\n');
        assert.equal(lines.length, 1, r.stderr);
        assert.match(lines[0]!, /^loom: .*cut\.gguf: file is truncated: tensor \S+ needs bytes \d+\.\.\d+ but the file has \d+ bytes$/);
      });

      it(`a file cut shorter after it was opened (${label})`, () => {
        const shrinking = join(dir, `shrinking-${label}.gguf`);
        copyFileSync(whole, shrinking);
        const model = loadModel(shrinking, opts);
        try {
          truncateSync(shrinking, statSync(whole).size - 100);
          assert.throws(() => createArchitecture(model.config, model.tensors), (e: unknown) => e instanceof ModelFormatError && /file is truncated/.test(e.message));
        } finally {
          model.dispose();
        }
      });
    }
  });

  it('--mlock refused for lack of RLIMIT_MEMLOCK is a warning line, and generation goes on', (t) => {
    // root locks past any limit (CAP_IPC_LOCK): drop it for the child, as an unprivileged user runs
    const setpriv = spawnSync('setpriv', ['--version']).status === 0;
    if (process.getuid?.() === 0 && !setpriv) return t.skip('running as root without setpriv to drop CAP_IPC_LOCK');
    if (/libasan/.test(process.env.LD_PRELOAD ?? '')) return t.skip('AddressSanitizer makes mlock a no-op that succeeds');
    const script = join(dir, 'mlock.sh');
    writeFileSync(script, `ulimit -l 0 && exec "${process.execPath}" "${CLI}" generate --model "${gguf('llama-q4_k_m')}" --prompt hi -n 2 --temperature 0 --mlock\n`);
    const cmd = process.getuid?.() === 0 ? ['setpriv', '--bounding-set', '-ipc_lock', '--inh-caps', '-ipc_lock', 'sh', script] : ['sh', script];
    const r = spawnSync(cmd[0]!, cmd.slice(1), { encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.status, 0, r.stderr);
    const warnings = r.stderr.split('\n').filter((l) => l.includes('mlock'));
    assert.equal(warnings.length, 1, r.stderr);
    assert.match(warnings[0]!, /^loom: warning: failed to mlock \d+-byte buffer: .*RLIMIT_MEMLOCK is 0 bytes.*; the weights are not locked in RAM$/);
    assert.ok(r.stdout.length > 0, 'it generated');
  });

  it('--mlock where the system allows it loads and generates without a warning', () => {
    const r = spawnSync(process.execPath, [CLI, 'generate', '--model', gguf('llama-q4_k_m'), '--prompt', 'hi', '-n', '2', '--temperature', '0', '--mlock'], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.status, 0, r.stderr);
    assert.ok(!r.stderr.includes('mlock'), r.stderr);
  });
});
