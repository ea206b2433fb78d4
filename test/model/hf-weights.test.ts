import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { ModelFormatError } from '../../src/errors.js';
import { GGMLType } from '../../src/tensor/weight-types.js';
import { openHFModel } from '../../src/model/hf-model.js';
import { hfLocation, hfTensorSource, transposeBytes } from '../../src/model/hf-weights.js';
import { writeSafetensors, writeShardedSafetensors } from '../../src/model/safetensors-writer.js';
import type { SafetensorsWriteTensor } from '../../src/model/safetensors-writer.js';
import type { ModelConfig } from '../../src/model/weights.js';

const root = mkdtempSync(join(tmpdir(), 'loom-hfw-'));
after(() => rmSync(root, { recursive: true, force: true }));
let serial = 0;

function f32(values: number[]): Uint8Array {
  const out = new Uint8Array(values.length * 4);
  const view = new DataView(out.buffer);
  values.forEach((v, i) => view.setFloat32(i * 4, v, true));
  return out;
}
function readF32(data: Uint8Array, i: number): number {
  return new DataView(data.buffer, data.byteOffset, data.byteLength).getFloat32(i * 4, true);
}
function readU16(data: Uint8Array, i: number): number {
  return data[2 * i]! | (data[2 * i + 1]! << 8);
}
/** F32 tensor of the given PyTorch shape whose value at flat index k is base + k */
function ramp(name: string, shape: number[], base: number): SafetensorsWriteTensor {
  const n = shape.reduce((p, d) => p * d, 1);
  return { name, dtype: 'F32', shape, data: f32(Array.from({ length: n }, (_, k) => base + k)) };
}

function throwsWith(fn: () => unknown, ...parts: string[]): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof ModelFormatError, `expected ModelFormatError, got ${String(e)}`);
    for (const p of parts) assert.ok(e.message.includes(p), `message ${JSON.stringify(e.message)} lacks ${JSON.stringify(p)}`);
    return true;
  });
}

// A tiny llama-family model: hidden 4, 2 heads of dim 2, 1 kv head, ffn 6, vocab 5, 2 layers.
const LLAMA: ModelConfig = {
  arch: 'llama', vocabSize: 5, hiddenSize: 4, numLayers: 2, numHeads: 2, numKvHeads: 1, headDim: 2, ffnSize: 6,
  contextLength: 16, normEps: 1e-5, ropeBase: 10000, ropeDim: 2, ropeStyle: 'neox', tiedEmbeddings: true,
};
function llamaTensors(layers: number, extra: (l: number) => SafetensorsWriteTensor[] = () => []): SafetensorsWriteTensor[] {
  const t = [ramp('model.embed_tokens.weight', [5, 4], 0), ramp('model.norm.weight', [4], 100)];
  for (let l = 0; l < layers; l++) {
    const p = `model.layers.${l}.`;
    const b = 1000 * (l + 1);
    t.push(
      ramp(`${p}input_layernorm.weight`, [4], b),
      ramp(`${p}self_attn.q_proj.weight`, [4, 4], b + 10),
      ramp(`${p}self_attn.k_proj.weight`, [2, 4], b + 30),
      ramp(`${p}self_attn.v_proj.weight`, [2, 4], b + 40),
      ramp(`${p}self_attn.o_proj.weight`, [4, 4], b + 50),
      ramp(`${p}post_attention_layernorm.weight`, [4], b + 70),
      ramp(`${p}mlp.gate_proj.weight`, [6, 4], b + 100),
      ramp(`${p}mlp.up_proj.weight`, [6, 4], b + 200),
      ramp(`${p}mlp.down_proj.weight`, [4, 6], b + 300),
      ...extra(l),
    );
  }
  return t;
}
function modelDir(tensors: SafetensorsWriteTensor[], config?: unknown): string {
  const dir = join(root, String(serial++));
  mkdirSync(dir);
  writeSafetensors(join(dir, 'model.safetensors'), tensors);
  if (config !== undefined) writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
  return dir;
}

