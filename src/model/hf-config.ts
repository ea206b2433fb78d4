// Hugging Face config.json → ModelConfig for the families loom runs. Field names and
// defaults follow transformers' LlamaConfig, MistralConfig, Qwen2Config, Qwen3Config and
// GPT2Config. HF checkpoints keep q/k in rotate_half layout, so RoPE is `neox` here (no
// un-permuting; GGUF files of llama, permuted by llama.cpp's converter, say `normal`).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ModelFormatError, UnsupportedModelError } from '../errors.js';
import { Fields, attentionHeads } from './hf-fields.js';
import { embeddingGemmaConfig, gemma3TextDefaults, gemmaConfig } from './hf-config-gemma.js';
import type { ArchName, ModelConfig } from './weights.js';
import { qwen35Config } from './hf-qwen35.js';
import { hfRopeScaling } from './hf-rope.js';
import { hfMoeParams } from './hf-config-moe.js';
import { gptOssConfig } from './hf-gptoss.js';
import { bertConfig } from './hf-bert.js';
import { nomicBertConfig } from './hf-nomic-bert.js';
import { withSentenceTransformersPooling } from './hf-sentence-transformers.js';

export const CONFIG_FILE = 'config.json';

type Family =
  | 'llama' | 'mistral' | 'qwen2' | 'qwen3' | 'gpt2' | 'phi3' | 'smollm3' | 'gemma2' | 'gemma3' | 'qwen35' | 'qwen3moe' | 'qwen35moe'
  | 'bert' | 'bert-classifier' | 'nomic-bert' | 'gemma-embedding';

const BY_ARCHITECTURE: Readonly<Record<string, Family>> = {
  LlamaForCausalLM: 'llama',
  MistralForCausalLM: 'mistral',
  Qwen2ForCausalLM: 'qwen2',
  Qwen3ForCausalLM: 'qwen3',
  // the base models sentence-transformers saves (Qwen3-Embedding): no lm_head, names without model.
  Qwen2Model: 'qwen2',
  Qwen3Model: 'qwen3',
  GPT2LMHeadModel: 'gpt2',
  Phi3ForCausalLM: 'phi3',
  SmolLM3ForCausalLM: 'smollm3',
  Gemma2ForCausalLM: 'gemma2',
  Gemma3ForCausalLM: 'gemma3',
  Qwen3_5ForCausalLM: 'qwen35',
  Qwen3MoeForCausalLM: 'qwen3moe',
  Qwen3_5MoeForCausalLM: 'qwen35moe',
  // the image-text checkpoints: the text model's config under text_config (its vision tower
  // is the projector, src/model/vision/hf-qwen3vl.ts)
  Qwen3_5ForConditionalGeneration: 'qwen35',
  Qwen3_5MoeForConditionalGeneration: 'qwen35moe',
  // its vision tower and projector: src/model/vision/hf-gemma3.ts
  Gemma3ForConditionalGeneration: 'gemma3',
  BertModel: 'bert',
  BertForMaskedLM: 'bert',
  BertForSequenceClassification: 'bert-classifier',
  NomicBertModel: 'nomic-bert',
  Gemma3TextModel: 'gemma-embedding',
};
const FAMILIES: readonly Family[] = ['llama', 'mistral', 'qwen2', 'qwen3', 'gpt2', 'phi3', 'smollm3', 'gemma2', 'gemma3', 'qwen35', 'qwen3moe', 'qwen35moe', 'bert', 'nomic-bert'];
/** Mistral runs as llama (llama.cpp converts it to a llama GGUF and attends to the whole context) */
const ARCH_OF: Readonly<Record<Exclude<Family, 'gemma2' | 'gemma3' | 'qwen35' | 'qwen35moe' | 'bert' | 'bert-classifier' | 'nomic-bert' | 'gemma-embedding'>, ArchName>> = {
  llama: 'llama',
  mistral: 'llama',
  qwen2: 'qwen2',
  qwen3: 'qwen3',
  gpt2: 'gpt2',
  phi3: 'phi3',
  smollm3: 'smollm3',
  qwen3moe: 'qwen3moe',
};

/** Reads `<dir>/config.json`. */
export function readHFConfig(dir: string): ModelConfig {
  const file = join(dir, CONFIG_FILE);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new ModelFormatError(file, code === 'ENOENT' ? 'no such file (a Hugging Face model folder needs config.json)' : `cannot read (${code ?? String(e)})`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new ModelFormatError(file, `not valid JSON (${(e as Error).message})`);
  }
  return withSentenceTransformersPooling(dir, parseHFConfig(file, json));
}

