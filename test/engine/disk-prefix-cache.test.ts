// --kv-cache-dir: a restarted engine (a new EngineCore over the same directory) finds the prefix
// blocks an earlier one computed, gives the same greedy tokens and logprobs as without them, and
// reports the hit; partial, corrupt and foreign files are skipped with one log line; the
// directory keeps to its size, least recently used file out first.
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { EngineCore } from '../../src/engine/engine.js';
import { chainHash } from '../../src/engine/kv-block-file.js';
import { resolveEngineConfig } from '../../src/engine/options.js';
import type { EngineConfig } from '../../src/engine/engine.js';
import type { EngineOptions } from '../../src/engine/options.js';
import { resolveSamplingParams } from '../../src/engine/sampling-params.js';
import { referenceKernels } from '../../src/kernels/reference.js';
import { fixtureModel } from '../fixtures/engine-run.js';
import { ggufFixturePath } from '../fixtures/index.js';
import { GGUF_FIXTURES } from '../fixtures/recipe.js';

const FIXTURE = 'llama-q8_0';
const PATH = ggufFixturePath(GGUF_FIXTURES.find((f) => f.name === FIXTURE)!);
const BS = 16;
const dirs: string[] = [];
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'loom-kvdir-'));
  dirs.push(d);
  return d;
}

interface Engine { core: EngineCore; logs: string[] }

function engine(opts: Partial<EngineOptions>, edit: (c: EngineConfig) => EngineConfig = (c) => c): Engine {
  const m = fixtureModel(FIXTURE);
  const config = edit(resolveEngineConfig({ model: PATH, kvCacheMemory: '16MiB', blockSize: BS, ...opts }, m.config, [...m.tokenizer.stopIds]));
  const core = new EngineCore(m, referenceKernels, config);
  const logs: string[] = [];
  if (core.diskCache) core.diskCache.log = (line) => logs.push(line);
  return { core, logs };
}

interface Run { tokens: number[]; logprobs: number[]; cached: number }

let nextId = 0;
function run(e: EngineCore, prompt: readonly number[], maxTokens = 6, cacheSalt?: string): Run {
  const id = `r${nextId++}`;
  const params = resolveSamplingParams({ temperature: 0, maxTokens, ignoreEos: true, logprobs: 0, ...(cacheSalt !== undefined && { cacheSalt }) });
  assert.equal(e.add({ type: 'add', id, promptIds: Int32Array.from(prompt), params, arrivalTime: 0 }), undefined);
  const out: Run = { tokens: [], logprobs: [], cached: -1 };
  while (e.hasWork) {
    for (const d of e.step()?.deltas ?? []) {
      out.tokens.push(...d.tokenIds);
      out.logprobs.push(...(d.logprobs ?? []));
      if (d.cachedPromptTokens !== undefined && out.cached < 0) out.cached = d.cachedPromptTokens;
    }
  }
  return out;
}

/** a prompt of n tokens, different per seed */
function prompt(n: number, seed: number): number[] {
  const vocab = fixtureModel(FIXTURE).config.vocabSize;
  return Array.from({ length: n }, (_, i) => (seed * 7919 + i * 104729 + ((i * i) % 13)) % (vocab - 10) + 5);
}

/** the file of prompt's block i in a namespace directory */
function blockFile(dir: string, p: readonly number[], i: number): string {
  let parent: string | number = 0;
  for (let j = 0; j <= i; j++) parent = chainHash(parent, p, j * BS, BS);
  return join(dir, `${parent as string}.kv`);
}

const P = prompt(6 * BS + 5, 1); // 6 full blocks and 5 tokens to compute

