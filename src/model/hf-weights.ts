// Tensors of a Hugging Face model folder under loom's canonical (GGUF) names.
// llama/mistral/qwen2/qwen3 use `model.layers.N.self_attn.q_proj.weight`-style names;
// gpt2 uses `h.N.attn.c_attn.weight`-style names, with or without a `transformer.` prefix,
// and stores its Conv1D weights [in, out]: those are transposed once at load to the
// Linear layout ([out, in] row-major, ggml dims [in, out]) in their own dtype.
import { ModelFormatError } from '../errors.js';
import { ggmlTypeOf } from './safetensors.js';
import { openSafetensorsModel } from './safetensors-folder.js';
import type { SafetensorsModel } from './safetensors-folder.js';
import { qwen35HFNames, qwen35Transform } from './hf-qwen35.js';
import { gptOssTensorSource } from './hf-gptoss.js';
import { bertHFNames } from './hf-bert.js';
import { nomicBertHFNames } from './hf-nomic-bert.js';
import { denseTensors } from './hf-sentence-transformers.js';
import type { ArchName, ModelConfig, TensorSource } from './weights.js';
import type { WeightTensor } from '../tensor/weight-tensor.js';
import type { InPlaceBytes } from './model-memory.js';

/** A TensorSource that also reports how much it has read from disk. */
export interface HFTensorSource extends TensorSource {
  readonly dir: string;
  readonly bytesRead: number;
  /** ggml dims of a tensor from the header alone (no data read); undefined when absent */
  dimsOf(name: string): readonly number[] | undefined;
}

const LLAMA_GLOBAL: Readonly<Record<string, string>> = {
  'token_embd.weight': 'model.embed_tokens.weight',
  'output_norm.weight': 'model.norm.weight',
  'output.weight': 'lm_head.weight',
};

/** canonical per-block tensor (without `.weight`/`.bias`) → HF module path under model.layers.N */
const LLAMA_BLOCK: Readonly<Record<string, string>> = {
  attn_norm: 'input_layernorm',
  attn_q: 'self_attn.q_proj',
  attn_k: 'self_attn.k_proj',
  attn_v: 'self_attn.v_proj',
  attn_output: 'self_attn.o_proj',
  attn_q_norm: 'self_attn.q_norm',
  attn_k_norm: 'self_attn.k_norm',
  ffn_norm: 'post_attention_layernorm',
  ffn_gate: 'mlp.gate_proj',
  ffn_up: 'mlp.up_proj',
  ffn_down: 'mlp.down_proj',
  ffn_gate_inp: 'mlp.gate', // a MoE layer's router (Qwen3-MoE)
};

/** Phi-3 keeps q/k/v and gate/up fused, in the same row order as llama.cpp's attn_qkv and ffn_up */
const PHI3_BLOCK: Readonly<Record<string, string>> = {
  ...LLAMA_BLOCK,
  attn_qkv: 'self_attn.qkv_proj',
  ffn_up: 'mlp.gate_up_proj',
};

/** Gemma's four norms per block: HF's post_attention_layernorm is the post-attention norm here */
const GEMMA_BLOCK: Readonly<Record<string, string>> = {
  ...LLAMA_BLOCK,
  post_attention_norm: 'post_attention_layernorm',
  ffn_norm: 'pre_feedforward_layernorm',
  post_ffw_norm: 'post_feedforward_layernorm',
};

const GPT2_GLOBAL: Readonly<Record<string, string>> = {
  'token_embd.weight': 'wte.weight',
  'position_embd.weight': 'wpe.weight',
  'output_norm.weight': 'ln_f.weight',
  'output_norm.bias': 'ln_f.bias',
};

/** canonical per-block tensor → HF module path under h.N; `conv` marks Conv1D ([in, out]) weights */
const GPT2_BLOCK: Readonly<Record<string, { path: string; conv: boolean }>> = {
  attn_norm: { path: 'ln_1', conv: false },
  attn_qkv: { path: 'attn.c_attn', conv: true },
  attn_output: { path: 'attn.c_proj', conv: true },
  ffn_norm: { path: 'ln_2', conv: false },
  ffn_up: { path: 'mlp.c_fc', conv: true },
  ffn_down: { path: 'mlp.c_proj', conv: true },
};