/** Maps a parsed config.json (`file` names it in errors). */
export function parseHFConfig(file: string, json: unknown): ModelConfig {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new ModelFormatError(file, 'not a JSON object');
  }
  const c = new Fields(file, json as Record<string, unknown>);
  if (isGptOss(c)) return gptOssConfig(c);
  const family = familyOf(c);
  if (family === 'gemma2') return gemmaConfig(c, family);
  // Gemma3ForConditionalGeneration: text_config holds only what differs from Gemma3TextConfig's defaults
  if (family === 'gemma3') return gemmaConfig(c.raw('text_config') === undefined ? c : gemma3TextDefaults(textFields(c)), family);
  if (family === 'qwen35' || family === 'qwen35moe') return qwen35Config(textFields(c), family === 'qwen35moe');
  if (family === 'bert' || family === 'bert-classifier') return bertConfig(c, family === 'bert-classifier');
  if (family === 'nomic-bert') return nomicBertConfig(c);
  if (family === 'gemma-embedding') return embeddingGemmaConfig(c);
  return family === 'gpt2' ? gpt2Config(c) : llamaLikeConfig(c, family);
}

/** An image-text config's text_config (tie_word_embeddings from the top level when only there), else the config itself. */
function textFields(c: Fields): Fields {
  const text = c.raw('text_config');
  if (text === undefined) return c;
  if (typeof text !== 'object' || text === null || Array.isArray(text)) throw c.bad('text_config', 'an object');
  const t = text as Record<string, unknown>;
  return new Fields(c.file, { ...t, tie_word_embeddings: t['tie_word_embeddings'] ?? c.raw('tie_word_embeddings') });
}

/** GptOssForCausalLM (model_type gpt_oss): its own config and tensor layout (hf-gptoss.ts) */
function isGptOss(c: Fields): boolean {
  const archs = c.raw('architectures');
  return Array.isArray(archs) ? archs[0] === 'GptOssForCausalLM' : c.raw('model_type') === 'gpt_oss';
}

function familyOf(c: Fields): Family {
  const archs = c.raw('architectures');
  if (archs !== undefined) {
    if (!Array.isArray(archs) || typeof archs[0] !== 'string') throw c.bad('architectures', 'a list of class names');
    const family = BY_ARCHITECTURE[archs[0]];
    if (!family) {
      throw new UnsupportedModelError(
        c.file,
        `architecture ${archs[0]} is not supported (loom runs ${Object.keys(BY_ARCHITECTURE).join(', ')})`,
      );
    }
    return family;
  }
  const raw = c.raw('model_type');
  const type = raw === 'gemma3_text' ? 'gemma3' : raw === 'qwen3_5_text' ? 'qwen35' : raw === 'qwen3_moe' ? 'qwen3moe' : raw === 'qwen3_5_moe_text' ? 'qwen35moe' : raw === 'nomic_bert' ? 'nomic-bert' : raw;
  const family = FAMILIES.find((f) => f === type);
  if (!family) {
    throw new UnsupportedModelError(c.file, `model_type ${JSON.stringify(type)} is not supported (loom runs ${FAMILIES.join(', ')})`);
  }
  return family;
}

function llamaLikeConfig(c: Fields, family: Exclude<Family, 'gpt2' | 'gemma2' | 'gemma3' | 'qwen35' | 'qwen35moe' | 'bert' | 'bert-classifier' | 'nomic-bert' | 'gemma-embedding'>): ModelConfig {
  const hiddenSize = c.count('hidden_size');
  const { numHeads, numKvHeads } = attentionHeads(c);
  const headDim = c.count('head_dim', () => c.whole('hidden_size', hiddenSize / numHeads));
  const contextLength = c.count('max_position_embeddings');
  checkSlidingWindow(c, family, contextLength);
  const act = c.raw('hidden_act') ?? 'silu';
  if (act !== 'silu') throw new UnsupportedModelError(c.file, `hidden_act ${JSON.stringify(act)} is not supported (only silu)`);
  // attention_bias adds biases to q, k, v AND o_proj (qwen2 has q/k/v biases by construction)
  if (family !== 'qwen2' && c.raw('attention_bias') === true) {
    throw new UnsupportedModelError(c.file, 'attention_bias: true (biases on q/k/v/o projections) is not supported');
  }
  if (c.raw('mlp_bias') === true) throw new UnsupportedModelError(c.file, 'mlp_bias: true is not supported');
  const rope = ropeOf(c);
  const partial = c.num('partial_rotary_factor', 1);
  const ropeDim = Math.floor(headDim * partial);
  if (!(partial > 0 && partial <= 1) || ropeDim % 2 !== 0) {
    throw new ModelFormatError(c.file, `partial_rotary_factor ${partial} does not give an even number of rotated dims of ${headDim}`);
  }
  const ropeScaling = hfRopeScaling({ file: c.file, json: c.json, headDim, ropeDim, ropeBase: rope.theta, contextLength });
  const numLayers = c.count('num_hidden_layers');
  const noRopeLayers = family === 'smollm3' ? smollm3NoRopeLayers(c, numLayers) : undefined;
  return {
    arch: ARCH_OF[family],
    vocabSize: c.count('vocab_size'),
    hiddenSize,
    numLayers,
    numHeads,
    numKvHeads,
    headDim,
    ffnSize: c.count('intermediate_size'),
    contextLength,
    normEps: c.num('rms_norm_eps', 1e-6),
    ropeBase: rope.theta,
    ropeDim,
    ropeStyle: 'neox',
    // LlamaConfig, MistralConfig, Qwen2Config, Qwen3Config and Phi3Config default to false, SmolLM3Config to true
    tiedEmbeddings: c.bool('tie_word_embeddings', family === 'smollm3'),
    ...(ropeScaling ? { ropeScaling } : {}),
    ...(noRopeLayers ? { noRopeLayers } : {}),
    ...(family === 'qwen3moe' ? { moe: hfMoeParams(c) } : {}),
  };
}

