// The vision tower of a Hugging Face Gemma3ForConditionalGeneration folder (google/gemma-3-*-it)
// as the projector llama.cpp's converter would have written from it (conversion/gemma.py
// Gemma3VisionModel over MmprojModel): vision_config and preprocessor_config.json as the
// clip.vision.* keys; SigLIP's vision_tower.vision_model.* and multi_modal_projector.* under the
// mmproj names, with the converter's transforms: mm_soft_emb_norm + 1 (Gemma3RMSNorm's 1 + w),
// and its tensor_force_quant: the patch and position embeddings in F32, mm_input_projection_weight
// in F16 whatever the folder's type or --outtype (llama.cpp issue 13025), so that the embeddings
// are the converted file's. Read by the same Gemma3Projector as an mmproj file, plus what only
// the folder says: its resample filter and pan and scan.
import { join } from 'node:path';
import { ModelFormatError } from '../../errors.js';
import { f32ArrayToF16, roundToF16 } from '../../tensor/half.js';
import type { WeightTensor } from '../../tensor/weight-tensor.js';
import { GGMLType } from '../../tensor/weight-types.js';
import { loadVector } from '../arch/architecture.js';
import type { GGUFValue } from '../gguf-metadata.js';
import type { InPlaceBytes } from '../model-memory.js';
import { ggmlTypeOf } from '../safetensors.js';
import type { ModelConfig } from '../weights.js';
import { ClipFile } from './clip-file.js';
import type { ClipSource } from './clip-file.js';
import { Gemma3Projector } from './gemma3.js';
import type { Gemma3Options } from './gemma3.js';
import { preprocessorConfig, preprocessorStats, visionTower } from './hf-folder-files.js';
import { PAN_AND_SCAN_DEFAULTS } from './pan-and-scan.js';
import type { ResizeAlgo } from './preprocess.js';
import type { LoadedProjector } from './projector-file.js';

/** transformers before 4.52 (google/gemma-3-*-it) save the tower at the top; later ones under model. */
const PREFIXES = ['', 'model.'];
const PATCH = 'vision_tower.vision_model.embeddings.patch_embedding.weight';

/** mmproj name → module path under the prefix */
const NAMES: readonly [RegExp, (m: RegExpExecArray) => string][] = [
  [/^v\.patch_embd\.(weight|bias)$/, (m) => `vision_tower.vision_model.embeddings.patch_embedding.${m[1]}`],
  [/^v\.position_embd\.weight$/, () => 'vision_tower.vision_model.embeddings.position_embedding.weight'],
  [/^v\.post_ln\.(weight|bias)$/, (m) => `vision_tower.vision_model.post_layernorm.${m[1]}`],
  [/^v\.blk\.(\d+)\.ln1\.(weight|bias)$/, (m) => `vision_tower.vision_model.encoder.layers.${m[1]}.layer_norm1.${m[2]}`],
  [/^v\.blk\.(\d+)\.ln2\.(weight|bias)$/, (m) => `vision_tower.vision_model.encoder.layers.${m[1]}.layer_norm2.${m[2]}`],
  [/^v\.blk\.(\d+)\.attn_(q|k|v)\.(weight|bias)$/, (m) => `vision_tower.vision_model.encoder.layers.${m[1]}.self_attn.${m[2]}_proj.${m[3]}`],
  [/^v\.blk\.(\d+)\.attn_out\.(weight|bias)$/, (m) => `vision_tower.vision_model.encoder.layers.${m[1]}.self_attn.out_proj.${m[2]}`],
  [/^v\.blk\.(\d+)\.ffn_up\.(weight|bias)$/, (m) => `vision_tower.vision_model.encoder.layers.${m[1]}.mlp.fc1.${m[2]}`],
  [/^v\.blk\.(\d+)\.ffn_down\.(weight|bias)$/, (m) => `vision_tower.vision_model.encoder.layers.${m[1]}.mlp.fc2.${m[2]}`],
  [/^mm\.input_projection\.weight$/, () => 'multi_modal_projector.mm_input_projection_weight'],
  [/^mm\.soft_emb_norm\.weight$/, () => 'multi_modal_projector.mm_soft_emb_norm.weight'],
];

