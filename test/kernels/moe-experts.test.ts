// The routed experts' kernel (Kernels.moeExperts). Native: bit for bit what the per-expert
// kernel calls give (the same composition run on the native kernels, reference-moe.ts: the
// model's outputs do not move when the experts become one native call), and close to the
// reference on every weight type the MoE fixtures use, every activation, fused and separate
// gate/up, a stacked 3-D tensor and per-expert arrays, 1 to 64 tokens an expert (the dot
// kernels and the AVX-512 GEMM). Both: invariants any implementation keeps. The simd-paths
// test runs this file again on the narrower instruction sets.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ExpertActivation, ExpertRouting, ExpertWeights, Kernels } from '../../src/kernels/index.js';
import { referenceKernels as ref } from '../../src/kernels/reference.js';
import { moeExpertsComposed } from '../../src/kernels/reference-moe.js';
import type { WeightTensor } from '../../src/tensor/weight-tensor.js';
import { GGMLType, rowBytes } from '../../src/tensor/weight-types.js';
import { quantize } from '../../src/tensor/quant/quantize.js';
import type { GaussianRng } from '../fixtures/random.js';
import { RUN_SEED, relError, rngFor } from '../fixtures/kernel-cases.js';
import { nativeSkip, requireNative } from '../fixtures/native.js';

type TypeName = 'F32' | 'F16' | 'BF16' | 'Q8_0' | 'Q4_0' | 'Q4_K' | 'Q6_K' | 'MXFP4';

/** the fixtures' mixes: one type throughout, or llama-quantize's Q4_K_M (gate/up Q4_K, down Q6_K) */
const MIXES: readonly { name: string; gate: TypeName; down: TypeName }[] = [
  { name: 'F32', gate: 'F32', down: 'F32' },
  { name: 'F16', gate: 'F16', down: 'F16' },
  { name: 'BF16', gate: 'BF16', down: 'BF16' },
  { name: 'Q8_0', gate: 'Q8_0', down: 'Q8_0' },
  { name: 'Q4_0', gate: 'Q4_0', down: 'Q4_0' },
  { name: 'Q4_K_M', gate: 'Q4_K', down: 'Q6_K' },
  { name: 'MXFP4', gate: 'MXFP4', down: 'MXFP4' },
];

interface Layer {
  readonly w: ExpertWeights;
  readonly D: number;
  readonly F: number;
  readonly E: number;
}

/** E experts' matrices of `type` as one stacked tensor's bytes and its per-expert views */
function experts(rng: GaussianRng, type: TypeName, inF: number, outF: number, E: number, scale: number): { views: WeightTensor[]; data: Uint8Array } {
  const t = GGMLType[type];
  const data = quantize(t, rng.fill(inF * outF * E, scale), inF);
  const bytes = rowBytes(t, inF)! * outF;
  const views: WeightTensor[] = Array.from({ length: E }, (_, e) => ({ name: `blk.0.ffn_x_exps.weight[${e}]`, type: t, dims: [inF, outF], data: data.subarray(e * bytes, (e + 1) * bytes) }));
  return { views, data };
}

function layer(label: string, mix: (typeof MIXES)[number], o: { activation: ExpertActivation; fused?: boolean; biases?: boolean; scale?: boolean; stacked?: boolean; E?: number }): Layer {
  const rng = rngFor(`moe ${label}`);
  const E = o.E ?? 6;
  const D = mix.gate === 'F32' || mix.gate === 'F16' || mix.gate === 'BF16' ? 160 : 256;
  const F = mix.down === 'F32' || mix.down === 'F16' || mix.down === 'BF16' ? 96 : 256;
  const gate = experts(rng, mix.gate, D, o.fused ? 2 * F : F, E, 0.15);
  const up = o.fused ? undefined : experts(rng, mix.gate, D, F, E, 0.15);
  const down = experts(rng, mix.down, F, D, E, 0.15);
  const w: ExpertWeights = {
    gate: gate.views,
    up: up?.views,
    down: down.views,
    activation: o.activation,
    ...(o.biases && { gateBias: rng.fill(E * F, 0.5), upBias: rng.fill(E * F, 0.5), downBias: rng.fill(E * D, 0.5) }),
    ...(o.scale && { downScale: rng.fill(E, 1) }),
    ...(o.stacked !== false && { stacked: { gate: gate.data, up: up?.data, down: down.data } }),
  };
  return { w, D, F, E };
}

/** T tokens' routing to k distinct experts of E, best first, weights summing to about 1 */
function routing(rng: GaussianRng, T: number, k: number, E: number): ExpertRouting {
  const experts = new Int32Array(T * k);
  const weights = new Float32Array(T * k);
  for (let t = 0; t < T; t++) {
    const ids = Array.from({ length: E }, (_, e) => e).sort(() => rng.uniform() - 0.5).slice(0, k);
    const raw = ids.map(() => 0.1 + Math.abs(rng.uniform()));
    const sum = raw.reduce((a, b) => a + b, 0);
    ids.forEach((e, j) => {
      experts[t * k + j] = e;
      weights[t * k + j] = raw[j]! / sum;
    });
  }
  return { experts, weights };
}

const CASES: readonly { activation: ExpertActivation; fused?: boolean; biases?: boolean; scale?: boolean; stacked?: boolean }[] = [
  { activation: 'silu' },
  { activation: 'silu', stacked: false },
  { activation: 'gelu', fused: true, scale: true },
  { activation: 'swiglu-oai', biases: true },
];

