// BERT Hugging Face folders (BertModel, BertForMaskedLM, BertForSequenceClassification) as
// llama.cpp's converter reads them (conversion/bert.py): config.json for the shape, the
// weights under BertModel's names (with or without a `bert.` prefix), and the pooling from
// sentence-transformers' modules (hf-sentence-transformers.ts). A sequence classifier (a cross-encoder) ranks: its
// `classifier` is llama.cpp's cls.output (the converter drops BERT's pooler dense layer).
import { UnsupportedModelError } from '../errors.js';
import type { Fields } from './hf-fields.js';
import type { ModelConfig } from './weights.js';

export function bertConfig(c: Fields, classifier: boolean): ModelConfig {
  const hiddenSize = c.count('hidden_size');
  const numHeads = c.count('num_attention_heads');
  const headDim = c.whole('hidden_size', hiddenSize / numHeads);
  const act = c.raw('hidden_act') ?? 'gelu';
  // llama.cpp computes every BERT GELU with ggml's tanh approximation, whatever the config names
  if (typeof act !== 'string' || !act.startsWith('gelu')) throw new UnsupportedModelError(c.file, `hidden_act ${JSON.stringify(act)} is not supported (BERT's GELU only)`);
  const positions = c.raw('position_embedding_type') ?? 'absolute';
  if (positions !== 'absolute') throw new UnsupportedModelError(c.file, `position_embedding_type ${JSON.stringify(positions)} is not supported (only absolute)`);
  const labels = classifier ? classifierLabels(c) : undefined;
  const matryoshka = c.raw('matryoshka_dimensions');
  if (matryoshka !== undefined && !(Array.isArray(matryoshka) && matryoshka.every((d) => Number.isInteger(d) && d > 0 && d <= hiddenSize))) {
    throw c.bad('matryoshka_dimensions', `a list of widths up to ${hiddenSize}`);
  }
  return {
    arch: 'bert',
    vocabSize: c.count('vocab_size'),
    hiddenSize,
    numLayers: c.count('num_hidden_layers'),
    numHeads,
    numKvHeads: numHeads,
    headDim,
    ffnSize: c.count('intermediate_size'),
    contextLength: c.count('max_position_embeddings'),
    normEps: c.num('layer_norm_eps', 1e-12),
    ropeBase: 10000,
    ropeDim: headDim,
    ropeStyle: 'normal',
    tiedEmbeddings: false,
    // refined from modules.json by withSentenceTransformersPooling; a bare BertModel pools its
    // [CLS] token, as vLLM's BERT embedding model does
    pooling: {
      type: classifier ? 'rank' : 'cls',
      normalize: !classifier,
      ...(labels ? { labels } : {}),
      ...(matryoshka ? { matryoshkaDimensions: matryoshka as number[] } : {}),
    },
    bidirectional: true,
  };
}

/** id2label in id order, unless it is the two dummy labels AutoConfig adds (the converter drops those too) */
function classifierLabels(c: Fields): string[] | undefined {
  const raw = c.raw('id2label');
  if (typeof raw !== 'object' || raw === null) return undefined;
  const entries = Object.entries(raw as Record<string, unknown>).sort(([a], [b]) => Number(a) - Number(b));
  const labels = entries.map(([, v]) => String(v));
  if (labels.length === 2 && labels[0] === 'LABEL_0') return undefined;
  return labels;
}

const BERT_GLOBAL: Readonly<Record<string, string>> = {
  'token_embd.weight': 'embeddings.word_embeddings.weight',
  'token_types.weight': 'embeddings.token_type_embeddings.weight',
  'position_embd.weight': 'embeddings.position_embeddings.weight',
  'token_embd_norm.weight': 'embeddings.LayerNorm.weight',
  'token_embd_norm.bias': 'embeddings.LayerNorm.bias',
  'cls.output.weight': 'classifier.weight',
  'cls.output.bias': 'classifier.bias',
};

/** canonical per-block tensor (without `.weight`/`.bias`) → BertModel module under encoder.layer.N */
const BERT_BLOCK: Readonly<Record<string, string>> = {
  attn_q: 'attention.self.query',
  attn_k: 'attention.self.key',
  attn_v: 'attention.self.value',
  attn_output: 'attention.output.dense',
  attn_output_norm: 'attention.output.LayerNorm',
  ffn_up: 'intermediate.dense',
  ffn_down: 'output.dense',
  layer_output_norm: 'output.LayerNorm',
};

const BLOCK_NAME = /^blk\.(\d+)\.([a-z_]+)\.(weight|bias)$/;

/** HF names of a canonical BERT tensor (BertModel's, then a task model's `bert.`-prefixed), or undefined */
export function bertHFNames(numLayers: number, canonical: string): string[] | undefined {
  const global = BERT_GLOBAL[canonical];
  if (global) return global.startsWith('classifier.') ? [global] : [global, `bert.${global}`];
  const m = BLOCK_NAME.exec(canonical);
  if (!m || Number(m[1]) >= numLayers) return undefined;
  const path = BERT_BLOCK[m[2]!];
  if (!path) return undefined;
  const name = `encoder.layer.${m[1]}.${path}.${m[3]}`;
  return [name, `bert.${name}`];
}