/** PIL's resample codes (preprocessor_config.json's resample) loom's resize runs */
const RESAMPLE: Readonly<Record<number, ResizeAlgo>> = { 1: 'lanczos', 2: 'bilinear', 3: 'bicubic' };

/** The folder's projector, or undefined when it has no vision tower. */
export function gemma3FolderProjector(dir: string, text: ModelConfig, inPlace?: InPlaceBytes): LoadedProjector | undefined {
  const tower = visionTower(dir, PREFIXES, PATCH, inPlace);
  if (!tower) return undefined;
  const { configPath, config, vision: v, model, prefix } = tower;
  // SiglipVisionConfig's defaults
  const num = (key: string, fallback: number): number => {
    const x = v[key] ?? fallback;
    if (typeof x !== 'number' || !(x > 0)) throw new ModelFormatError(configPath, `vision_config.${key} should be a positive number, got ${JSON.stringify(v[key])}`);
    return x;
  };
  const act = String(v['hidden_act'] ?? 'gelu_pytorch_tanh');
  if (!act.startsWith('gelu')) throw new ModelFormatError(configPath, `vision_config.hidden_act ${JSON.stringify(act)}: Gemma 3's SigLIP runs GELU`);
  if (num('num_channels', 3) !== 3) throw new ModelFormatError(configPath, 'vision_config.num_channels must be 3');
  const imageSize = num('image_size', 224);
  const patch = num('patch_size', 16);
  const pre = preprocessorConfig(dir);
  const prePath = join(dir, 'preprocessor_config.json');
  checkSize(prePath, pre['size'], imageSize);
  // the converter: (image_size / patch_size) / √image_seq_length, written when it is not 4
  const tokens = typeof pre['image_seq_length'] === 'number' ? pre['image_seq_length'] : 256;
  const scale = Math.floor(Math.floor(imageSize / patch) / Math.floor(Math.sqrt(tokens)));
  const metadata = new Map<string, GGUFValue>([
    ['general.architecture', 'clip'],
    ['clip.has_vision_encoder', true],
    ['clip.projector_type', 'gemma3'],
    ['clip.use_gelu', true],
    ['clip.vision.projection_dim', text.hiddenSize],
    ['clip.vision.image_size', imageSize],
    ['clip.vision.patch_size', patch],
    ['clip.vision.embedding_length', num('hidden_size', 768)],
    ['clip.vision.feed_forward_length', num('intermediate_size', 3072)],
    ['clip.vision.block_count', num('num_hidden_layers', 12)],
    ['clip.vision.attention.head_count', num('num_attention_heads', 12)],
    ['clip.vision.attention.layer_norm_epsilon', num('layer_norm_eps', 1e-6)],
    ['clip.vision.image_mean', preprocessorStats(dir, pre, 'image_mean')],
    ['clip.vision.image_std', preprocessorStats(dir, pre, 'image_std')],
    ...(scale > 0 && scale !== 4 ? [['clip.vision.projector.scale_factor', scale] as [string, GGUFValue]] : []),
  ]);

  const hfName = (name: string): string | undefined => {
    for (const [re, path] of NAMES) {
      const m = re.exec(name);
      if (m) return prefix + path(m);
    }
    return undefined;
  };
  const cache = new Map<string, WeightTensor>();
  const has = (name: string): boolean => hfName(name) !== undefined && model.has(hfName(name)!);
  const tensor = (name: string): WeightTensor => {
    const hit = cache.get(name);
    if (hit) return hit;
    const hf = hfName(name);
    if (!hf || !model.has(hf)) throw new ModelFormatError(dir, `missing tensor ${hf ?? name} (for the projector's ${name})`);
    const file = model.fileOf(hf)!;
    const entry = file.entry(hf)!;
    const raw: WeightTensor = { name, type: ggmlTypeOf(file.path, entry), dims: [...entry.shape].reverse(), data: file.read(hf, { cache: false }) };
    const t = name === 'mm.soft_emb_norm.weight' ? plusOne(raw)
      : name === 'mm.input_projection.weight' ? asF16(raw)
      : name.startsWith('v.patch_embd.') || name === 'v.position_embd.weight' ? asF32(raw)
      : raw;
    cache.set(name, t);
    return t;
  };
  const source: ClipSource = { path: dir, metadata, has, tensor, get: tensor };
  const projector = new Gemma3Projector(new ClipFile(source), folderOptions(prePath, pre));
  if (projector.outputSize !== text.hiddenSize) {
    throw new ModelFormatError(dir, `the vision tower's embeddings are ${projector.outputSize} wide but the text model's hidden size is ${text.hiddenSize}`);
  }
  return Object.assign(projector, { dispose: () => cache.clear() });
}