/** (tokens, k): one token (decode), a few, 16 sequences' worth, and prefill-sized expert batches (the GEMM) */
const BATCHES: readonly [number, number][] = [[1, 2], [3, 4], [16, 4], [64, 2]];

function run(k: Kernels, l: Layer, x: Float32Array, T: number, K: number, r: ExpertRouting, composed = false): Float32Array {
  const out = new Float32Array(T * l.D).fill(Number.NaN);
  if (composed) moeExpertsComposed(k, out, x, T, K, r, l.w);
  else k.moeExperts(out, x, T, K, r, l.w);
  return out;
}

function invariants(k: Kernels): void {
  it('equal rows routed alike give equal outputs, wherever they sit in the batch; zero weights give zeros', () => {
    const l = layer('invariants', MIXES[3]!, { activation: 'silu' });
    const rng = rngFor('moe invariants');
    const T = 12, K = 2;
    const x = rng.fill(T * l.D, 1);
    x.copyWithin(9 * l.D, 2 * l.D, 3 * l.D); // token 9 = token 2
    const r = routing(rng, T, K, l.E);
    r.experts.copyWithin(9 * K, 2 * K, 3 * K);
    r.weights.copyWithin(9 * K, 2 * K, 3 * K);
    r.weights.fill(0, 5 * K, 6 * K); // token 5: both weights 0
    const out = run(k, l, x, T, K, r);
    assert.deepEqual(out.subarray(9 * l.D, 10 * l.D), out.subarray(2 * l.D, 3 * l.D));
    assert.ok(out.subarray(5 * l.D, 6 * l.D).every((v) => v === 0), 'zero weights, zero output');
    assert.ok(out.every(Number.isFinite));
  });
}

const seedNote = `(LOOM_TEST_SEED=${RUN_SEED})`;
/** max |native − reference| / max |reference|: matmuls that differ in summation order, then
 *  roundings that may fall the other way for an element (GELU through f16, the down matmul's
 *  activations to f16 / bf16 / 8-bit blocks) */
const BOUND: Record<string, number> = { F32: 1e-3, F16: 2e-3, BF16: 1e-2, Q8_0: 1e-2, Q4_0: 1e-2, Q4_K_M: 1e-2, MXFP4: 1e-2 };

describe('moeExperts: reference', () => invariants(ref));

const native = requireNative();
describe('moeExperts: native', { skip: nativeSkip() }, () => {
  const k = native!;
  for (const mix of MIXES) {
    it(`${mix.name}: bit for bit the per-expert native calls, and close to the reference`, () => {
      for (const c of CASES) {
        const what = `${mix.name} ${c.activation}${c.fused ? ' fused' : ''}${c.biases ? ' biases' : ''}${c.scale ? ' scale' : ''}${c.stacked === false ? ' per-expert arrays' : ''}`;
        const l = layer(what, mix, c);
        for (const [T, K] of BATCHES) {
          const rng = rngFor(`${what} ${T}x${K}`);
          const x = rng.fill(T * l.D, 1);
          const r = routing(rng, T, K, l.E);
          const out = run(k, l, x, T, K, r);
          const composed = run(k, l, x, T, K, r, true);
          const diff = out.findIndex((v, i) => !Object.is(v, composed[i]));
          assert.equal(diff, -1, `${what}, ${T} tokens × ${K}: element ${diff} is ${out[diff]}, the per-expert calls give ${composed[diff]} ${seedNote}`);
          const expected = run(ref, l, x, T, K, r);
          const err = relError(out, expected);
          assert.ok(err <= BOUND[mix.name]!, `${what}, ${T} tokens × ${K}: error ${err.toExponential(2)} > ${BOUND[mix.name]} ${seedNote}`);
        }
      }
    });
  }

  invariants(k);

  it('a long chunk run in groups of experts (LOOM_MOE_GROUP_ROWS: 5 rows a group) gives the same bits', () => {
    const l = layer('groups', MIXES[5]!, { activation: 'swiglu-oai', biases: true });
    for (const [T, K] of [[16, 4], [64, 2]] as const) {
      const rng = rngFor(`groups ${T}x${K}`);
      const x = rng.fill(T * l.D, 1);
      const r = routing(rng, T, K, l.E);
      const whole = run(k, l, x, T, K, r);
      process.env.LOOM_MOE_GROUP_ROWS = '5';
      try {
        const grouped = run(k, l, x, T, K, r);
        assert.equal(grouped.findIndex((v, i) => !Object.is(v, whole[i])), -1, `${T} tokens × ${K} ${seedNote}`);
      } finally {
        delete process.env.LOOM_MOE_GROUP_ROWS;
      }
    }
  });

  it('refuses expert ids outside the layer and weights shorter than E experts', () => {
    const l = layer('errors', MIXES[0]!, { activation: 'silu' });
    const x = new Float32Array(l.D);
    const out = new Float32Array(l.D);
    assert.throws(() => k.moeExperts(out, x, 1, 1, { experts: Int32Array.of(l.E), weights: Float32Array.of(1) }, l.w), /expert id/);
    const short = { ...l.w, stacked: { ...l.w.stacked!, down: l.w.stacked!.down.subarray(1) } };
    assert.throws(() => k.moeExperts(out, x, 1, 1, { experts: Int32Array.of(0), weights: Float32Array.of(1) }, short), RangeError);
  });
});
