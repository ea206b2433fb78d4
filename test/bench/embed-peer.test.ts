// bench embed-peer and its make-model shapes: the embedding shapes load in loom as the pooling
// models they stand for (BERT cls/mean, nomic-bert, Qwen3-Embedding's last token), llama-server
// gets --embeddings, the report reads; with LOOM_LLAMA_SERVER=<llama-server binary> a small
// run against both servers (the two servers' vectors of the same ids within cosine 0.9999).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { benchModelContents, makeModel } from '../../src/bench/make-model.js';
import { llamaServerArgs } from '../../src/bench/llama-server.js';
import { runEmbedPeer } from '../../src/bench/embed-peer.js';
import type { EmbedPeerReport } from '../../src/bench/embed-peer.js';
import { formatEmbedPeer } from '../../src/bench/embed-peer-report.js';
import { loadModel } from '../../src/model/load.js';
import { testKernels } from '../fixtures/native.js';
import { embedAll } from '../fixtures/embed-all.js';

describe('bench make-model: embedding shapes', () => {
  for (const [shape, arch, pooling, hidden] of [['bge-small-en-v1.5', 'bert', 'cls', 384], ['nomic-embed-text-v1.5', 'nomic-bert', 'mean', 768]] as const) {
    it(`${shape}: a ${arch} GGUF loom pools (${pooling}), with a WordPiece vocabulary`, () => {
      const dir = mkdtempSync(join(tmpdir(), 'loom-embed-shape-'));
      try {
        const path = join(dir, 'm.gguf');
        makeModel(path, { shape, type: 'f16', seed: 0, layers: 1 });
        const model = loadModel(path);
        assert.equal(model.config.arch, arch);
        assert.equal(model.config.pooling?.type, pooling);
        assert.equal(model.config.hiddenSize, hidden);
        assert.equal(model.config.bidirectional, true);
        const ids = model.tokenizer.encode('hello world');
        assert.ok(ids.length >= 3, 'CLS, a piece, SEP');
        const [v] = embedAll(model, [ids], testKernels());
        assert.equal(v!.length, hidden);
        assert.ok(v!.every(Number.isFinite));
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }

  it('qwen3-embedding-0.6b: the Qwen3-0.6B decoder with pooling_type last', () => {
    const { metadata } = benchModelContents({ shape: 'qwen3-embedding-0.6b', type: 'f16', seed: 0 });
    const key = (k: string) => metadata.find((e) => e.key === k)?.value;
    assert.equal(key('general.architecture'), 'qwen3');
    assert.equal(key('qwen3.pooling_type'), 3);
    assert.equal(key('qwen3.embedding_length'), 1024);
    assert.equal(key('qwen3.block_count'), 28);
  });

  it('embeddinggemma-300m: gemma-embedding with a window of 512, mean pooling and the Dense modules', () => {
    const { metadata, tensors } = benchModelContents({ shape: 'embeddinggemma-300m', type: 'f16', seed: 0 });
    const key = (k: string) => metadata.find((e) => e.key === k)?.value;
    assert.equal(key('general.architecture'), 'gemma-embedding');
    assert.equal(key('gemma-embedding.attention.sliding_window'), 512);
    assert.equal(key('gemma-embedding.pooling_type'), 1);
    assert.equal(key('gemma-embedding.dense_2_feat_out'), 3072);
    assert.deepEqual(tensors.find((t) => t.name === 'dense_3.weight')?.dims, [3072, 768]);
  });
});

describe('bench embed-peer', () => {
  it('llama-server runs with --embeddings and a ubatch that holds an input', () => {
    const args = llamaServerArgs('m.gguf', 8080, { threads: 2, parallel: 64, slotContext: 520, extraArgs: ['--embeddings', '-b', '2048', '-ub', '2048'] });
    assert.deepEqual(args.slice(-5), ['--embeddings', '-b', '2048', '-ub', '2048']);
    assert.equal(args[args.indexOf('-c') + 1], String(64 * 520));
  });

  it('the report: one row per case with the ratio and the cosine', () => {
    const r = {
      options: { model: 'm.gguf', threads: 2, batches: [1], lengths: [16], inputs: 8, rounds: 1, seed: 0, ubatch: 2048, loomArgs: [], llamaArgs: [] },
      llamaServer: { binary: 'llama-server', args: ['--embeddings'] },
      loomArgs: ['--threads', '2'],
      dimensions: 384,
      loadBefore: 0.5,
      loadAfter: 0.6,
      runs: [],
      cases: [{ batch: 64, length: 512, loom: 200, llama: 80, ratio: 2.5, minCosine: 0.99999 }],
    } satisfies EmbedPeerReport;
    const text = formatEmbedPeer(r);
    assert.match(text, /64\s+512\s+200\s+80\.0\s+2\.50x\s+0\.999990/);
    assert.match(text, /384 dimensions/);
  });

  const binary = process.env.LOOM_LLAMA_SERVER;
  it('against llama-server on a small BERT: both answer every case, with the same vectors', { skip: binary ? false : 'set LOOM_LLAMA_SERVER to a llama-server binary' }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'loom-embed-peer-'));
    try {
      const path = join(dir, 'm.gguf');
      makeModel(path, { shape: 'all-minilm-l6-v2', type: 'f16', seed: 0, layers: 2 });
      const r = await runEmbedPeer({ model: path, threads: 1, batches: [1, 4], lengths: [8, 40], inputs: 4, rounds: 1, seed: 1, ubatch: 512, llamaServer: binary!, loomArgs: [], llamaArgs: [] }, () => {});
      assert.equal(r.cases.length, 4);
      assert.equal(r.runs.length, 8);
      for (const c of r.cases) {
        assert.ok(c.loom > 0 && c.llama > 0);
        assert.ok(c.minCosine >= 0.9999, `batch ${c.batch} length ${c.length}: cosine ${c.minCosine}`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