/** SmolLM3Config.no_rope_layers: 1 = RoPE on that layer, 0 = none; default every no_rope_layer_interval-th without. */
function smollm3NoRopeLayers(c: Fields, numLayers: number): number[] {
  const list = c.raw('no_rope_layers');
  if (list === undefined || list === null) {
    const interval = c.count('no_rope_layer_interval', () => 4);
    return Array.from({ length: numLayers }, (_, i) => i).filter((i) => (i + 1) % interval === 0);
  }
  if (!Array.isArray(list) || list.length !== numLayers) throw c.bad('no_rope_layers', `a list of ${numLayers} 0/1 flags`);
  return list.flatMap((use, i) => (use ? [] : [i]));
}

/** Mistral's sliding window (HF default 4096) matters only below the context length. */
function checkSlidingWindow(c: Fields, family: Family, contextLength: number): void {
  if (family === 'mistral') {
    const window = c.raw('sliding_window') === undefined ? 4096 : c.raw('sliding_window');
    if (window === null) return;
    if (typeof window !== 'number') throw c.bad('sliding_window', 'a number or null');
    if (window < contextLength) {
      throw new UnsupportedModelError(
        c.file,
        `sliding-window attention (sliding_window ${window} < max_position_embeddings ${contextLength}, as in Mistral-7B-v0.1) is not supported`,
      );
    }
  } else if ((family === 'qwen2' || family === 'qwen3' || family === 'qwen3moe' || family === 'smollm3') && c.raw('use_sliding_window') === true) {
    throw new UnsupportedModelError(c.file, 'sliding-window attention (use_sliding_window: true) is not supported');
  }
}

/** rope_theta, from the classic fields or transformers' newer `rope_parameters`. */
export function ropeOf(c: Fields): { theta: number } {
  const params = c.raw('rope_parameters');
  const fromParams = params && typeof params === 'object' ? (params as Record<string, unknown>)['rope_theta'] : undefined;
  if (c.raw('rope_theta') === undefined && typeof fromParams === 'number') return { theta: fromParams };
  return { theta: c.num('rope_theta', 10000) };
}

function gpt2Config(c: Fields): ModelConfig {
  const hiddenSize = c.count(['n_embd', 'hidden_size']);
  const numHeads = c.count(['n_head', 'num_attention_heads']);
  const act = c.raw('activation_function') ?? 'gelu_new';
  if (act !== 'gelu_new' && act !== 'gelu_pytorch_tanh') {
    throw new UnsupportedModelError(c.file, `activation_function ${JSON.stringify(act)} is not supported (only the tanh GELU, gelu_new)`);
  }
  if (c.raw('scale_attn_by_inverse_layer_idx') === true) {
    throw new UnsupportedModelError(c.file, 'scale_attn_by_inverse_layer_idx: true is not supported');
  }
  const headDim = c.whole('n_embd', hiddenSize / numHeads);
  const inner = c.raw('n_inner');
  return {
    arch: 'gpt2',
    vocabSize: c.count('vocab_size'),
    hiddenSize,
    numLayers: c.count(['n_layer', 'num_hidden_layers']),
    numHeads,
    numKvHeads: numHeads,
    headDim,
    ffnSize: inner === undefined || inner === null ? 4 * hiddenSize : c.count('n_inner'),
    contextLength: c.count(['n_positions', 'max_position_embeddings']),
    normEps: c.num('layer_norm_epsilon', 1e-5),
    // no RoPE in gpt2 (learned positions); these match what the GGUF side reports
    ropeBase: 10000,
    ropeDim: headDim,
    ropeStyle: 'normal',
    tiedEmbeddings: c.bool('tie_word_embeddings', true),
  };
}