describe('llama-family names', () => {
  test('canonical names map to HF names, dims reversed, bytes as stored', () => {
    const source = hfTensorSource(modelDir(llamaTensors(2)), LLAMA);
    const k = source.get('blk.1.attn_k.weight');
    assert.equal(k.name, 'blk.1.attn_k.weight');
    assert.equal(k.type, GGMLType.F32);
    assert.deepEqual(k.dims, [4, 2]); // k_proj is [kv*headDim=2, hidden=4] in PyTorch
    for (let i = 0; i < 8; i++) assert.equal(readF32(k.data, i), 2030 + i);
    const pairs: [string, number][] = [
      ['token_embd.weight', 0], ['output_norm.weight', 100], ['blk.0.attn_norm.weight', 1000],
      ['blk.0.attn_q.weight', 1010], ['blk.0.attn_v.weight', 1040], ['blk.0.attn_output.weight', 1050],
      ['blk.0.ffn_norm.weight', 1070], ['blk.0.ffn_gate.weight', 1100], ['blk.0.ffn_up.weight', 1200],
      ['blk.1.ffn_down.weight', 2300],
    ];
    for (const [name, first] of pairs) assert.equal(readF32(source.get(name).data, 0), first, name);
    assert.deepEqual(source.get('blk.1.ffn_down.weight').dims, [6, 4]);
    assert.deepEqual(source.get('token_embd.weight').dims, [4, 5]);
  });

  test('has(): tied output, absent biases and norms, layers beyond the model', () => {
    const source = hfTensorSource(modelDir(llamaTensors(2)), LLAMA);
    assert.equal(source.has('output.weight'), false);
    assert.equal(source.has('blk.0.attn_q.bias'), false);
    assert.equal(source.has('blk.0.attn_q_norm.weight'), false);
    assert.equal(source.has('blk.1.attn_q.weight'), true);
    assert.equal(source.has('blk.2.attn_q.weight'), false);
    assert.equal(source.has('position_embd.weight'), false);
    throwsWith(() => source.get('output.weight'), 'tied');
  });

  test('tied model whose file also holds lm_head still reports output as tied', () => {
    const source = hfTensorSource(modelDir([...llamaTensors(1), ramp('lm_head.weight', [5, 4], 7)]), { ...LLAMA, numLayers: 1 });
    assert.equal(source.has('output.weight'), false);
  });

  test('untied: output.weight is lm_head.weight', () => {
    const source = hfTensorSource(modelDir([...llamaTensors(1), ramp('lm_head.weight', [5, 4], 7)]), { ...LLAMA, numLayers: 1, tiedEmbeddings: false });
    assert.equal(source.has('output.weight'), true);
    assert.deepEqual(source.get('output.weight').dims, [4, 5]);
    assert.equal(readF32(source.get('output.weight').data, 19), 26);
  });

  test('untied without lm_head is refused at open', () => {
    const dir = modelDir(llamaTensors(1));
    throwsWith(() => hfTensorSource(dir, { ...LLAMA, numLayers: 1, tiedEmbeddings: false }), dir, 'lm_head.weight');
  });

  test('qwen2 biases and qwen3 q/k norms', () => {
    const extra = (l: number): SafetensorsWriteTensor[] => [
      ramp(`model.layers.${l}.self_attn.q_proj.bias`, [4], 1),
      ramp(`model.layers.${l}.self_attn.k_norm.weight`, [2], 9),
    ];
    const source = hfTensorSource(modelDir(llamaTensors(1, extra)), { ...LLAMA, arch: 'qwen2', numLayers: 1 });
    assert.equal(source.has('blk.0.attn_q.bias'), true);
    assert.deepEqual(source.get('blk.0.attn_q.bias').dims, [4]);
    assert.equal(source.has('blk.0.attn_k.bias'), false);
    assert.equal(readF32(source.get('blk.0.attn_k_norm.weight').data, 1), 10);
  });

  test('a missing tensor names the folder and the HF tensor', () => {
    const tensors = llamaTensors(2).filter((t) => t.name !== 'model.layers.1.mlp.down_proj.weight');
    const dir = modelDir(tensors);
    const source = hfTensorSource(dir, LLAMA);
    assert.equal(source.has('blk.1.ffn_down.weight'), false);
    throwsWith(() => source.get('blk.1.ffn_down.weight'), dir, 'model.layers.1.mlp.down_proj.weight');
    throwsWith(() => source.get('blk.0.bogus.weight'), dir, 'blk.0.bogus.weight');
  });

  test('lazy: opening reads headers only; each tensor is read once', () => {
    const dir = join(root, String(serial++));
    writeShardedSafetensors(dir, llamaTensors(2), 2);
    const source = hfTensorSource(dir, LLAMA);
    const headers = source.bytesRead;
    assert.ok(headers > 0 && headers < 2000, `header bytes ${headers}`);
    source.get('blk.1.attn_k.weight');
    assert.equal(source.bytesRead, headers + 2 * 4 * 4);
    source.get('blk.1.attn_k.weight');
    source.has('blk.0.ffn_up.weight');
    source.dimsOf('blk.0.ffn_up.weight');
    assert.equal(source.bytesRead, headers + 32);
    assert.deepEqual(source.dimsOf('blk.0.ffn_up.weight'), [4, 6]);
  });
});

