// The expert-batched MoE FFN: per-expert views share the file's bytes, routing is llama.cpp's
// top-k with weights renormalized, the batched layer equals a plain per-token sum of experts,
// and a token's output does not depend on which tokens share its experts' batches: bit for bit
// with the reference kernels; within rounding with the native ones, whose matmul rounds
// differently by row count (its GEMM from 7-12 rows by type, the dot kernels in pairs of
// rows), as it does for the dense layers: there the greedy tokens, not the bits, are the same
// in any batch, which the fixtures' greedy and routing margins make safe.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Kernels } from '../../../src/kernels/index.js';
import { referenceKernels } from '../../../src/kernels/reference.js';
import { loadNativeKernels } from '../../../src/kernels/native.js';
import { Scratch } from '../../../src/model/arch/architecture.js';
import { MoeFfn, expertViews, routeTopK } from '../../../src/model/arch/moe.js';
import { GGMLType } from '../../../src/tensor/weight-types.js';
import { quantize } from '../../../src/tensor/quant/quantize.js';
import type { MoeParams, TensorSource } from '../../../src/model/weights.js';
import type { WeightTensor } from '../../../src/tensor/weight-tensor.js';
import { gaussian } from '../../fixtures/random.js';

const D = 64;
const F = 32;
const P: MoeParams = { numExperts: 6, numExpertsUsed: 2, expertFfnSize: F, normTopK: true };

function tensor(name: string, type: GGMLType, dims: number[], seed: number, std: number): WeightTensor {
  const values = gaussian(dims.reduce((a, b) => a * b, 1), seed, std);
  return { name, type, dims, data: quantize(type, values, dims[0]!) };
}

function source(type: GGMLType): TensorSource {
  const E = P.numExperts;
  const map = new Map<string, WeightTensor>(
    [
      tensor('blk.0.ffn_gate_inp.weight', GGMLType.F32, [D, E], 1, 1),
      tensor('blk.0.ffn_gate_exps.weight', type, [D, F, E], 2, 1 / Math.sqrt(D)),
      tensor('blk.0.ffn_up_exps.weight', type, [D, F, E], 3, 1 / Math.sqrt(D)),
      tensor('blk.0.ffn_down_exps.weight', type, [F, D, E], 4, 1 / Math.sqrt(F)),
    ].map((t) => [t.name, t]),
  );
  return { has: (n) => map.has(n), get: (n) => map.get(n)! };
}

const native = loadNativeKernels();
const KERNELS: [string, Kernels | undefined][] = [['reference', referenceKernels], ['native', native]];

/** bit for bit (tolerance 0), or within `tolerance` of the row's largest |value| */
function assertRowsClose(got: Float32Array, want: Float32Array, tolerance: number, what: string): void {
  if (tolerance === 0) return assert.deepEqual(got, want, what);
  const scale = Math.max(...want.map(Math.abs));
  const diff = Math.max(...got.map((v, j) => Math.abs(v - want[j]!)));
  assert.ok(diff <= tolerance * scale, `${what}: differs by ${(diff / scale).toExponential(2)} of max |value|`);
}

describe('expert views', () => {
  it('are 2-D views into the 3-D tensor bytes, expert e after expert e - 1', () => {
    const t = tensor('x', GGMLType.Q8_0, [D, F, 3], 7, 1);
    const views = expertViews(t, 3);
    const bytes = t.data.length / 3;
    views.forEach((v, e) => {
      assert.deepEqual(v.dims, [D, F]);
      assert.equal(v.type, GGMLType.Q8_0);
      assert.equal(v.data.buffer, t.data.buffer, 'no copy');
      assert.equal(v.data.byteOffset, t.data.byteOffset + e * bytes);
      assert.equal(v.data.length, bytes);
    });
    assert.throws(() => expertViews(t, 4), /not 4 expert matrices/);
  });
});