describe('--kv-cache-dir', () => {
  const dir = tempDir();
  const first = engine({ kvCacheDir: dir });
  const cold = run(first.core, P);
  const warm = run(first.core, P); // a hit in memory: the reference for a hit from disk
  const ns = first.core.diskCache!.dir;

  it('writes each full block once, under its chain hash', () => {
    assert.equal(first.core.diskCache!.stats.blocksWritten >= 6, true);
    for (let i = 0; i < 6; i++) assert.ok(statSync(blockFile(ns, P, i)).size > 0, `block ${i} is on disk`);
    assert.equal(warm.cached, 6 * BS);
    assert.deepEqual(readdirSync(ns).filter((f) => !f.endsWith('.kv')), [], 'no temporary file is left');
  });

  it('a restarted engine loads them: same tokens and logprobs, the hit reported', () => {
    const second = engine({ kvCacheDir: dir });
    const r = run(second.core, P);
    assert.equal(second.core.diskCache!.stats.blocksLoaded, 6);
    assert.equal(r.cached, 6 * BS);
    assert.equal(second.core.blocks.stats.hits, 6 * BS);
    assert.deepEqual(r.tokens, cold.tokens);
    assert.deepEqual(r.logprobs, warm.logprobs, 'bit for bit what a hit in memory gives');
    r.logprobs.forEach((lp, i) => assert.ok(Math.abs(lp - cold.logprobs[i]!) < 1e-3, `logprob ${i}: ${lp} vs ${cold.logprobs[i]} computed whole`));
    assert.deepEqual(second.logs, []);
    const without = run(engine({}).core, P);
    assert.deepEqual(without.tokens, r.tokens);
    assert.equal(without.cached, 0);
  });

  it('a cache salt names blocks of its own: another salt, or none, never loads them', () => {
    const d = tempDir();
    run(engine({ kvCacheDir: d }).core, P, 6, 'tenant-a');
    assert.equal(run(engine({ kvCacheDir: d }).core, P).cached, 0);
    assert.equal(run(engine({ kvCacheDir: d }).core, P, 6, 'tenant-b').cached, 0);
    const same = run(engine({ kvCacheDir: d }).core, P, 6, 'tenant-a');
    assert.equal(same.cached, 6 * BS);
    assert.deepEqual(same.tokens, cold.tokens);
  });

  it("counts the disk as vLLM counts a KV connector's cache: queries past the memory's prefix, hits loaded, the memory's hits without them", () => {
    const d = tempDir();
    run(engine({ kvCacheDir: d }).core, P);
    const e = engine({ kvCacheDir: d }).core;
    run(e, P);
    let s = e.cacheStats();
    assert.equal(s.kvCacheDir!.queries, P.length, 'nothing in memory: the whole prompt is looked up on disk');
    assert.equal(s.kvCacheDir!.hits, 6 * BS);
    assert.equal(s.kvCacheDir!.blocksLoaded, 6);
    assert.equal(s.prefixCacheQueries, P.length);
    assert.equal(s.prefixCacheHits, 0, 'the blocks came from disk, not from memory');
    run(e, P); // in memory now: the disk is asked only for what follows the memory's prefix
    s = e.cacheStats();
    assert.equal(s.prefixCacheHits, 6 * BS);
    assert.equal(s.kvCacheDir!.queries, P.length + (P.length - 6 * BS));
    assert.equal(s.kvCacheDir!.hits, 6 * BS);
    assert.equal(s.kvCacheDir!.bytes, e.diskCache!.bytes);
    assert.equal(engine({}).core.cacheStats().kvCacheDir, undefined);
  });

  it("resetPrefixCache leaves the files; with external, this model's are removed and other namespaces' stay", () => {
    const d = tempDir();
    const e = engine({ kvCacheDir: d }).core;
    const computed = run(e, P);
    const other = engine({ kvCacheDir: d, kvCacheDtype: 'f32' }).core;
    run(other, P);
    const files = (x: string) => readdirSync(x).filter((f) => f.endsWith('.kv')).length;
    const [ns, otherNs] = [e.diskCache!.dir, other.diskCache!.dir];
    const [n, otherN] = [files(ns), files(otherNs)];
    assert.ok(n >= 6 && otherN >= 6);
    assert.equal(e.resetPrefixCache(), true);
    assert.equal(files(ns), n);
    assert.equal(run(e, P).cached, 6 * BS, 'the memory forgot, the disk did not');
    assert.equal(e.resetPrefixCache(true), true);
    assert.equal(files(ns), 0);
    assert.equal(files(otherNs), otherN);
    assert.equal(e.diskCache!.bytes, 0);
    const again = run(e, P);
    assert.equal(again.cached, 0, 'nothing left to find');
    assert.deepEqual(again.tokens, computed.tokens);
    assert.ok(files(ns) >= 6, 'computed again, written again');
  });

  for (const [what, spoil] of [
    ['a corrupt file (one byte flipped)', (f: string) => { const b = readFileSync(f); b[b.length - 7] = b[b.length - 7]! ^ 0x20; writeFileSync(f, b); }],
    ['a truncated file', (f: string) => truncateSync(f, statSync(f).size - 100)],
    ['a file of another model', (f: string) => {
      const other = engine({ kvCacheDir: tempDir() }, (c) => ({ ...c, kvCacheDir: { ...c.kvCacheDir!, modelId: 'another-model-id' } }));
      run(other.core, P);
      copyFileSync(blockFile(other.core.diskCache!.dir, P, 2), f);
    }],
    ['a file of another cache dtype', (f: string) => {
      const other = engine({ kvCacheDir: tempDir(), kvCacheDtype: 'f32' });
      run(other.core, P);
      copyFileSync(blockFile(other.core.diskCache!.dir, P, 2), f);
    }],
  ] as const) {
    it(`skips ${what} with one log line, and loads what comes before it`, () => {
      const d = tempDir();
      const writer = engine({ kvCacheDir: d });
      run(writer.core, P);
      const f = blockFile(writer.core.diskCache!.dir, P, 2);
      spoil(f);
      const reader = engine({ kvCacheDir: d });
      const r = run(reader.core, P);
      assert.equal(reader.logs.length, 1, reader.logs.join('\n'));
      assert.match(reader.logs[0]!, /skipped .*\.kv: /);
      assert.equal(reader.core.diskCache!.stats.blocksLoaded, 2);
      assert.equal(r.cached, 2 * BS);
      assert.deepEqual(r.tokens, cold.tokens);
      r.logprobs.forEach((lp, i) => assert.ok(Math.abs(lp - cold.logprobs[i]!) < 1e-3));
      // the refused file was replaced by the block recomputed
      const again = engine({ kvCacheDir: d });
      assert.equal(run(again.core, P).cached, 6 * BS);
      assert.deepEqual(again.logs, []);
    });
  }

  it('keeps to its size: least recently used files out first', () => {
    const fileBytes = statSync(blockFile(ns, P, 0)).size;
    const d = tempDir();
    const A = prompt(3 * BS + 1, 2), B = prompt(3 * BS + 1, 3), C = prompt(3 * BS + 1, 4);
    const e = engine({ kvCacheDir: d, kvCacheDirSize: 7 * fileBytes });
    const nsd = e.core.diskCache!.dir;
    run(e.core, A);
    run(e.core, B);
    run(e.core, A); // a hit in memory uses A's files: B's are older now
    run(e.core, C); // 9 files: two must go, B's oldest
    const kept = (p: readonly number[]) => [0, 1, 2].map((i) => readdirSync(nsd).includes(blockFile(nsd, p, i).slice(nsd.length + 1)));
    assert.deepEqual(kept(A), [true, true, true]);
    assert.deepEqual(kept(B), [false, false, true]);
    assert.deepEqual(kept(C), [true, true, true]);
    assert.ok(e.core.diskCache!.bytes <= 7 * fileBytes);
    // a restart orders by mtime: the oldest go when the bound is lowered
    const old = Date.now() / 1000 - 3600;
    for (const i of [0, 1, 2]) utimesSync(blockFile(nsd, C, i), old - 10 + i, old - 10 + i);
    const smaller = engine({ kvCacheDir: d, kvCacheDirSize: 4 * fileBytes });
    assert.deepEqual(kept(C), [false, false, false]);
    assert.deepEqual(kept(A), [true, true, true]);
    assert.equal(smaller.core.diskCache!.stats.filesEvicted, 3);
  });

  it('removes temporary files a killed writer left, not ones being written', () => {
    const d = tempDir();
    const nsd = engine({ kvCacheDir: d }).core.diskCache!.dir;
    const stale = join(nsd, 'abc.kv.1-0.tmp'), fresh = join(nsd, 'def.kv.2-0.tmp');
    writeFileSync(stale, 'partial');
    writeFileSync(fresh, 'partial');
    utimesSync(stale, Date.now() / 1000 - 7200, Date.now() / 1000 - 7200);
    const e = engine({ kvCacheDir: d });
    assert.deepEqual(readdirSync(nsd).sort(), ['def.kv.2-0.tmp']);
    assert.equal(e.core.diskCache!.bytes, 0, 'temporary files are not blocks');
  });

  it('is refused for models whose prefix caching it cannot serve', () => {
    assert.throws(() => engine({ kvCacheDir: dir, enablePrefixCaching: false }), /--kv-cache-dir/);
    assert.throws(() => engine({ kvCacheDir: dir, kvCacheDirSize: '0.5' }), /--kv-cache-dir-size/);
    writeFileSync(join(dir, 'a-file'), '');
    assert.throws(() => engine({ kvCacheDir: join(dir, 'a-file', 'sub') }), /--kv-cache-dir .*a-file\/sub: ENOTDIR/);
    for (const [fixture, why] of [['qwen35-q8_0', /not a hybrid model/], ['gemma3-q8_0', /not a sliding-window pool/]] as const) {
      const m = fixtureModel(fixture);
      assert.throws(() => resolveEngineConfig({ model: PATH, kvCacheMemory: '16MiB', maxNumSeqs: 4, kvCacheDir: dir }, m.config, [...m.tokenizer.stopIds]), why);
    }
    // with its sliding layers in the global blocks, a Gemma model's whole state is in them
    const g = fixtureModel('gemma3-q8_0');
    assert.ok(resolveEngineConfig({ model: PATH, kvCacheMemory: '16MiB', kvCacheDir: dir, swaPool: false }, g.config, [...g.tokenizer.stopIds]).kvCacheDir);
  });
});
