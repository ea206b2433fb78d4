// A Hugging Face gpt-oss folder (GptOssForCausalLM, model_type gpt_oss): config.json → ModelConfig
// and its tensors under loom's GGUF names, as llama.cpp's converter (conversion/gpt_oss.py) maps
// them. The experts are stored as OpenAI's MXFP4 (quantization_config.quant_method "mxfp4"):
// per layer mlp.experts.gate_up_proj_blocks [E, 2F, D/32, 16] u8 and _scales [E, 2F, D/32] u8
// (gate and up rows interleaved: even rows gate, odd rows up; likewise the columns of
// gate_up_proj_bias [E, 2F]), down_proj_blocks [E, D, F/32, 16] and _scales. A block's byte i
// holds value 2i in its low nibble and 2i + 1 in its high one, where ggml's MXFP4 (GGML type
// 39) keeps values j and j + 16 in byte j: repacked here once per tensor to ggml blocks (the
// E8M0 scale byte, then the 16 bytes), as the converter's repack_mxfp4 does.
import { ModelFormatError, UnsupportedModelError } from '../errors.js';
import type { Fields } from './hf-fields.js';
import { attentionHeads } from './hf-fields.js';
import { hfRopeScaling } from './hf-rope.js';
import { ropeOf } from './hf-config.js';
import { MAX_EXPERTS } from './gguf-config-moe.js';
import { ggmlTypeOf } from './safetensors.js';
import type { SafetensorsModel } from './safetensors-folder.js';
import type { ModelConfig, TensorSource } from './weights.js';
import type { WeightTensor } from '../tensor/weight-tensor.js';
import { GGMLType } from '../tensor/weight-types.js';
import { loadVector } from './arch/architecture.js';

/** transformers' GptOssConfig → ModelConfig (defaults: gpt-oss-20b's) */
export function gptOssConfig(c: Fields): ModelConfig {
  const hiddenSize = c.count('hidden_size');
  const { numHeads, numKvHeads } = attentionHeads(c);
  const headDim = c.count('head_dim', () => 64);
  const numLayers = c.count('num_hidden_layers');
  const contextLength = c.count('max_position_embeddings');
  const numExperts = c.count('num_local_experts', () => 32);
  const numExpertsUsed = c.count(['num_experts_per_tok', 'experts_per_token'], () => 4);
  if (numExperts > MAX_EXPERTS) throw c.bad('num_local_experts', `at most ${MAX_EXPERTS}`);
  if (numExpertsUsed > numExperts) throw c.bad('num_experts_per_tok', `at most num_local_experts (${numExperts})`);
  const limit = c.num('swiglu_limit', 7);
  if (limit !== 7) throw new UnsupportedModelError(c.file, `swiglu_limit ${limit} is not supported (llama.cpp and loom clamp at 7)`);
  const rope = ropeOf(c);
  const ropeScaling = hfRopeScaling({ file: c.file, json: c.json, headDim, ropeDim: headDim, ropeBase: rope.theta, contextLength });
  const window = c.count('sliding_window', () => 128);
  return {
    arch: 'gpt-oss',
    vocabSize: c.count('vocab_size'),
    hiddenSize,
    numLayers,
    numHeads,
    numKvHeads,
    headDim,
    ffnSize: c.count('intermediate_size'),
    contextLength,
    normEps: c.num('rms_norm_eps', 1e-5),
    ropeBase: rope.theta,
    ropeDim: headDim,
    ropeStyle: 'neox',
    tiedEmbeddings: c.bool('tie_word_embeddings', false),
    ...(ropeScaling ? { ropeScaling } : {}),
    slidingWindow: { size: window, layers: slidingLayers(c, numLayers), ropeBase: rope.theta },
    moe: { numExperts, numExpertsUsed, expertFfnSize: c.count('intermediate_size'), normTopK: false },
  };
}

/** layer_types ("sliding_attention" / "full_attention"), else every other layer from layer 0 */
function slidingLayers(c: Fields, numLayers: number): boolean[] {
  const types = c.raw('layer_types');
  if (types === undefined || types === null) return Array.from({ length: numLayers }, (_, i) => i % 2 === 0);
  if (!Array.isArray(types) || types.length !== numLayers || !types.every((t) => t === 'sliding_attention' || t === 'full_attention')) {
    throw c.bad('layer_types', `${numLayers} of "sliding_attention" / "full_attention"`);
  }
  return types.map((t) => t === 'sliding_attention');
}

