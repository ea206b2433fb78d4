// sentence-transformers' modules in a Hugging Face folder, as llama.cpp's converter reads
// them (conversion/base.py _try_set_pooling_type, conversion/gemma.py's EmbeddingGemma):
// modules.json lists the pipeline; its Pooling module's config.json names the pooling (mean,
// cls or last token), a Normalize module L2-normalizes, and Dense modules (EmbeddingGemma's
// 2_Dense and 3_Dense, each `linear.weight` in its own model.safetensors) project the pooled
// vector, in order, as llama.cpp's dense_2 and dense_3.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ModelFormatError, UnsupportedModelError } from '../errors.js';
import { ggmlTypeOf } from './safetensors.js';
import { openSafetensorsModel } from './safetensors-folder.js';
import type { ArchName, ModelConfig, PoolingConfig, PoolingType } from './weights.js';
import type { WeightTensor } from '../tensor/weight-tensor.js';
import type { InPlaceBytes } from './model-memory.js';

interface StModule {
  readonly type: string;
  readonly path: string;
}

/** decoders llama.cpp's converter turns into pooling models when modules.json has a Pooling module (Qwen2Model and its kin: Qwen3-Embedding) */
const POOLED_DECODERS: readonly ArchName[] = ['qwen2', 'qwen3'];

function modulesOf(dir: string): StModule[] | undefined {
  const file = join(dir, 'modules.json');
  if (!existsSync(file)) return undefined;
  const modules = readJson(file);
  if (!Array.isArray(modules) || !modules.every((m): m is StModule => typeof m?.type === 'string' && typeof m?.path === 'string')) {
    throw new ModelFormatError(file, 'should be a list of {type, path} modules');
  }
  return modules;
}

/** The pooling sentence-transformers' modules.json (and its Pooling module's config.json) declare, over the config's default. */
export function withSentenceTransformersPooling(dir: string, config: ModelConfig): ModelConfig {
  if (config.pooling?.type === 'rank') return config;
  const modules = modulesOf(dir);
  if (!modules) return config;
  const pooling = modules.find((m) => m.type.endsWith('Pooling'));
  if (!config.pooling && !(pooling && POOLED_DECODERS.includes(config.arch))) return config;
  const normalize = modules.some((m) => m.type.endsWith('Normalize'));
  const type = pooling ? stPoolingType(join(dir, pooling.path, 'config.json')) : config.pooling!.type;
  const out: PoolingConfig = { ...config.pooling, type, normalize };
  return { ...config, pooling: out };
}

/** conversion/base.py's _try_set_pooling_type: mean, cls or last token */
function stPoolingType(file: string): PoolingType {
  const p = readJson(file) as Record<string, unknown>;
  if (p.pooling_mode_mean_tokens === true) return 'mean';
  if (p.pooling_mode_cls_token === true) return 'cls';
  if (p.pooling_mode_lasttoken === true) return 'last';
  const mode = p.pooling_mode;
  if (mode === 'mean' || mode === 'cls') return mode;
  if (mode === 'lasttoken') return 'last';
  throw new UnsupportedModelError(file, 'only mean, cls and last-token pooling are supported');
}

const IDENTITY = ['torch.nn.modules.linear.Identity', 'torch.nn.Identity', 'Identity'];

/**
 * The Dense modules' weights as dense_2.weight, dense_3.weight (llama.cpp's names, in the
 * modules' order). Each must be a bias-free linear map with no activation, as EmbeddingGemma's
 * are and as llama.cpp computes them.
 */
export function denseTensors(dir: string, inPlace?: InPlaceBytes): Map<string, () => WeightTensor> {
  const out = new Map<string, () => WeightTensor>();
  const dense = (modulesOf(dir) ?? []).filter((m) => m.type.endsWith('Dense'));
  if (dense.length > 2) throw new UnsupportedModelError(join(dir, 'modules.json'), `${dense.length} Dense modules (llama.cpp reads two at most: dense_2, dense_3)`);
  dense.forEach((m, i) => {
    const folder = join(dir, m.path);
    const conf = readJson(join(folder, 'config.json')) as Record<string, unknown>;
    if (conf.bias === true) throw new UnsupportedModelError(folder, 'a Dense module with a bias is not supported (llama.cpp drops it)');
    const act = conf.activation_function ?? 'torch.nn.modules.linear.Identity';
    if (typeof act !== 'string' || !IDENTITY.includes(act)) throw new UnsupportedModelError(folder, `Dense activation ${JSON.stringify(act)} is not supported (only Identity)`);
    const name = `dense_${i + 2}.weight`;
    out.set(name, () => {
      const model = openSafetensorsModel(folder, inPlace);
      const file = model.fileOf('linear.weight');
      const entry = file?.entry('linear.weight');
      if (!file || !entry) throw new ModelFormatError(folder, 'no linear.weight in the Dense module');
      return { name, type: ggmlTypeOf(file.path, entry), dims: [...entry.shape].reverse(), data: file.read('linear.weight', { cache: false }) };
    });
  });
  return out;
}

function readJson(file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new ModelFormatError(file, `cannot read as JSON (${(e as Error).message})`);
  }
}
