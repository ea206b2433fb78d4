// qwen3moe's expert keys (qwen35moe's shared expert: test/model/arch/qwen35moe.test.ts) as llama.cpp reads them, and files whose experts are missing or
// disagree with those keys refused in one line naming the file and the problem.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { LoomError } from '../../src/errors.js';
import { GGMLType } from '../../src/tensor/weight-types.js';
import { GGUFValueType, kv, writeGGUF } from '../../src/model/gguf-writer.js';
import type { GGUFEntry } from '../../src/model/gguf-writer.js';
import { ggufModelConfig } from '../../src/model/gguf-config.js';
import { openGGUF } from '../../src/model/gguf.js';
import type { ModelConfig } from '../../src/model/weights.js';

const dir = mkdtempSync(join(tmpdir(), 'loom-moe-config-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const QWEN3MOE = 'qwen3moe';
const A = QWEN3MOE;
const D = 64;
const E = 4;
const F = 32;
const LAYERS = 2;

interface Variant {
  keys?: GGUFEntry[];
  drop?: string[];
  dims?: Record<string, number[]>;
  /** more tensors: name → dims */
  extra?: Record<string, number[]>;
  /** general.architecture (default qwen3moe): the keys are written under it */
  arch?: string;
}

let n = 0;
function file(v: Variant = {}): string {
  const A = v.arch ?? QWEN3MOE;
  const path = join(dir, `moe-${n++}.gguf`);
  const t = (name: string, dims: number[]) => {
    const d = v.dims?.[name] ?? dims;
    return { name, type: GGMLType.F32, dims: d, data: new Uint8Array(4 * d.reduce((a, b) => a * b, 1)) };
  };
  const tensors = [t('token_embd.weight', [D, 16])];
  for (let i = 0; i < LAYERS; i++) {
    tensors.push(t(`blk.${i}.ffn_gate_inp.weight`, [D, E]), t(`blk.${i}.ffn_gate_exps.weight`, [D, F, E]), t(`blk.${i}.ffn_up_exps.weight`, [D, F, E]), t(`blk.${i}.ffn_down_exps.weight`, [F, D, E]));
  }
  for (const [name, dims] of Object.entries(v.extra ?? {})) tensors.push(t(name, dims));
  const keys = new Map<string, GGUFEntry>(
    [
      kv.str('general.architecture', A),
      kv.u32(`${A}.context_length`, 64),
      kv.u32(`${A}.embedding_length`, D),
      kv.u32(`${A}.block_count`, LAYERS),
      kv.u32(`${A}.feed_forward_length`, 3 * D),
      kv.u32(`${A}.attention.head_count`, 4),
      kv.u32(`${A}.attention.head_count_kv`, 2),
      kv.u32(`${A}.attention.key_length`, 16),
      kv.f32(`${A}.attention.layer_norm_rms_epsilon`, 1e-6),
      kv.u32(`${A}.expert_count`, E),
      kv.u32(`${A}.expert_used_count`, 2),
      kv.u32(`${A}.expert_feed_forward_length`, F),
    ].map((e) => [e.key, e]),
  );
  for (const e of v.keys ?? []) keys.set(e.key, e);
  for (const k of v.drop ?? []) keys.delete(k);
  writeGGUF(path, { version: 3, metadata: [...keys.values()], tensors: tensors.filter((x) => !v.drop?.includes(x.name)) });
  return path;
}

function config(path: string): ModelConfig {
  const g = openGGUF(path);
  try {
    return ggufModelConfig(path, g.metadata, g);
  } finally {
    g.close();
  }
}

function refused(path: string, ...parts: string[]): void {
  assert.throws(
    () => config(path),
    (e: unknown) => {
      assert.ok(e instanceof LoomError, String(e));
      assert.ok(!e.message.includes('\n'), 'one line');
      assert.ok(e.message.startsWith(`${path}: `), `names the file: ${e.message}`);
      for (const p of parts) assert.ok(e.message.includes(p), `mentions ${p}: ${e.message}`);
      return true;
    },
  );
}

describe('qwen3moe GGUF config', () => {
  it('reads the expert keys; the chosen experts are always renormalized, as llama.cpp does', () => {
    const c = config(file());
    assert.equal(c.arch, 'qwen3moe');
    assert.equal(c.ropeStyle, 'neox');
    assert.deepEqual(c.moe, { numExperts: E, numExpertsUsed: 2, expertFfnSize: F, normTopK: true });
  });

  it('expert_used_count may be one per layer; absent expert_feed_forward_length is feed_forward_length / used', () => {
    const c = config(
      file({
        keys: [kv.arr(GGUFValueType.INT32, `${A}.expert_used_count`, [2, 2]), kv.u32(`${A}.feed_forward_length`, 2 * F)],
        drop: [`${A}.expert_feed_forward_length`],
      }),
    );
    assert.deepEqual(c.moe, { numExperts: E, numExpertsUsed: 2, expertFfnSize: F, normTopK: true });
  });

  it('refuses missing or inconsistent experts in one line', () => {
    refused(file({ drop: [`${A}.expert_count`] }), 'expert_count');
    refused(file({ keys: [kv.u32(`${A}.expert_used_count`, 5)] }), 'expert_used_count', '1 to');
    refused(file({ drop: [`${A}.expert_used_count`] }), 'expert_used_count');
    refused(file({ drop: ['blk.1.ffn_down_exps.weight'] }), 'layer 1', 'blk.1.ffn_down_exps.weight');
    refused(file({ dims: { 'blk.0.ffn_up_exps.weight': [D, F, E - 1] } }), 'blk.0.ffn_up_exps.weight', `[${D}, ${F}, ${E}]`);
    refused(file({ keys: [kv.u32(`${A}.expert_feed_forward_length`, 2 * F)] }), 'blk.0.ffn_gate_exps.weight', 'dims');
    refused(file({ keys: [kv.arr(GGUFValueType.INT32, `${A}.expert_used_count`, [2, 1])] }), 'varies by layer');
  });

  it('reads gate and up experts fused at conversion (ffn_gate_up_exps [hidden, 2·F, E]) and checks their dims', () => {
    const fused = (li: number, dims: number[]): Variant => ({
      extra: { [`blk.${li}.ffn_gate_up_exps.weight`]: dims },
      drop: [`blk.${li}.ffn_gate_exps.weight`, `blk.${li}.ffn_up_exps.weight`],
    });
    const both = (a: Variant, b: Variant): Variant => ({ extra: { ...a.extra, ...b.extra }, drop: [...a.drop!, ...b.drop!] });
    assert.deepEqual(config(file(both(fused(0, [D, 2 * F, E]), fused(1, [D, 2 * F, E])))).moe, { numExperts: E, numExpertsUsed: 2, expertFfnSize: F, normTopK: true });
    refused(file(both(fused(0, [D, 2 * F, E]), fused(1, [D, F, E]))), 'blk.1.ffn_gate_up_exps.weight', `[${D}, ${2 * F}, ${E}]`);
  });

  it('refuses per-expert scales of gate or up (they would be ignored) in one line', () => {
    refused(file({ extra: { 'blk.1.ffn_up_exps.scale': [E] } }), 'blk.1.ffn_up_exps.scale', 'not supported');
  });

  it('still refuses experts in the other families', () => {
    const path = join(dir, 'mixtral.gguf');
    writeGGUF(path, {
      version: 3,
      metadata: [kv.str('general.architecture', 'llama'), kv.u32('llama.expert_count', 8)],
      tensors: [{ name: 'token_embd.weight', type: GGMLType.F32, dims: [D, 16], data: new Uint8Array(4 * D * 16) }],
    });
    refused(path, 'mixture-of-experts', 'qwen3moe');
  });
});

describe('qwen35moe GGUF config: the shared expert', () => {
  const Q = 'qwen35moe';
  const ssm = [
    kv.u32(`${Q}.ssm.conv_kernel`, 4),
    kv.u32(`${Q}.ssm.state_size`, 16),
    kv.u32(`${Q}.ssm.group_count`, 1),
    kv.u32(`${Q}.ssm.time_step_rank`, 2),
    kv.u32(`${Q}.ssm.inner_size`, 32),
    kv.u32(`${Q}.expert_shared_feed_forward_length`, 2 * F),
  ];
  const shared = (gateDims: number[]): Record<string, number[]> =>
    Object.fromEntries(
      Array.from({ length: LAYERS }, (_, i) => [
        [`blk.${i}.ffn_gate_inp_shexp.weight`, gateDims],
        [`blk.${i}.ffn_gate_shexp.weight`, [D, 2 * F]],
        [`blk.${i}.ffn_up_shexp.weight`, [D, 2 * F]],
        [`blk.${i}.ffn_down_shexp.weight`, [2 * F, D]],
      ]).flat(),
    );

  it('reads expert_shared_feed_forward_length; the gate may be [hidden] or [hidden, 1]', () => {
    for (const gate of [[D], [D, 1]]) {
      const c = config(file({ arch: Q, keys: ssm, extra: shared(gate) }));
      assert.equal(c.arch, Q);
      assert.deepEqual(c.moe, { numExperts: E, numExpertsUsed: 2, expertFfnSize: F, normTopK: true, sharedFfnSize: 2 * F });
    }
  });

  it('refuses a missing or misshapen shared expert in one line', () => {
    refused(file({ arch: Q, keys: ssm }), 'blk.0.ffn_gate_inp_shexp.weight');
    refused(file({ arch: Q, keys: [...ssm, kv.u32(`${Q}.expert_shared_feed_forward_length`, F)], extra: shared([D]) }), 'blk.0.ffn_gate_shexp.weight', `[${D}, ${F}]`);
  });
});