describe('routing', () => {
  it('takes the k most probable experts, best first, their weights divided by their sum', () => {
    const probs = Float32Array.from([0.1, 0.4, 0.05, 0.3, 0.1, 0.05, /**/ 0.5, 0.1, 0.1, 0.1, 0.1, 0.1]);
    const r = { experts: new Int32Array(4), weights: new Float32Array(4) };
    assert.equal(routeTopK(probs, 2, P, r), 0, 'the second row ties at its 2nd and 3rd expert');
    assert.deepEqual([...r.experts], [1, 3, 0, 1]); // ties: the lowest id
    assert.ok(Math.abs(routeTopK(probs.subarray(0, 6), 1, P, r) - Math.log(0.3 / 0.1)) < 1e-6, 'margin: log(p_k / p_k+1), the router logits\' gap');
    assert.ok(Math.abs(r.weights[0]! - 0.4 / 0.7) < 1e-6 && Math.abs(r.weights[1]! - 0.3 / 0.7) < 1e-6);
    routeTopK(probs, 2, { ...P, normTopK: false }, r);
    assert.deepEqual([...r.weights].map((w) => +w.toFixed(6)), [0.4, 0.3, 0.5, 0.1]);
  });
});

describe('the expert-batched MoE FFN', () => {
  for (const [name, k] of KERNELS) {
    for (const type of [GGMLType.F32, GGMLType.Q8_0]) {
      const tolerance = name === 'reference' ? 0 : 1e-4; // a flipped expert would move a row by its whole size
      it(`${name}, ${GGMLType[type]}: a token's output is the same in any batch (${tolerance === 0 ? 'bit for bit' : 'within rounding'})`, { skip: k ? false : 'native core unavailable' }, () => {
        const T = 24; // enough rows that some experts get a GEMM-sized batch in the whole batch
        const h = gaussian(T * D, 11, 1);
        const ffn = new MoeFfn(source(type), 0, P, D);
        const batched = new Float32Array(T * D);
        ffn.forward(batched, h, T, k!, new Scratch());
        assert.equal(ffn.load.reduce((a, b) => a + b, 0), T * P.numExpertsUsed, 'every token counted once per expert it reads');
        // alone: each token through the same layer as a batch of one
        for (let t = 0; t < T; t++) {
          const one = new Float32Array(D);
          ffn.forward(one, h.subarray(t * D, (t + 1) * D), 1, k!, new Scratch());
          assertRowsClose(one, batched.subarray(t * D, (t + 1) * D), tolerance, `token ${t} alone`);
        }
        // a different batch: the odd tokens only, reversed
        const odd = Array.from({ length: T / 2 }, (_, i) => T - 1 - 2 * i);
        const hOdd = new Float32Array(odd.length * D);
        odd.forEach((t, i) => hOdd.set(h.subarray(t * D, (t + 1) * D), i * D));
        const outOdd = new Float32Array(odd.length * D);
        ffn.forward(outOdd, hOdd, odd.length, k!, new Scratch());
        odd.forEach((t, i) => assertRowsClose(outOdd.subarray(i * D, (i + 1) * D), batched.subarray(t * D, (t + 1) * D), tolerance, `token ${t} among the odd ones`));
        assert.ok(ffn.minRoutingGap > 0 && Number.isFinite(ffn.minRoutingGap));
      });
    }
  }

  it('matches a plain per-token computation (reference)', () => {
    const T = 5;
    const src = source(GGMLType.F32);
    const h = gaussian(T * D, 12, 1);
    const out = new Float32Array(T * D);
    new MoeFfn(src, 0, P, D).forward(out, h, T, referenceKernels, new Scratch());
    const k = referenceKernels;
    const gate = expertViews(src.get('blk.0.ffn_gate_exps.weight'), P.numExperts);
    const up = expertViews(src.get('blk.0.ffn_up_exps.weight'), P.numExperts);
    const down = expertViews(src.get('blk.0.ffn_down_exps.weight'), P.numExperts);
    for (let t = 0; t < T; t++) {
      const x = h.subarray(t * D, (t + 1) * D);
      const logits = new Float32Array(P.numExperts);
      k.matmul(logits, x, src.get('blk.0.ffn_gate_inp.weight'), 1);
      const p = Array.from(logits, Math.exp);
      const z = p.reduce((a, b) => a + b, 0);
      const order = p.map((v, e) => [v / z, e] as const).sort((a, b) => b[0] - a[0]).slice(0, 2);
      const sum = order[0]![0] + order[1]![0];
      const want = new Float64Array(D);
      for (const [w, e] of order) {
        const g = new Float32Array(F), u = new Float32Array(F), y = new Float32Array(D);
        k.matmul(g, x, gate[e]!, 1);
        k.matmul(u, x, up[e]!, 1);
        k.siluMul(g, g, u, F);
        k.matmul(y, g, down[e]!, 1);
        y.forEach((v, j) => (want[j]! += (w / sum) * v));
      }
      const got = out.subarray(t * D, (t + 1) * D);
      const scale = Math.max(...want.map(Math.abs));
      want.forEach((v, j) => assert.ok(Math.abs(got[j]! - v) <= 1e-5 * scale, `token ${t} [${j}]: ${got[j]} vs ${v}`));
    }
  });
});