const BLOCK_NAME = /^blk\.(\d+)\.([a-z_]+)\.(weight|bias)$/;
/** one expert's matrix (gguf-config-moe.ts's expertTensorName) */
const EXPERT_NAME = /^blk\.(\d+)\.ffn_(gate|up|down)_exps\.(\d+)\.weight$/;

/** Where an HF checkpoint may keep a canonical tensor: candidate names (first found wins). */
export interface HFLocation {
  readonly names: readonly string[];
  /** a GPT-2 Conv1D weight, stored [in, out] */
  readonly conv: boolean;
}

/** HF names for a canonical tensor name, or undefined when the arch has no such tensor. */
export function hfLocation(arch: ArchName, numLayers: number, canonical: string): HFLocation | undefined {
  if (arch === 'qwen35' || arch === 'qwen35moe') {
    const names = qwen35HFNames(numLayers, canonical);
    return names ? { names, conv: false } : undefined;
  }
  if (arch === 'bert' || arch === 'nomic-bert') {
    const names = (arch === 'bert' ? bertHFNames : nomicBertHFNames)(numLayers, canonical);
    return names ? { names, conv: false } : undefined;
  }
  const expert = arch === 'qwen3moe' ? EXPERT_NAME.exec(canonical) : null;
  if (expert) {
    return Number(expert[1]) < numLayers ? { names: [`model.layers.${expert[1]}.mlp.experts.${expert[3]}.${expert[2]}_proj.weight`], conv: false } : undefined;
  }
  const m = BLOCK_NAME.exec(canonical);
  const layer = m ? Number(m[1]) : -1;
  if (m && layer >= numLayers) return undefined;
  if (arch !== 'gpt2') {
    // a base model saved by sentence-transformers (Qwen3Model, Gemma3TextModel) has no `model.` prefix;
    // Gemma3ForConditionalGeneration keeps the text model under language_model.model (transformers
    // before 4.52, as google/gemma-3-*-it) or model.language_model (since)
    const withBase = (name: string): string[] => {
      if (!name.startsWith('model.')) return arch === 'gemma3' ? [name, `language_model.${name}`] : [name];
      const rest = name.slice('model.'.length);
      return arch === 'gemma3' ? [name, rest, `language_model.${name}`, `model.language_model.${rest}`] : [name, rest];
    };
    const global = LLAMA_GLOBAL[canonical];
    if (global) return { names: withBase(global), conv: false };
    const block = arch === 'phi3' ? PHI3_BLOCK : arch === 'gemma2' || arch === 'gemma3' || arch === 'gemma-embedding' ? GEMMA_BLOCK : LLAMA_BLOCK;
    const path = m ? block[m[2]!] : undefined;
    return path ? { names: withBase(`model.layers.${layer}.${path}.${m![3]}`), conv: false } : undefined;
  }
  if (canonical === 'output.weight') return { names: ['lm_head.weight'], conv: false };
  const withPrefixes = (name: string): string[] => [name, `transformer.${name}`];
  const global = GPT2_GLOBAL[canonical];
  if (global) return { names: withPrefixes(global), conv: false };
  const block = m ? GPT2_BLOCK[m[2]!] : undefined;
  if (!block) return undefined;
  return { names: withPrefixes(`h.${layer}.${block.path}.${m![3]}`), conv: block.conv && m![3] === 'weight' };
}

/** Opens the folder's safetensors weights and serves them by canonical name, lazily: in place
 *  where `inPlace` maps them and no conversion is needed (F32, F16 and BF16 are computed with
 *  as they are; GPT-2's Conv1D weights and Qwen3.5's reordered ones are copies). */