/** the preprocessor's size must be the encoder's square (its position embeddings are fixed to it) */
function checkSize(path: string, size: unknown, imageSize: number): void {
  if (size === undefined || size === null) return;
  const s = size as Record<string, unknown>;
  const sides = typeof size === 'number' ? [size, size] : [s['height'] ?? s['shortest_edge'], s['width'] ?? s['shortest_edge']];
  if (sides.some((x) => x !== imageSize)) throw new ModelFormatError(path, `size ${JSON.stringify(size)} is not the vision tower's ${imageSize}×${imageSize} image_size`);
}

/** resample and pan and scan from preprocessor_config.json (Gemma3ImageProcessor's defaults) */
function folderOptions(path: string, pre: Record<string, unknown>): Gemma3Options {
  const code = pre['resample'] ?? 2;
  const resample = typeof code === 'number' ? RESAMPLE[code] : undefined;
  if (!resample) throw new ModelFormatError(path, `resample ${JSON.stringify(code)} is not one loom runs (1 lanczos, 2 bilinear, 3 bicubic)`);
  if (pre['do_pan_and_scan'] !== true) return { resample };
  const positive = (key: string, fallback: number): number => {
    const x = pre[key] ?? fallback;
    if (typeof x !== 'number' || !(x > 0)) throw new ModelFormatError(path, `${key} should be a positive number, got ${JSON.stringify(pre[key])}`);
    return x;
  };
  const d = PAN_AND_SCAN_DEFAULTS;
  return {
    resample,
    panAndScan: {
      minCropSize: positive('pan_and_scan_min_crop_size', d.minCropSize),
      maxCrops: positive('pan_and_scan_max_num_crops', d.maxCrops),
      minRatio: positive('pan_and_scan_min_ratio_to_activate', d.minRatio),
    },
  };
}

const f32Tensor = (t: WeightTensor, values: Float32Array): WeightTensor => ({ name: t.name, type: GGMLType.F32, dims: t.dims, data: new Uint8Array(values.buffer) });

function asF32(t: WeightTensor): WeightTensor {
  return t.type === GGMLType.F32 ? t : f32Tensor(t, loadVector({ has: () => true, get: () => t }, t.name));
}

/** rounded to nearest even, as numpy's astype(float16) in the converter's writer */
function asF16(t: WeightTensor): WeightTensor {
  if (t.type === GGMLType.F16) return t;
  const bits = f32ArrayToF16(loadVector({ has: () => true, get: () => t }, t.name));
  return { name: t.name, type: GGMLType.F16, dims: t.dims, data: new Uint8Array(bits.buffer) };
}

/** Gemma3RMSNorm's 1 + w as the converter adds it: in F32, or in F16 for an F16 tensor (it adds in the tensor's own type then) */
function plusOne(t: WeightTensor): WeightTensor {
  const w = loadVector({ has: () => true, get: () => t }, t.name);
  for (let i = 0; i < w.length; i++) w[i] = t.type === GGMLType.F16 ? roundToF16(w[i]! + 1) : w[i]! + 1;
  return f32Tensor(t, w);
}
