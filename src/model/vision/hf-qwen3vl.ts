// The vision tower of a Hugging Face Qwen3_5ForConditionalGeneration folder (model.visual.*) as
// the projector llama.cpp's converter would have written from it (conversion/qwen3vl.py
// Qwen3VLVisionModel): its vision_config and preprocessor_config.json as the clip.vision.* keys,
// its tensors under the mmproj names (the temporal Conv3D split into v.patch_embd.weight and
// .weight.1, the merger's norm as v.post_ln, linear_fc1 / linear_fc2 as mm.0 / mm.2), read by the
// same Qwen3vlProjector as an mmproj file. Used when a folder has a vision tower and no --mmproj
// is given.
import { ModelFormatError } from '../../errors.js';
import type { WeightTensor } from '../../tensor/weight-tensor.js';
import type { GGUFValue } from '../gguf-metadata.js';
import type { InPlaceBytes } from '../model-memory.js';
import { ggmlTypeOf } from '../safetensors.js';
import type { ModelConfig } from '../weights.js';
import { ClipFile } from './clip-file.js';
import { preprocessorConfig, preprocessorStats, visionTower } from './hf-folder-files.js';
import type { ClipSource } from './clip-file.js';
import type { LoadedProjector } from './projector-file.js';
import { Qwen3vlProjector } from './qwen3vl.js';

const PREFIXES = ['model.visual.', 'visual.'];

/** mmproj name → the vision tower's module path (without the prefix), per block where {n} */
const NAMES: readonly [RegExp, (m: RegExpExecArray) => string][] = [
  [/^v\.patch_embd\.bias$/, () => 'patch_embed.proj.bias'],
  [/^v\.position_embd\.weight$/, () => 'pos_embed.weight'],
  [/^v\.post_ln\.(weight|bias)$/, (m) => `merger.norm.${m[1]}`],
  [/^mm\.0\.(weight|bias)$/, (m) => `merger.linear_fc1.${m[1]}`],
  [/^mm\.2\.(weight|bias)$/, (m) => `merger.linear_fc2.${m[1]}`],
  [/^v\.blk\.(\d+)\.ln1\.(weight|bias)$/, (m) => `blocks.${m[1]}.norm1.${m[2]}`],
  [/^v\.blk\.(\d+)\.ln2\.(weight|bias)$/, (m) => `blocks.${m[1]}.norm2.${m[2]}`],
  [/^v\.blk\.(\d+)\.attn_qkv\.(weight|bias)$/, (m) => `blocks.${m[1]}.attn.qkv.${m[2]}`],
  [/^v\.blk\.(\d+)\.attn_out\.(weight|bias)$/, (m) => `blocks.${m[1]}.attn.proj.${m[2]}`],
  [/^v\.blk\.(\d+)\.ffn_up\.(weight|bias)$/, (m) => `blocks.${m[1]}.mlp.linear_fc1.${m[2]}`],
  [/^v\.blk\.(\d+)\.ffn_down\.(weight|bias)$/, (m) => `blocks.${m[1]}.mlp.linear_fc2.${m[2]}`],
];

const PATCH = 'patch_embed.proj.weight';