// GPT-2: hidden 4, ffn 8, vocab 5, 1 layer; Conv1D weights stored [in, out].
const GPT2: ModelConfig = {
  arch: 'gpt2', vocabSize: 5, hiddenSize: 4, numLayers: 1, numHeads: 2, numKvHeads: 2, headDim: 2, ffnSize: 8,
  contextLength: 3, normEps: 1e-5, ropeBase: 10000, ropeDim: 2, ropeStyle: 'normal', tiedEmbeddings: true,
};
/** Conv1D weight [in, out] whose element (i, o) is 100 * i + o */
function conv(name: string, inF: number, outF: number): SafetensorsWriteTensor {
  const v: number[] = [];
  for (let i = 0; i < inF; i++) for (let o = 0; o < outF; o++) v.push(100 * i + o);
  return { name, dtype: 'F32', shape: [inF, outF], data: f32(v) };
}
function gpt2Tensors(prefix: string): SafetensorsWriteTensor[] {
  const p = `${prefix}h.0.`;
  return [
    ramp(`${prefix}wte.weight`, [5, 4], 0), ramp(`${prefix}wpe.weight`, [3, 4], 50),
    ramp(`${p}ln_1.weight`, [4], 1), ramp(`${p}ln_1.bias`, [4], 2),
    conv(`${p}attn.c_attn.weight`, 4, 12), ramp(`${p}attn.c_attn.bias`, [12], 3),
    conv(`${p}attn.c_proj.weight`, 4, 4), ramp(`${p}attn.c_proj.bias`, [4], 4),
    ramp(`${p}ln_2.weight`, [4], 5), ramp(`${p}ln_2.bias`, [4], 6),
    conv(`${p}mlp.c_fc.weight`, 4, 8), ramp(`${p}mlp.c_fc.bias`, [8], 7),
    conv(`${p}mlp.c_proj.weight`, 8, 4), ramp(`${p}mlp.c_proj.bias`, [4], 8),
    ramp(`${prefix}ln_f.weight`, [4], 9), ramp(`${prefix}ln_f.bias`, [4], 10),
    ramp(`${p}attn.bias`, [1, 1, 3, 3], 0), // causal-mask buffer in old checkpoints: ignored
  ];
}

