// `loom bench kernels`: the machine probes return sane numbers and the quick run reports every
// weight type and attention case with positive figures. Nothing here asserts on wall time.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { KernelReport } from '../../src/bench/kernels.js';
import { measure } from '../../src/bench/peer.js';
import { decodeWeightBytes } from '../../src/bench/weight-traffic.js';
import type { GGUFFile } from '../../src/model/gguf.js';
import { fixtureModel } from '../fixtures/engine-run.js';
import { probeFmaPeak, probeInt8Peak, probeReadBandwidth } from '../../src/kernels/native.js';
import { nativeSkip } from '../fixtures/native.js';
import { PROJECT_ROOT } from '../fixtures/index.js';

const CLI = join(PROJECT_ROOT, 'dist', 'src', 'cli.js');
const skip = nativeSkip();
const positive = (x: unknown): boolean => typeof x === 'number' && Number.isFinite(x) && x > 0;

describe('machine probes', { skip }, () => {
  it('FMA peak: positive finite GFLOP/s at the widest width and at every width asked for', () => {
    const widest = probeFmaPeak(0.02);
    assert.ok(positive(widest.gflops), `gflops ${widest.gflops}`);
    assert.ok([32, 256, 512].includes(widest.bits), `bits ${widest.bits}`);
    assert.ok(positive(probeFmaPeak(0.01, 32).gflops));
    if (widest.bits === 512) assert.ok(positive(probeFmaPeak(0.01, 256).gflops));
  });

  it('int8 product peak: positive finite GOP/s, named by the instruction it ran', () => {
    const int8 = probeInt8Peak(0.02);
    assert.ok(positive(int8.gops), `gops ${int8.gops}`);
    assert.ok(['avx512:dpbusd', 'avx2:maddubs+madd', 'portable:scalar'].includes(int8.instruction), int8.instruction);
  });

  it('read bandwidth: positive finite GB/s', () => {
    assert.ok(positive(probeReadBandwidth(4 * 2 ** 20, 0.02)));
  });

  it('refuses bad arguments with RangeError', () => {
    assert.throws(() => probeFmaPeak(0), RangeError);
    assert.throws(() => probeFmaPeak(0.01, 128), RangeError);
    assert.throws(() => probeReadBandwidth(1024, 0.01), RangeError);
    assert.throws(() => probeInt8Peak(0), RangeError);
  });
});

describe('loom bench kernels', { skip }, () => {
  it('--quick --json reports every weight type and attention case with positive figures', () => {
    const r = spawnSync(process.execPath, [CLI, 'bench', 'kernels', '--quick', '--json', '--threads', '2'], { encoding: 'utf8', timeout: 120_000 });
    assert.equal(r.status, 0, r.stderr);
    const report = JSON.parse(r.stdout) as KernelReport;
    assert.equal(report.settings.threads, 2);
    assert.ok(positive(report.machine.fmaPeakGflops) && positive(report.machine.readBandwidthGBs));
    assert.ok(positive(report.machine.int8PeakGops), 'int8 product peak');
    assert.deepEqual(report.matmul.map((m) => m.type), [
      'F32', 'F16', 'BF16', 'Q8_0', 'Q4_0', 'Q4_1', 'Q5_0', 'Q5_1', 'IQ4_NL', 'Q2_K', 'Q3_K', 'Q4_K', 'Q5_K', 'Q6_K', 'IQ4_XS', 'MXFP4',
    ]);
    for (const m of report.matmul) {
      for (const x of [m.oneRow.gbps, m.oneRow.pctBandwidth, m.shortRow.gbps, m.shortRow.pctBandwidth, m.manyRows.gflops, m.manyRows.pctPeak, m.oneRow.medianMs]) assert.ok(positive(x), `${m.type}: ${x}`);
      assert.equal(m.oneRow.met !== undefined, !['F32', 'BF16', 'Q4_0', 'Q6_K', 'MXFP4'].includes(m.type), `${m.type} carries the 1-row goal`);
      assert.equal(typeof m.manyRows.met, 'boolean');
      // the share of the int8 peak exactly for the types whose activations are rounded to integers
      assert.equal(m.manyRows.pctInt8Peak !== undefined, !['F32', 'F16', 'BF16'].includes(m.type), `${m.type}: % int8`);
    }
    assert.equal(report.attention.length, 4);
    for (const a of report.attention) assert.ok(positive(a.gbps) && positive(a.kvBytes) && a.layers >= 1);
    assert.deepEqual([...new Set(report.attention.map((a) => a.sequences))].length, 2);
  });

  it('prints a table with the goals marked', () => {
    const r = spawnSync(process.execPath, [CLI, 'bench', 'kernels', '--quick', '--threads', '1'], { encoding: 'utf8', timeout: 120_000 });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /f32 FMA peak [\d.]+ GFLOP\/s/);
    assert.match(r.stdout, /memory read bandwidth [\d.]+ GB\/s/);
    assert.match(r.stdout, /int8 product peak [\d.]+ GOP\/s \((avx512|avx2|portable):/);
    assert.match(r.stdout, /Q4_K .*(met|NOT MET)/);
    assert.match(r.stdout, /attention decode/);
  });
});

describe('bench peer arithmetic', () => {
  it('median, min and max of runs', () => {
    assert.deepEqual(measure([3, 1, 2]), { median: 2, min: 1, max: 3, runs: [3, 1, 2] });
  });

  it('weight bytes a decoded token reads: every matrix once, an embedding row, the tied lm_head whole, no MTP layers', () => {
    // the fixture shapes (recipe.ts): hidden 256, 2 layers, q 4 × 64, k/v 2 × 64, ffn 512, F32
    const layer = 256 * 256 + 2 * 256 * 128 + 256 * 256 + 3 * 256 * 512;
    const untied = fixtureModel('llama-f32');
    const vocab = untied.config.vocabSize;
    assert.equal(decodeWeightBytes(untied), 4 * (2 * layer + vocab * 256 + 256)); // output + one token_embd row
    const tied = fixtureModel('qwen2-f32');
    assert.equal(decodeWeightBytes(tied), 4 * (2 * layer + tied.config.vocabSize * 256)); // token_embd is the lm_head
    // the Q8_0 Qwen3.5 file carries a multi-token-prediction block (blk.4) that inference skips
    const mtp = fixtureModel('qwen35-q8_0');
    const infos = [...(mtp.tensors as GGUFFile).tensorInfos.values()];
    const mtpMatrices = infos.filter((t) => t.name.startsWith('blk.4.') && t.dims.length > 1 && t.dims[1]! > 1);
    assert.ok(mtpMatrices.length > 0);
    const runAll = { ...mtp, config: { ...mtp.config, numLayers: 5 } };
    assert.equal(decodeWeightBytes(runAll)! - decodeWeightBytes(mtp)!, mtpMatrices.reduce((n, t) => n + t.byteLength, 0));
  });
});