/** The folder's projector, or undefined when it has no vision tower. */
export function qwen35FolderProjector(dir: string, text: ModelConfig, inPlace?: InPlaceBytes): LoadedProjector | undefined {
  const tower = visionTower(dir, PREFIXES, PATCH, inPlace);
  if (!tower) return undefined;
  const { configPath, config, vision: v, model, prefix } = tower;
  const num = (key: string, fallback?: number): number => {
    const x = v[key] ?? fallback;
    if (typeof x !== 'number' || !Number.isInteger(x) || x < 0) throw new ModelFormatError(configPath, `vision_config.${key} should be a count, got ${JSON.stringify(v[key])}`);
    return x;
  };
  const patch = num('patch_size', 16);
  if (num('temporal_patch_size', 2) !== 2) throw new ModelFormatError(configPath, 'vision_config.temporal_patch_size must be 2 (as llama.cpp converts it)');
  const depth = num('depth');
  const deepstack = Array.isArray(v['deepstack_visual_indexes']) ? (v['deepstack_visual_indexes'] as unknown[]) : [];
  const act = String(v['hidden_act'] ?? 'gelu_pytorch_tanh');
  const textConfig = (config['text_config'] ?? {}) as Record<string, unknown>;
  const pre = preprocessorConfig(dir);
  const stats = (key: string): number[] => preprocessorStats(dir, pre, key);
  const metadata = new Map<string, GGUFValue>([
    ['general.architecture', 'clip'],
    ['clip.has_vision_encoder', true],
    ['clip.projector_type', 'qwen3vl_merger'],
    ['clip.use_gelu', act.startsWith('gelu')],
    ['clip.vision.projection_dim', num('out_hidden_size')],
    ['clip.vision.image_size', Math.round(Math.sqrt(num('num_position_embeddings', 2304))) * patch],
    ['clip.vision.patch_size', patch],
    ['clip.vision.embedding_length', num('hidden_size')],
    ['clip.vision.feed_forward_length', num('intermediate_size')],
    ['clip.vision.block_count', depth],
    ['clip.vision.attention.head_count', num('num_heads')],
    ['clip.vision.spatial_merge_size', num('spatial_merge_size', 2)],
    // the converter takes the text config's rms_norm_eps
    ['clip.vision.attention.layer_norm_epsilon', typeof textConfig['rms_norm_eps'] === 'number' ? textConfig['rms_norm_eps'] : 1e-6],
    ['clip.vision.image_mean', stats('image_mean')],
    ['clip.vision.image_std', stats('image_std')],
    ['clip.vision.is_deepstack_layers', Array.from({ length: depth }, (_, i) => deepstack.includes(i))],
  ]);
  if (!act.startsWith('gelu')) throw new ModelFormatError(configPath, `vision_config.hidden_act ${JSON.stringify(act)}: qwen3vl_merger runs GELU`);

  const hfName = (name: string): string | undefined => {
    for (const [re, path] of NAMES) {
      const m = re.exec(name);
      if (m) return prefix + path(m);
    }
    return undefined;
  };
  const read = (name: string, hf: string): WeightTensor => {
    const file = model.fileOf(hf)!;
    const entry = file.entry(hf)!;
    return { name, type: ggmlTypeOf(file.path, entry), dims: [...entry.shape].reverse(), data: file.read(hf, { cache: false }) };
  };
  const cache = new Map<string, WeightTensor>();
  const has = (name: string): boolean => name === 'v.patch_embd.weight' || name === 'v.patch_embd.weight.1' || (hfName(name) !== undefined && model.has(hfName(name)!));
  const tensor = (name: string): WeightTensor => {
    const hit = cache.get(name);
    if (hit) return hit;
    let t: WeightTensor;
    if (name === 'v.patch_embd.weight' || name === 'v.patch_embd.weight.1') {
      t = temporalSlice(read(name, prefix + PATCH), name.endsWith('.1') ? 1 : 0, name);
    } else {
      const hf = hfName(name);
      if (!hf || !model.has(hf)) throw new ModelFormatError(dir, `missing tensor ${hf ?? name} (for the projector's ${name})`);
      t = read(name, hf);
    }
    cache.set(name, t);
    return t;
  };
  const source: ClipSource = { path: dir, metadata, has, tensor, get: tensor };
  const projector = new Qwen3vlProjector(new ClipFile(source), text);
  if (projector.outputSize !== text.hiddenSize) {
    throw new ModelFormatError(dir, `the vision tower's embeddings are ${projector.outputSize} wide but the text model's hidden size is ${text.hiddenSize}`);
  }
  return Object.assign(projector, { dispose: () => cache.clear() });
}

/** Conv3D [hidden, channels, 2, p, p] (ggml dims [p, p, 2, channels, hidden]) → frame t's Conv2D [hidden, channels, p, p] */
function temporalSlice(w: WeightTensor, t: number, name: string): WeightTensor {
  const [kw, kh, kt, ch, out] = w.dims;
  if (w.dims.length !== 5 || kt !== 2) throw new ModelFormatError(name, `the patch embedding should be a Conv3D over 2 frames, has dims [${w.dims.join(', ')}]`);
  const plane = kw! * kh!;
  const size = w.data.length / (plane * kt! * ch! * out!);
  const data = new Uint8Array(plane * ch! * out! * size);
  for (let o = 0; o < out! * ch!; o++) {
    const from = ((o * kt! + t) * plane) * size;
    data.set(w.data.subarray(from, from + plane * size), o * plane * size);
  }
  return { name, type: w.type, dims: [kw!, kh!, ch!, out!], data };
}