export function hfTensorSource(dir: string, config: ModelConfig, inPlace?: InPlaceBytes): HFTensorSource {
  const model = openSafetensorsModel(dir, inPlace);
  if (config.arch === 'gpt-oss') {
    const source = gptOssTensorSource(dir, model, config);
    return { dir, get bytesRead() { return model.bytesRead; }, has: source.has, get: source.get, dimsOf: source.dimsOf };
  }
  const cache = new Map<string, WeightTensor>();
  // EmbeddingGemma's Dense modules live in folders of their own (llama.cpp reads them for gemma-embedding only)
  const dense = config.arch === 'gemma-embedding' ? denseTensors(dir, inPlace) : new Map<string, () => WeightTensor>();
  const locate = (name: string): { hfName: string; conv: boolean } | undefined => {
    if (name === 'output.weight' && config.tiedEmbeddings) return undefined;
    const loc = hfLocation(config.arch, config.numLayers, name);
    const hfName = loc?.names.find((n) => model.has(n));
    return loc && hfName ? { hfName, conv: loc.conv } : undefined;
  };
  // a pooling model (an encoder, an embedding model) has no output projection
  if (!config.tiedEmbeddings && !config.pooling && !locate('output.weight')) {
    throw new ModelFormatError(dir, 'config.json says tie_word_embeddings is false but there is no lm_head.weight');
  }
  return {
    dir,
    get bytesRead() {
      return model.bytesRead;
    },
    has: (name) => dense.has(name) || locate(name) !== undefined,
    dimsOf(name) {
      if (dense.has(name)) return this.get(name).dims;
      const where = locate(name);
      const shape = where && model.fileOf(where.hfName)?.entry(where.hfName)?.shape;
      if (!where || !shape) return undefined;
      return where.conv ? [...shape] : [...shape].reverse();
    },
    get(name) {
      const hit = cache.get(name);
      if (hit) return hit;
      const where = locate(name);
      const fromDense = dense.get(name);
      if (!where && !fromDense) throw missing(dir, config, name);
      const raw = fromDense ? fromDense() : load(model, name, where!.hfName, where!.conv);
      const tensor = config.arch === 'qwen35' || config.arch === 'qwen35moe' ? qwen35Transform(config, name, raw) : raw;
      cache.set(name, tensor);
      return tensor;
    },
  };
}

function missing(dir: string, config: ModelConfig, name: string): ModelFormatError {
  if (name === 'output.weight' && config.tiedEmbeddings) {
    return new ModelFormatError(dir, 'no output.weight: the output projection is tied to token_embd.weight');
  }
  const loc = hfLocation(config.arch, config.numLayers, name);
  if (!loc) return new ModelFormatError(dir, `no tensor ${name} in a ${config.arch} model with ${config.numLayers} layers`);
  return new ModelFormatError(dir, `missing tensor ${loc.names.join(' or ')} (for ${name})`);
}

/** Reads one tensor (not cached by the file: the source caches the result). */
function load(model: SafetensorsModel, name: string, hfName: string, conv: boolean): WeightTensor {
  const file = model.fileOf(hfName)!; // locate() found it
  const entry = file.entry(hfName)!;
  const type = ggmlTypeOf(file.path, entry);
  const data = file.read(hfName, { cache: false });
  if (!conv) return { name, type, dims: [...entry.shape].reverse(), data };
  const [inFeatures, outFeatures] = entry.shape;
  if (entry.shape.length !== 2 || inFeatures === undefined || outFeatures === undefined) {
    throw new ModelFormatError(file.path, `Conv1D weight ${hfName} should be 2-D, has shape [${entry.shape.join(', ')}]`);
  }
  const elementSize = data.length / (inFeatures * outFeatures);
  return { name, type, dims: [inFeatures, outFeatures], data: transposeBytes(data, inFeatures, outFeatures, elementSize) };
}

/** [rows, cols] row-major elements of `elementSize` bytes → [cols, rows] row-major. */
export function transposeBytes(src: Uint8Array, rows: number, cols: number, elementSize: number): Uint8Array {
  const out = new Uint8Array(src.length);
  if ((elementSize === 4 || elementSize === 2) && src.byteOffset % elementSize === 0) {
    // whole-element copies through same-width integer views
    const n = rows * cols;
    const s = elementSize === 4 ? new Uint32Array(src.buffer, src.byteOffset, n) : new Uint16Array(src.buffer, src.byteOffset, n);
    const d = elementSize === 4 ? new Uint32Array(out.buffer, 0, n) : new Uint16Array(out.buffer, 0, n);
    for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) d[c * rows + r] = s[r * cols + c]!;
    return out;
  }
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const from = (r * cols + c) * elementSize;
      out.set(src.subarray(from, from + elementSize), (c * rows + r) * elementSize);
    }
  }
  return out;
}