const GLOBAL: Readonly<Record<string, string>> = {
  'token_embd.weight': 'model.embed_tokens.weight',
  'output_norm.weight': 'model.norm.weight',
  'output.weight': 'lm_head.weight',
};

/** canonical per-block tensor (without `.weight`/`.bias`) → HF module path under model.layers.N */
const BLOCK: Readonly<Record<string, string>> = {
  attn_norm: 'input_layernorm',
  attn_q: 'self_attn.q_proj',
  attn_k: 'self_attn.k_proj',
  attn_v: 'self_attn.v_proj',
  attn_output: 'self_attn.o_proj',
  post_attention_norm: 'post_attention_layernorm',
  ffn_gate_inp: 'mlp.router',
};

const BLOCK_NAME = /^blk\.(\d+)\.([a-z_]+)\.(weight|bias)$/;

/** The HF name of a canonical tensor stored as it is (not the experts), or undefined. */
export function gptOssHFName(numLayers: number, canonical: string): string | undefined {
  if (GLOBAL[canonical]) return GLOBAL[canonical];
  const m = BLOCK_NAME.exec(canonical);
  if (!m || Number(m[1]) >= numLayers) return undefined;
  if (m[2] === 'attn_sinks' && m[3] === 'weight') return `model.layers.${m[1]}.self_attn.sinks`;
  const path = BLOCK[m[2]!];
  return path ? `model.layers.${m[1]}.${path}.${m[3]}` : undefined;
}

const EXPERTS = /^blk\.(\d+)\.ffn_(gate|up|down)_exps\.(weight|bias)$/;

/** the HF tensors an expert tensor is made of: blocks and scales, or the bias */
function expertSources(numLayers: number, canonical: string): { which: 'gate' | 'up' | 'down'; part: 'weight' | 'bias'; base: string } | undefined {
  const m = EXPERTS.exec(canonical);
  if (!m || Number(m[1]) >= numLayers) return undefined;
  const which = m[2] as 'gate' | 'up' | 'down';
  const base = `model.layers.${m[1]}.mlp.experts.${which === 'down' ? 'down_proj' : 'gate_up_proj'}`;
  return { which, part: m[3] as 'weight' | 'bias', base };
}

