// The native kernels compute what the reference kernels compute, at model level, with a bound a
// 1% error breaks. Greedy tokens cannot show that (the fixtures' top-2 margins are ~30% of the
// largest logit) and the llama.cpp bounds (1.5–3% on quantized types) let a 3% attention error
// through; so here the full logit vectors are compared, native vs reference, at every position
// of one forced token sequence (a prefill of the prompt, then 8 one-token decode steps), and the
// same comparison is shown to FAIL for kernels made 1% wrong in one place.
//
// Measured honest differences (max |native − reference| / logit range over all positions and
// every fixture of the type, AVX-512, AVX2 and portable, 2026-11-28): F32 1.3e-4, F16 3.6e-4.
// A 1% error (attention scores ×1.01, q and k ×1.01 after RoPE, layer 0's FFN output or the last
// layer's attention output ×1.01) moves them by 1.9e-3 to 1.5e-2 on the llama/qwen/gpt2 shapes.
//
// BF16 and the quantized types round each matmul's activations to a coarse grid (bf16, 8-bit
// blocks) exactly as the reference does, but native sums in f32 and the reference in f64, so a
// last-bit difference upstream now and then rounds one activation the other way; that cascades
// (worst seen: 1.4e-3 on BF16, 2e-3 to 9e-3 on the quantized types, as large as the 1% errors).
// For those types they are compared where they round the same way: the reference runs the
// forward pass, and each of its matmuls (the per-type kernels) is computed natively too, from
// the same inputs, and compared (honest: summation order only, at most 1.0e-6 of the output's
// largest value on every type and tier; bound 2e-5; a 1% error gives 1e-2).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Kernels, MatmulTarget } from '../../src/kernels/index.js';
import { referenceKernels as ref } from '../../src/kernels/reference.js';
import type { WeightTensor } from '../../src/tensor/weight-tensor.js';
import { fixtureModel } from '../fixtures/engine-run.js';
import { forcedLogits, logitDistance } from '../fixtures/forced-logits.js';
import { nativeSkip, requireNative } from '../fixtures/native.js';
import { FIXTURE_PROMPTS, GGUF_FIXTURES } from '../fixtures/recipe.js';
import type { FixtureWeightType } from '../fixtures/recipe.js';

/** max |native − reference| / logit range, about 3× the honest differences and 2.5× below the smallest 1% error */
const LOGIT_BOUND: Partial<Record<FixtureWeightType, number>> = { F32: 4e-4, F16: 8e-4 };
/** max |native − reference| / max |reference| of one matmul's output, from the same inputs */
const MATMUL_BOUND = 2e-5;
const DECODE_STEPS = 8;

const native = requireNative();
const skip = nativeSkip();

function sequence(name: string): { prompt: number[]; decoded: number[] } {
  const { tokenizer } = fixtureModel(name);
  return {
    prompt: tokenizer.encode(FIXTURE_PROMPTS[0]!, { addSpecial: true }),
    decoded: tokenizer.encode(FIXTURE_PROMPTS[1]!, { addSpecial: false }).slice(0, DECODE_STEPS),
  };
}

const referenceRuns = new Map<string, Float32Array[]>();
function referenceLogits(name: string): Float32Array[] {
  let rows = referenceRuns.get(name);
  if (!rows) {
    const { prompt, decoded } = sequence(name);
    rows = forcedLogits(fixtureModel(name), ref, prompt, decoded);
    referenceRuns.set(name, rows);
  }
  return rows;
}

/** worst max |k − reference| / logit range over the positions of `name`'s forced sequence */
function distance(name: string, k: Kernels): { worst: number; at: number } {
  const { prompt, decoded } = sequence(name);
  return logitDistance(forcedLogits(fixtureModel(name), k, prompt, decoded), referenceLogits(name));
}

// ---- deliberate 1% errors, each in one place ----

const ERROR = 1.01;
const scale = (out: Float32Array) => {
  for (let i = 0; i < out.length; i++) out[i]! *= ERROR;
};

/** `k` with the output of the matmuls whose weight `hit` picks made 1% too large */
function wrongMatmul(k: Kernels, hit: (w: WeightTensor) => boolean): Kernels {
  return {
    ...k,
    name: `${k.name}, one matmul 1% off`,
    matmul: (out, x, w, rows) => {
      k.matmul(out, x, w, rows);
      if (hit(w)) scale(out.subarray(0, rows * w.dims[1]!));
    },
    matmulSet: (x, rows, targets: readonly MatmulTarget[]) => {
      k.matmulSet(x, rows, targets);
      for (const { out, w } of targets) if (hit(w)) scale(out.subarray(0, rows * w.dims[1]!));
    },
  };
}

const MUTATIONS: Record<string, (k: Kernels) => Kernels> = {
  'attention scores ×1.01': (k) => ({ ...k, attention: (out, q, layer, c, b, shape) => k.attention(out, q, layer, c, b, { ...shape, scale: shape.scale * ERROR }) }),
  'q and k ×1.01 after RoPE': (k) => ({ ...k, rope: (x, ...rest) => (k.rope(x, ...rest), scale(x)) }),
  "layer 0's FFN output ×1.01": (k) => wrongMatmul(k, (w) => w.name === 'blk.0.ffn_down.weight'),
  "the last layer's attention output ×1.01": (k) => wrongMatmul(k, (w) => w.name === 'blk.1.attn_output.weight'),
};

