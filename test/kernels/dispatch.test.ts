// Which kernel the native matmul runs for every weight type on every instruction-set tier
// (AVX-512, AVX2 via LOOM_NO_SIMD=avx512, portable via LOOM_NO_SIMD=1). A type that silently
// fell back to a slower kernel would pass every numerical test; this pins the choice. The
// table is written by hand from the kernels' dispatch (native/weight-types.*, native/x86/*):
// change it only with the dispatch, on purpose. Each tier runs in a child process (the tier is
// fixed when the addon loads), as test/simd-paths.test.ts does.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadNativeKernels, nativeUnavailableReason, type NativeKernelInfo } from '../../src/kernels/native.js';
import { PROJECT_ROOT } from '../fixtures/index.js';

type Tier = 'avx512' | 'avx2' | 'portable';

/** AVX-512 kernels: one activation row, a few rows, GEMM family ('' none) and its first row count */
interface Avx512 {
  one: string;
  few: string;
  gemm: string;
  min: number;
}

interface Row {
  id: number;
  act: string;
  layout: number; // the load-time layout's type, -1 none
  avx512: Avx512;
  avx2: string; // one kernel for every row count (up to avx2Gemm's rows, where given)
  avx2Gemm?: { gemm: string; min: number };
  portable: string;
}

const dots = (one: string, few: string, gemm = '', min = 0): Avx512 => ({ one, few, gemm, min });
const same = (k: string, gemm = '', min = 0): Avx512 => dots(k, k, gemm, min);

const EXPECTED: Record<string, Row> = {
  F32: {
    id: 0, act: 'f32', layout: -1, avx512: same('dot_float_rows<f32>', 'f32', 8),
    avx2: 'dot_float_rows<f32>', avx2Gemm: { gemm: 'f32', min: 10 }, portable: 'dot_f32',
  },
  F16: {
    id: 1, act: 'f16', layout: -1, avx512: same('dot_float_rows<f16>', 'f32', 12),
    avx2: 'dot_float_rows<f16>', avx2Gemm: { gemm: 'f32', min: 12 }, portable: 'dot_f16',
  },
  BF16: {
    id: 30, act: 'bf16', layout: -1, avx512: same('dot_bf16_rows', 'bf16', 12),
    avx2: 'dot_bf16_rows', avx2Gemm: { gemm: 'f32', min: 10 }, portable: 'dot_bf16',
  },
  Q8_0: {
    id: 8, act: 'q8_0', layout: 129,
    avx512: dots('dot_q_0_wrows512<Q8_0>', 'dot_q_0_rows512<Q8_0>', 'q8', 7), avx2: 'dot_q8_0_rows', portable: 'dot_q8_0',
  },
  Q4_0: {
    id: 2, act: 'q8_0', layout: 128,
    avx512: dots('dot_q_0_quad_wrows512<Q4_0>', 'dot_q_0_quad_rows512<Q4_0>', 'q8', 9), avx2: 'dot_q4_0_rows', portable: 'dot_q4_0',
  },
  Q4_1: {
    id: 3, act: 'q8_0', layout: -1,
    avx512: dots('dot_q_0_wrows512<Q4_1>', 'dot_q_0_rows512<Q4_1>'), avx2: 'dot_q32_rows<Q4_1>', portable: 'dot_dequantized',
  },
  Q5_0: {
    id: 6, act: 'q8_0', layout: -1,
    avx512: dots('dot_q_0_quad_wrows512<Q5_0>', 'dot_q_0_quad_rows512<Q5_0>', 'q8', 10), avx2: 'dot_q32_rows<Q5_0>', portable: 'dot_dequantized',
  },
  Q5_1: {
    id: 7, act: 'q8_0', layout: -1,
    avx512: dots('dot_q_0_wrows512<Q5_1>', 'dot_q_0_rows512<Q5_1>'), avx2: 'dot_q32_rows<Q5_1>', portable: 'dot_dequantized',
  },
  IQ4_NL: {
    id: 20, act: 'q8_0', layout: -1,
    avx512: dots('dot_q_0_quad_wrows512<IQ4_NL>', 'dot_q_0_quad_rows512<IQ4_NL>', 'q8', 9), avx2: 'dot_q32_rows<IQ4_NL>', portable: 'dot_dequantized',
  },
  Q2_K: { id: 10, act: 'q8_k', layout: -1, avx512: same('dot_q2_k_512'), avx2: 'dot_q2_k_rows', portable: 'dot_dequantized' },
  Q3_K: { id: 11, act: 'q8_k', layout: -1, avx512: same('dot_q3_k_512', 'q6k', 12), avx2: 'dot_q3_k_rows', portable: 'dot_dequantized' },
  Q4_K: {
    id: 12, act: 'q8_k', layout: -1,
    avx512: dots('dot_q4_k_wrows512<4>', 'dot_q4_k_rows512<4>', 'q4k', 9), avx2: 'dot_q4_k_rows', portable: 'dot_q4_k',
  },
  Q5_K: {
    id: 13, act: 'q8_k', layout: -1,
    avx512: dots('dot_q4_k_wrows512<5>', 'dot_q4_k_rows512<5>', 'q4k', 9), avx2: 'dot_q5_k_rows', portable: 'dot_dequantized',
  },
  Q6_K: {
    id: 14, act: 'q8_k', layout: -1,
    avx512: dots('dot_q6_k_wrows512', 'dot_q6_k_rows512', 'q6k', 10), avx2: 'dot_q6_k_rows', portable: 'dot_q6_k',
  },
  // a few rows: the 256-bit VNNI kernel
  IQ4_XS: {
    id: 23, act: 'q8_k', layout: -1,
    avx512: dots('dot_iq4_xs_wrows512', 'avx512:dot_iq4_xs_rows', 'q6k', 9), avx2: 'dot_iq4_xs_rows', portable: 'dot_dequantized',
  },
  MXFP4: {
    id: 39, act: 'q8_0', layout: -1,
    avx512: dots('dot_mxfp4_wrows512', 'dot_mxfp4_rows512', 'q8', 9), avx2: 'dot_mxfp4_rows', portable: 'dot_dequantized',
  },
  // loom's interleaved layouts (AVX2 and AVX-512 VNNI machines load Q4_0 and Q8_0 into them)
  Q4_0_R16: { id: 128, act: 'q8_0', layout: -1, avx512: same('dot_r16<Q4_0_R16>'), avx2: 'dot_r16<Q4_0_R16>', portable: 'dot_r16_portable' },
  Q8_0_R16: { id: 129, act: 'q8_0', layout: -1, avx512: same('dot_r16<Q8_0_R16>'), avx2: 'dot_r16<Q8_0_R16>', portable: 'dot_r16_portable' },
};