describe('Gemma 4 layouts of the experts', () => {
  /** source(F32) with gate and up fused per expert (gate rows then up rows), as Gemma 4's converter writes them */
  function fusedSource(): TensorSource {
    const src = source(GGMLType.F32);
    const E = P.numExperts;
    const g = new Float32Array(src.get('blk.0.ffn_gate_exps.weight').data.buffer.slice(0));
    const u = new Float32Array(src.get('blk.0.ffn_up_exps.weight').data.buffer.slice(0));
    const fused = new Float32Array(2 * g.length);
    for (let e = 0; e < E; e++) {
      fused.set(g.subarray(e * F * D, (e + 1) * F * D), 2 * e * F * D);
      fused.set(u.subarray(e * F * D, (e + 1) * F * D), (2 * e + 1) * F * D);
    }
    const map = new Map<string, WeightTensor>([
      ['blk.0.ffn_gate_inp.weight', src.get('blk.0.ffn_gate_inp.weight')],
      ['blk.0.ffn_down_exps.weight', src.get('blk.0.ffn_down_exps.weight')],
      ['blk.0.ffn_gate_up_exps.weight', { name: 'blk.0.ffn_gate_up_exps.weight', type: GGMLType.F32, dims: [D, 2 * F, E], data: new Uint8Array(fused.buffer) }],
    ]);
    return { has: (n) => map.has(n), get: (n) => map.get(n)! };
  }

  it('gate and up fused in one [hidden, 2·F, E] tensor give the same outputs as separate ones (reference, bit for bit)', () => {
    const T = 9;
    const h = gaussian(T * D, 13, 1);
    const want = new Float32Array(T * D);
    const got = new Float32Array(T * D);
    new MoeFfn(source(GGMLType.F32), 0, P, D).forward(want, h, T, referenceKernels, new Scratch());
    new MoeFfn(fusedSource(), 0, P, D).forward(got, h, T, referenceKernels, new Scratch());
    assert.deepEqual(got, want);
  });

  it('a per-expert down scale (ffn_down_exps.scale) multiplies each expert\'s output before its routing weight; GeGLU experts', () => {
    const T = 7;
    const h = gaussian(T * D, 14, 1);
    const src = source(GGMLType.F32);
    const scale = Float32Array.from({ length: P.numExperts }, () => 2); // a power of 2: exact, so the sum scales exactly
    const scaled: TensorSource = {
      has: (n) => n === 'blk.0.ffn_down_exps.scale' || src.has(n),
      get: (n) => (n === 'blk.0.ffn_down_exps.scale' ? { name: n, type: GGMLType.F32, dims: [P.numExperts], data: new Uint8Array(scale.buffer) } : src.get(n)),
    };
    for (const act of ['silu', 'gelu'] as const) {
      const plain = new Float32Array(T * D);
      const doubled = new Float32Array(T * D);
      new MoeFfn(src, 0, P, D, act).forward(plain, h, T, referenceKernels, new Scratch());
      new MoeFfn(scaled, 0, P, D, act).forward(doubled, h, T, referenceKernels, new Scratch());
      assert.deepEqual(doubled, plain.map((v) => 2 * v), act);
    }
    const silu = new Float32Array(T * D);
    const gelu = new Float32Array(T * D);
    new MoeFfn(src, 0, P, D, 'silu').forward(silu, h, T, referenceKernels, new Scratch());
    new MoeFfn(src, 0, P, D, 'gelu').forward(gelu, h, T, referenceKernels, new Scratch());
    assert.notDeepEqual(gelu, silu, 'the activation is the one asked for');
  });

  it('routes from routerIn when given (Gemma 4 routes from its own normalization of the residual)', () => {
    const T = 6;
    const h = gaussian(T * D, 15, 1);
    const r = gaussian(T * D, 16, 1);
    const ffn = new MoeFfn(source(GGMLType.F32), 0, P, D);
    const a = new Float32Array(T * D);
    const b = new Float32Array(T * D);
    ffn.forward(a, h, T, referenceKernels, new Scratch(), r);
    ffn.forward(b, h, T, referenceKernels, new Scratch());
    assert.notDeepEqual(a, b);
  });
});
