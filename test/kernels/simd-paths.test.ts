// The native core picks its kernels (matmul, norms, activations, attention) from the CPU's
// features (AVX-512, AVX2, portable), so on one machine the suite would only see the widest.
// This runs the conformance suite again with the wider ones switched off (LOOM_NO_SIMD), so
// every path that some user's CPU takes is checked against the reference here too, kernel by
// kernel and in whole models.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { nativeSkip } from '../fixtures/native.js';
import { PROJECT_ROOT } from '../fixtures/index.js';
import { GGUF_FIXTURES, MORE_WEIGHT_TYPES } from '../fixtures/recipe.js';

const SUITE = ['conformance.test.js', 'encoder-attention.test.js', 'sliding-window.test.js', 'recurrent.test.js', 'moe-experts.test.js'].map((f) => join(PROJECT_ROOT, 'dist', 'test', 'kernels', f));
const GENERATION = ['native-generate.test.js', 'native-logits.test.js'].map((f) => join(PROJECT_ROOT, 'dist', 'test', 'kernels', f));
/**
 * Greedy generation on one fixture of every weight type and every architecture family (their
 * kernels: layer norm and GELU, partial and scaled RoPE, soft-caps and sliding windows, Gemma 4's
 * two head sizes, the recurrent layers), and all of native-logits (not the CLI's tests).
 */
const GENERATION_FIXTURES = [
  'llama-f32', 'qwen3-f16', 'gpt2-bf16', 'qwen2-q8_0', 'gemma3-q4_0', 'llama-q4_k', 'qwen2-q6_k', 'smollm3-q4_k_m',
  ...MORE_WEIGHT_TYPES.map((t) => `llama-${t.toLowerCase()}`),
  'phi3-q8_0', 'llama-rope-yarn-q8_0', 'gemma2-q4_k_m', 'gemma4-q8_0', 'qwen35-q4_k_m', 'gptoss-mxfp4',
];
const GENERATION_PATTERNS = [`^(${GENERATION_FIXTURES.join('|')})$`, 'native vs reference'];
const skip = nativeSkip();

describe('conformance on the narrower instruction sets', { skip }, () => {
  for (const off of ['avx512', '1']) {
    it(`LOOM_NO_SIMD=${off}: every kernel still agrees with the reference`, () => {
      // a child `node --test` reports to a parent runner instead of printing when it sees
      // NODE_TEST_CONTEXT: drop it, so the child prints its own TAP
      const { NODE_TEST_CONTEXT: _, ...env } = process.env;
      const r = spawnSync(process.execPath, ['--test', '--test-reporter=tap', ...SUITE], {
        encoding: 'utf8',
        timeout: 600_000, // a guard against a hang, not a time limit (about 70 s; the test runner stops a timed-out child with exit 1)
        env: { ...env, LOOM_NO_SIMD: off },
      });
      assert.equal(r.status, 0, r.stdout.split('\n').filter((l) => l.includes('not ok') || l.includes('Error')).join('\n'));
      assert.match(r.stdout, /# fail 0/);
    });
  }

  // full models, not only kernels: greedy generation through the engine on a fixture of every
  // weight type and architecture family (tokens and logits against llama.cpp's goldens) and the model-level logits against the
  // reference (test/kernels/native-logits.test.ts), on each narrower instruction set
  for (const off of ['avx512', '1']) {
    it(`LOOM_NO_SIMD=${off}: native generation on every weight type and architecture, and model-level logits, agree with the reference`, () => {
      const { NODE_TEST_CONTEXT: _, ...env } = process.env;
      const r = spawnSync(process.execPath, ['--test', '--test-reporter=tap', ...GENERATION_PATTERNS.flatMap((p) => ['--test-name-pattern', p]), ...GENERATION], {
        encoding: 'utf8',
        timeout: 600_000, // a guard against a hang, not a time limit (about 10-30 s)
        env: { ...env, LOOM_NO_SIMD: off },
      });
      assert.equal(r.status, 0, r.stdout.split('\n').filter((l) => l.includes('not ok') || l.includes('Error')).join('\n') + r.stderr);
      assert.match(r.stdout, /# fail 0/);
      // the patterns matched: every fixture named generated
      for (const name of GENERATION_FIXTURES) assert.match(r.stdout, new RegExp(`^ {4}ok \\d+ - ${name}$`, 'm'), `${name} did not generate`);
      assert.equal(new Set(GENERATION_FIXTURES.map((n) => GGUF_FIXTURES.find((f) => f.name === n)!.weightType)).size, new Set(GGUF_FIXTURES.map((f) => f.weightType)).size, 'every weight type');
    });
  }

  it('the switch is seen: LOOM_NO_SIMD=1 reports the portable kernels', () => {
    const r = spawnSync(process.execPath, ['-e', `import('${join(PROJECT_ROOT, 'dist', 'src', 'kernels', 'native.js')}').then((m) => console.log(JSON.stringify(m.cpuFeatures())))`], {
      encoding: 'utf8',
      env: { ...process.env, LOOM_NO_SIMD: '1' },
    });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).kernels, 'portable');
  });
});