/** type ids the native kernels do not compute with */
const UNSUPPORTED = [4, 5, 9, 15, 16, 19, 21, 22, 24, 40, 127, 130];

const prefixed = (isa: string, k: string) => (k.includes(':') ? k : `${isa}:${k}`);

function expected(tier: Tier, row: Row): NativeKernelInfo {
  if (tier === 'avx512') {
    const k = row.avx512;
    return { act: row.act, oneRow: prefixed('avx512', k.one), fewRows: prefixed('avx512', k.few), gemm: k.gemm, gemmMinRows: k.min, layout: row.layout };
  }
  const k = prefixed(tier, tier === 'avx2' ? row.avx2 : row.portable);
  const gemm = tier === 'avx2' ? row.avx2Gemm : undefined;
  return { act: row.act, oneRow: k, fewRows: k, gemm: gemm?.gemm ?? '', gemmMinRows: gemm?.min ?? 0, layout: row.layout };
}

interface ChildReport {
  kernels: string;
  info: Record<string, NativeKernelInfo | null>;
}

/** kernelInfo of every type (and of the unsupported ids) in a child with LOOM_NO_SIMD set as the tier needs */
function report(tier: Tier): ChildReport {
  const { NODE_TEST_CONTEXT: _, LOOM_NO_SIMD: __, ...env } = process.env;
  if (tier !== 'avx512') env.LOOM_NO_SIMD = tier === 'avx2' ? 'avx512' : '1';
  const ids = [...Object.values(EXPECTED).map((r) => r.id), ...UNSUPPORTED];
  const native = join(PROJECT_ROOT, 'dist', 'src', 'kernels', 'native.js');
  const script = `import('${native}').then((m) => {
    const info = {};
    for (const id of ${JSON.stringify(ids)}) info[id] = m.nativeKernelInfo(id) ?? null;
    console.log(JSON.stringify({ kernels: m.cpuFeatures().kernels, info }));
  })`;
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', env, timeout: 60_000 });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as ChildReport;
}

const skip = loadNativeKernels() ? false : `native core unavailable (${nativeUnavailableReason()})`;

describe('native matmul dispatch: the kernel each weight type runs on each tier', { skip }, () => {
  for (const tier of ['avx512', 'avx2', 'portable'] as const) {
    it(tier, (t) => {
      const got = report(tier);
      if (got.kernels !== tier) {
        // the tiers only narrow: a child asked for `tier` runs a narrower one only when the CPU lacks it
        t.skip(`this CPU has no ${tier} tier (its widest is ${got.kernels})`);
        return;
      }
      for (const [name, row] of Object.entries(EXPECTED)) {
        assert.deepEqual(got.info[row.id], expected(tier, row), `${name} (${row.id}) on ${tier}`);
      }
      for (const id of UNSUPPORTED) assert.equal(got.info[id], null, `type ${id} is not one the kernels compute with`);
    });
  }
});