describe('gpt2 names and Conv1D transposition', () => {
  for (const prefix of ['', 'transformer.']) {
    test(`prefix "${prefix}": Conv1D weights become [out, in] rows, element by element`, () => {
      const source = hfTensorSource(modelDir(gpt2Tensors(prefix)), GPT2);
      const cases: [string, number, number][] = [
        ['blk.0.attn_qkv.weight', 4, 12], ['blk.0.attn_output.weight', 4, 4],
        ['blk.0.ffn_up.weight', 4, 8], ['blk.0.ffn_down.weight', 8, 4],
      ];
      for (const [name, inF, outF] of cases) {
        const w = source.get(name);
        assert.deepEqual(w.dims, [inF, outF], name);
        assert.equal(w.type, GGMLType.F32);
        for (let o = 0; o < outF; o++) {
          for (let i = 0; i < inF; i++) assert.equal(readF32(w.data, o * inF + i), 100 * i + o, `${name} row ${o} col ${i}`);
        }
      }
      assert.equal(readF32(source.get('blk.0.attn_qkv.bias').data, 11), 14);
      assert.deepEqual(source.get('position_embd.weight').dims, [4, 3]);
      assert.equal(readF32(source.get('output_norm.bias').data, 0), 10);
      assert.equal(readF32(source.get('blk.0.ffn_norm.weight').data, 0), 5);
      assert.equal(source.has('output.weight'), false);
      assert.equal(source.has('blk.0.attn_q.weight'), false);
    });
  }

  test('F16 and BF16 Conv1D weights keep their type and move whole 2-byte elements', () => {
    const tensors = gpt2Tensors('').map((t): SafetensorsWriteTensor => {
      if (t.name === 'h.0.mlp.c_fc.weight' || t.name === 'h.0.attn.c_proj.weight') {
        const [inF, outF] = t.shape as [number, number];
        // element (i, o) is the 16-bit pattern 0x0100 * (i + 1) + o: distinct bytes per element
        const bytes: number[] = [];
        for (let i = 0; i < inF; i++) for (let o = 0; o < outF; o++) bytes.push(o, i + 1);
        return { name: t.name, dtype: t.name.includes('c_fc') ? 'F16' : 'BF16', shape: t.shape, data: Uint8Array.from(bytes) };
      }
      return t;
    });
    const source = hfTensorSource(modelDir(tensors), GPT2);
    for (const [name, type, inF, outF] of [['blk.0.ffn_up.weight', GGMLType.F16, 4, 8], ['blk.0.attn_output.weight', GGMLType.BF16, 4, 4]] as const) {
      const w = source.get(name);
      assert.equal(w.type, type);
      assert.deepEqual(w.dims, [inF, outF]);
      for (let o = 0; o < outF; o++) for (let i = 0; i < inF; i++) assert.equal(readU16(w.data, o * inF + i), 0x100 * (i + 1) + o);
    }
  });

  test('transposeBytes with odd element sizes and unaligned views', () => {
    // [2, 3] of 3-byte elements: element (r, c) = bytes [r, c, 9]
    const src = Uint8Array.from([0, 0, 9, 0, 1, 9, 0, 2, 9, 1, 0, 9, 1, 1, 9, 1, 2, 9]);
    assert.deepEqual([...transposeBytes(src, 2, 3, 3)], [0, 0, 9, 1, 0, 9, 0, 1, 9, 1, 1, 9, 0, 2, 9, 1, 2, 9]);
    const padded = new Uint8Array(9);
    padded.set([1, 0, 2, 0, 3, 0, 4, 0], 1); // [2, 2] u16 at odd offset: 1 2 / 3 4
    assert.deepEqual([...transposeBytes(padded.subarray(1), 2, 2, 2)], [1, 0, 3, 0, 2, 0, 4, 0]);
  });

  test('untied gpt2 with lm_head', () => {
    const source = hfTensorSource(modelDir([...gpt2Tensors('transformer.'), ramp('lm_head.weight', [5, 4], 3)]), { ...GPT2, tiedEmbeddings: false });
    assert.deepEqual(source.get('output.weight').dims, [4, 5]);
  });

  test('hfLocation lists both gpt2 prefixes, and a base model\'s names without model.', () => {
    assert.deepEqual(hfLocation('gpt2', 1, 'blk.0.ffn_up.weight'), { names: ['h.0.mlp.c_fc.weight', 'transformer.h.0.mlp.c_fc.weight'], conv: true });
    assert.deepEqual(hfLocation('gpt2', 1, 'blk.0.ffn_up.bias'), { names: ['h.0.mlp.c_fc.bias', 'transformer.h.0.mlp.c_fc.bias'], conv: false });
    assert.deepEqual(hfLocation('qwen3', 1, 'blk.0.attn_q_norm.weight'), { names: ['model.layers.0.self_attn.q_norm.weight', 'layers.0.self_attn.q_norm.weight'], conv: false });
    assert.deepEqual(hfLocation('gemma-embedding', 1, 'output_norm.weight'), { names: ['model.norm.weight', 'norm.weight'], conv: false });
    assert.equal(hfLocation('llama', 1, 'blk.1.attn_q.weight'), undefined);
  });
});

describe('openHFModel', () => {
  const config = {
    architectures: ['LlamaForCausalLM'], hidden_size: 4, intermediate_size: 6, max_position_embeddings: 16,
    num_attention_heads: 2, num_hidden_layers: 2, num_key_value_heads: 1, rms_norm_eps: 1e-5, tie_word_embeddings: true, vocab_size: 5,
  };

  test('config and tensors together', () => {
    const dir = modelDir(llamaTensors(2), config);
    const model = openHFModel(dir);
    assert.deepEqual(model.config, { ...LLAMA, contextLength: 16 });
    assert.equal(model.tensors.has('blk.1.ffn_up.weight'), true);
  });

  test('vocab size disagreeing with the embedding', () => {
    const dir = modelDir(llamaTensors(2), { ...config, vocab_size: 6 });
    throwsWith(() => openHFModel(dir), dir, 'vocab_size 6');
  });

  test('not a folder, no folder, no weights', () => {
    throwsWith(() => openHFModel(join(root, 'absent')), 'no such folder');
    const file = join(root, 'plain-file');
    writeFileSync(file, '');
    throwsWith(() => openHFModel(file), file, 'not a folder');
    const dir = join(root, String(serial++));
    mkdirSync(dir);
    writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
    throwsWith(() => openHFModel(dir), dir, 'no model.safetensors or model.safetensors.index.json');
  });
});