/** the fixtures whose logits are compared end to end (no coarse activation grid) */
const WHOLE = GGUF_FIXTURES.filter((f) => LOGIT_BOUND[f.weightType] !== undefined);
/** one fixture per remaining type (llama's shape carries them all) */
const PER_MATMUL = GGUF_FIXTURES.filter((f) => f.shape.arch === 'llama' && !f.rope && LOGIT_BOUND[f.weightType] === undefined);

describe('native vs reference logits at model level (teacher-forced: prefill + decode)', { skip }, () => {
  for (const f of WHOLE) {
    const bound = LOGIT_BOUND[f.weightType]!;
    it(`${f.name}: within ${bound} of the logit range at every position`, () => {
      const { worst, at } = distance(f.name, native!);
      assert.ok(worst <= bound, `${f.name}: native differs from the reference by ${worst.toExponential(2)} of the logit range at position ${at} (bound ${bound})`);
    });
  }

  // the test can fail: each 1% error breaks the bound, on an F32 and an F16 fixture (two layers,
  // RoPE, plain attention: where each of these errors reaches the logits undamped)
  for (const name of ['llama-f32', 'qwen3-f16']) {
    const bound = LOGIT_BOUND[GGUF_FIXTURES.find((f) => f.name === name)!.weightType]!;
    for (const [what, mutate] of Object.entries(MUTATIONS)) {
      it(`${name}: kernels with ${what} FAIL the comparison`, () => {
        const { worst } = distance(name, mutate(native!));
        assert.ok(worst > bound, `${what}: off by only ${worst.toExponential(2)} of the logit range, within the bound ${bound}`);
      });
    }
  }
});

/**
 * The reference runs the forward pass; every matmul, matmulSet and embedRows it makes is also
 * made natively from copies of the same inputs, and the worst relative difference is kept.
 */
function shadowed(k: Kernels): { kernels: Kernels; worst: () => { error: number; where: string } } {
  let worst = { error: 0, where: 'nothing compared' };
  const compare = (got: Float32Array, want: Float32Array, where: string) => {
    let [diff, top] = [0, 0];
    for (let i = 0; i < want.length; i++) {
      diff = Math.max(diff, Math.abs(got[i]! - want[i]!));
      top = Math.max(top, Math.abs(want[i]!));
    }
    const error = diff / (top || 1);
    if (!(error <= worst.error)) worst = { error, where };
  };
  const kernels: Kernels = {
    ...ref,
    matmul: (out, x, w, rows) => {
      ref.matmul(out, x, w, rows);
      const mine = new Float32Array(rows * w.dims[1]!);
      k.matmul(mine, x.slice(0, rows * w.dims[0]!), w, rows);
      compare(mine, out.subarray(0, mine.length), `matmul ${w.name} (${w.type}), ${rows} rows`);
    },
    matmulSet: (x, rows, targets) => {
      ref.matmulSet(x, rows, targets);
      const mine = targets.map(({ w }) => ({ out: new Float32Array(rows * w.dims[1]!), w }));
      k.matmulSet(x.slice(0, rows * targets[0]!.w.dims[0]!), rows, mine);
      mine.forEach(({ out, w }, i) => compare(out, targets[i]!.out.subarray(0, out.length), `matmulSet ${w.name} (${w.type}), ${rows} rows`));
    },
    embedRows: (out, table, ids) => {
      ref.embedRows(out, table, ids);
      const mine = new Float32Array(ids.length * table.dims[0]!);
      k.embedRows(mine, table, ids);
      compare(mine, out.subarray(0, mine.length), `embedRows ${table.name}`);
    },
  };
  return { kernels, worst: () => worst };
}

describe('native vs reference matmuls of a model forward pass, from the same inputs (BF16, quantized types)', { skip }, () => {
  for (const f of PER_MATMUL) {
    it(`${f.name}: every matmul within ${MATMUL_BOUND} of the reference's`, () => {
      const { prompt, decoded } = sequence(f.name);
      const s = shadowed(native!);
      forcedLogits(fixtureModel(f.name), s.kernels, prompt, decoded);
      const { error, where } = s.worst();
      assert.ok(error <= MATMUL_BOUND, `${f.name}: ${where} differs by ${error.toExponential(2)} of its largest value`);
    });
  }

  it('the test can fail: one matmul ×1.01 (layer 0 FFN output) breaks it on Q4_K_M', () => {
    const { prompt, decoded } = sequence('llama-q4_k_m');
    const s = shadowed(wrongMatmul(native!, (w) => w.name === 'blk.0.ffn_down.weight'));
    forcedLogits(fixtureModel('llama-q4_k_m'), s.kernels, prompt, decoded);
    assert.ok(s.worst().error > MATMUL_BOUND, `off by only ${s.worst().error.toExponential(2)}`);
    assert.match(s.worst().where, /blk\.0\.ffn_down/);
  });
});