/** Serves a gpt-oss folder's tensors under GGUF names (experts repacked to ggml MXFP4 on first use). */
export function gptOssTensorSource(dir: string, model: SafetensorsModel, config: ModelConfig): TensorSource & { dimsOf(name: string): readonly number[] | undefined } {
  const cache = new Map<string, WeightTensor>();
  const experts = 'model.layers.0.mlp.experts.gate_up_proj';
  if (model.has(experts) && !model.has(`${experts}_blocks`)) {
    throw new UnsupportedModelError(dir, `experts dequantized to ${model.fileOf(experts)?.entry(experts)?.dtype} (${experts}) are not supported; loom reads the MXFP4 mlp.experts.*_blocks / *_scales of the released checkpoints`);
  }
  const entry = (hfName: string) => model.fileOf(hfName)?.entry(hfName);
  const raw = (hfName: string): Uint8Array => model.fileOf(hfName)!.read(hfName, { cache: false, anyDtype: true });
  const has = (name: string): boolean => {
    if (name === 'output.weight' && config.tiedEmbeddings) return false;
    const plain = gptOssHFName(config.numLayers, name);
    if (plain) return model.has(plain);
    const ex = expertSources(config.numLayers, name);
    if (!ex) return false;
    return ex.part === 'bias' ? model.has(`${ex.base}_bias`) : model.has(`${ex.base}_blocks`) && model.has(`${ex.base}_scales`);
  };
  const build = (name: string): WeightTensor => {
    const plain = gptOssHFName(config.numLayers, name);
    if (plain) {
      const file = model.fileOf(plain)!;
      const e = file.entry(plain)!;
      const t: WeightTensor = { name, type: ggmlTypeOf(file.path, e), dims: [...e.shape].reverse(), data: raw(plain) };
      // llama.cpp's converter keeps the router in F32 whatever the checkpoint's dtype: so does loom
      return /ffn_gate_inp\.weight$/.test(name) ? widen(t) : t;
    }
    const ex = expertSources(config.numLayers, name)!;
    const { numExperts: E, expertFfnSize: F } = config.moe!;
    if (ex.part === 'bias') {
      const hfName = `${ex.base}_bias`;
      const file = model.fileOf(hfName)!;
      const e = file.entry(hfName)!;
      const values = loadVector({ has: () => true, get: () => ({ name: hfName, type: ggmlTypeOf(file.path, e), dims: [e.shape.reduce((a, b) => a * b, 1)], data: raw(hfName) }) }, hfName);
      const width = ex.which === 'down' ? config.hiddenSize : F;
      const out = new Float32Array(E * width);
      for (let x = 0; x < E; x++) {
        for (let i = 0; i < width; i++) {
          out[x * width + i] = ex.which === 'down' ? values[x * width + i]! : values[x * 2 * F + 2 * i + (ex.which === 'up' ? 1 : 0)]!;
        }
      }
      return { name, type: GGMLType.F32, dims: [width, E], data: new Uint8Array(out.buffer) };
    }
    const blocksName = `${ex.base}_blocks`;
    const shape = entry(blocksName)?.shape ?? [];
    const scaleShape = entry(`${ex.base}_scales`)?.shape ?? [];
    const [e0, rows, nb, sixteen] = shape as [number, number, number, number];
    if (shape.length !== 4 || sixteen !== 16 || e0 !== E || scaleShape.join() !== [e0, rows, nb].join()) {
      throw new ModelFormatError(dir, `${blocksName} [${shape.join(', ')}] / _scales [${scaleShape.join(', ')}] are not MXFP4 blocks of ${E} experts`);
    }
    const outRows = ex.which === 'down' ? rows : rows / 2;
    const want = ex.which === 'down' ? [F, config.hiddenSize] : [config.hiddenSize, F];
    if (nb * 32 !== want[0] || outRows !== want[1]) throw new ModelFormatError(dir, `${blocksName} [${shape.join(', ')}] does not hold ${E} experts of [${want.join(', ')}]`);
    return { name, type: GGMLType.MXFP4, dims: [nb * 32, outRows, E], data: repackMxfp4(raw(blocksName), raw(`${ex.base}_scales`), E, rows, nb, ex.which) };
  };
  return {
    has,
    get(name) {
      const hit = cache.get(name);
      if (hit) return hit;
      if (!has(name)) throw new ModelFormatError(dir, `no tensor ${name} in this gpt-oss folder (${gptOssHFName(config.numLayers, name) ?? expertSources(config.numLayers, name)?.base ?? 'unknown'})`);
      const t = build(name);
      cache.set(name, t);
      return t;
    },
    dimsOf(name) {
      const plain = gptOssHFName(config.numLayers, name);
      const shape = plain ? entry(plain)?.shape : undefined;
      return shape ? [...shape].reverse() : undefined;
    },
  };
}

/** a small tensor widened to an owned F32 copy */
function widen(t: WeightTensor): WeightTensor {
  if (t.type === GGMLType.F32) return t;
  const values = loadVector({ has: () => true, get: () => t }, t.name);
  return { name: t.name, type: GGMLType.F32, dims: t.dims, data: new Uint8Array(values.buffer) };
}

/**
 * HF MXFP4 blocks [E, rows, nb, 16] and scales [E, rows, nb] → ggml MXFP4 rows (17 bytes a block:
 * scale, then byte j = value j | value j + 16 << 4), of every row (down) or the even (gate) or
 * odd (up) rows of the interleaved gate_up projection.
 */
export function repackMxfp4(blocks: Uint8Array, scales: Uint8Array, E: number, rows: number, nb: number, which: 'gate' | 'up' | 'down'): Uint8Array {
  const step = which === 'down' ? 1 : 2;
  const first = which === 'up' ? 1 : 0;
  const outRows = rows / step;
  const out = new Uint8Array(E * outRows * nb * 17);
  const nibble = (src: number, v: number): number => (blocks[src + (v >> 1)]! >> ((v & 1) * 4)) & 15;
  let o = 0;
  for (let e = 0; e < E; e++) {
    for (let r = first; r < rows; r += step) {
      for (let b = 0; b < nb; b++) {
        const at = (e * rows + r) * nb + b;
        out[o] = scales[at]!;
        const src = at * 16;
        for (let j = 0; j < 16; j++) out[o + 1 + j] = nibble(src, j) | (nibble(src, j + 16) << 4);
        o += 17;
      }
    }
  }
  return out;
}
