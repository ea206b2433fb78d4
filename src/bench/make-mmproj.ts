// `loom bench make-mmproj`: a random-weight vision projector (llama.cpp's mmproj GGUF) of a real
// model's shape, for the vision benchmark: the keys and tensor names llama.cpp's converter
// writes (conversion/gemma.py Gemma3VisionModel, conversion/qwen3vl.py Qwen3VLVisionModel),
// matrices in the requested type, norms, biases and position embeddings F32. Seeded like
// make-model: the same shape, type and seed give the same bytes.
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Rng } from '../engine/rng.js';
import { GGMLType } from '../tensor/weight-types.js';
import { entry as kv, writeGGUFStream } from './gguf-stream.js';
import type { StreamEntry, StreamTensor } from './gguf-stream.js';
import { gaussian, quantizedRows } from './gaussian-weights.js';
import type { BenchShapeName } from './bench-shapes.js';

export interface MmprojShape {
  readonly name: string;
  /** llama.cpp's clip.projector_type */
  readonly projector: 'gemma3' | 'qwen3vl_merger';
  /** the text model shape (make-model) whose hidden size the projector writes */
  readonly text: BenchShapeName;
  readonly textHidden: number;
  readonly hidden: number;
  readonly layers: number;
  readonly heads: number;
  readonly ffn: number;
  readonly patch: number;
  /** the square image size the position embeddings are learned for */
  readonly imageSize: number;
  readonly mean: readonly number[];
  readonly std: readonly number[];
  readonly eps: number;
  /** Qwen: 2×2 patches merge into one token */
  readonly spatialMerge?: number;
}

export const MMPROJ_SHAPES = {
  // Gemma 3 4B's SigLIP-so400m (patch 14 at 896: 4096 patches), pooled 4×4 to 256 tokens
  'gemma3-4b': {
    name: 'Gemma-3-4B vision', projector: 'gemma3', text: 'gemma3-4b', textHidden: 2560, hidden: 1152, layers: 27, heads: 16, ffn: 4304,
    patch: 14, imageSize: 896, mean: [0.5, 0.5, 0.5], std: [0.5, 0.5, 0.5], eps: 1e-6,
  },
  // Qwen3.5-2B's vision transformer (depth 24, width 1024, patch 16, 48×48 learned positions), 2×2 merge
  'qwen3.5-2b': {
    name: 'Qwen3.5-2B vision', projector: 'qwen3vl_merger', text: 'qwen3.5-2b', textHidden: 2048, hidden: 1024, layers: 24, heads: 16, ffn: 4096,
    patch: 16, imageSize: 768, mean: [0.5, 0.5, 0.5], std: [0.5, 0.5, 0.5], eps: 1e-6, spatialMerge: 2,
  },
} as const satisfies Record<string, MmprojShape>;

export type MmprojShapeName = keyof typeof MMPROJ_SHAPES;
export const MMPROJ_TYPES = ['f16', 'q8_0'] as const;
export type MmprojType = (typeof MMPROJ_TYPES)[number];

export interface MakeMmprojOptions {
  readonly shape: MmprojShapeName;
  readonly type: MmprojType;
  readonly seed: number;
}

export function mmprojPath(dir: string, o: MakeMmprojOptions): string {
  return join(dir, `mmproj-${o.shape}-${o.type}-s${o.seed}.gguf`);
}

/** The cached file, written first (to a temporary name, then renamed) when it is not there. */
export function ensureMmproj(dir: string, o: MakeMmprojOptions, log?: (line: string) => void): { path: string; made: boolean } {
  const path = mmprojPath(dir, o);
  if (existsSync(path)) return { path, made: false };
  mkdirSync(dir, { recursive: true });
  const tmp = `${path}.partial`;
  rmSync(tmp, { force: true });
  const s: MmprojShape = MMPROJ_SHAPES[o.shape];
  log?.(`make-mmproj: writing a ${s.name}-shaped ${o.type} projector, seed ${o.seed} …`);
  const { metadata, tensors } = mmprojContents(o);
  writeGGUFStream(tmp, metadata, tensors);
  renameSync(tmp, path);
  return { path, made: true };
}

/** The projector's keys and tensors (each tensor's bytes made only when asked for). */
export function mmprojContents(o: MakeMmprojOptions): { metadata: StreamEntry[]; tensors: StreamTensor[] } {
  const s: MmprojShape = MMPROJ_SHAPES[o.shape];
  return { metadata: mmprojMetadata(s), tensors: mmprojTensors(s, o) };
}

function mmprojMetadata(s: MmprojShape): StreamEntry[] {
  return [
    kv.str('general.architecture', 'clip'),
    kv.str('general.name', `${s.name} (random weights)`),
    kv.str('clip.projector_type', s.projector),
    kv.bool('clip.has_vision_encoder', true),
    kv.bool('clip.use_gelu', true),
    kv.u32('clip.vision.image_size', s.imageSize),
    kv.u32('clip.vision.patch_size', s.patch),
    kv.u32('clip.vision.embedding_length', s.hidden),
    kv.u32('clip.vision.feed_forward_length', s.ffn),
    kv.u32('clip.vision.projection_dim', s.textHidden),
    kv.u32('clip.vision.block_count', s.layers),
    kv.u32('clip.vision.attention.head_count', s.heads),
    kv.f32('clip.vision.attention.layer_norm_epsilon', s.eps),
    kv.f32s('clip.vision.image_mean', s.mean),
    kv.f32s('clip.vision.image_std', s.std),
    ...(s.spatialMerge ? [kv.u32('clip.vision.spatial_merge_size', s.spatialMerge)] : []),
  ];
}

function mmprojTensors(s: MmprojShape, o: MakeMmprojOptions): StreamTensor[] {
  const out: StreamTensor[] = [];
  const seedOf = (): number => (o.seed * 7919 + out.length + 1) >>> 0;
  const matrixType = o.type === 'q8_0' ? GGMLType.Q8_0 : GGMLType.F16;
  const matrix = (name: string, inF: number, outF: number, type = matrixType): void => {
    const seed = seedOf();
    out.push({ name, type, dims: [inF, outF], produce: () => quantizedRows(type, inF, outF, 1 / Math.sqrt(inF), seed) });
  };
  const f32 = (name: string, dims: readonly number[], std: number, mean = 0): void => {
    const seed = seedOf();
    const n = dims.reduce((a, b) => a * b, 1);
    out.push({ name, type: GGMLType.F32, dims, produce: () => new Uint8Array(gaussian(n, std, mean, new Rng(seed)).buffer) });
  };
  const d = s.hidden;
  const positions = (s.imageSize / s.patch) ** 2;
  // conv kernels as ggml keeps them: [kw, kh, channels, out], F16 (the converter forces conv weights to F16)
  const patch = (name: string): void => {
    const seed = seedOf();
    const inF = s.patch * s.patch * 3;
    out.push({ name, type: GGMLType.F16, dims: [s.patch, s.patch, 3, d], produce: () => quantizedRows(GGMLType.F16, inF, d, 1 / Math.sqrt(inF), seed) });
  };
  patch('v.patch_embd.weight');
  if (s.projector === 'qwen3vl_merger') patch('v.patch_embd.weight.1');
  f32('v.patch_embd.bias', [d], 0.02);
  f32('v.position_embd.weight', [d, positions], 0.02);
  for (let i = 0; i < s.layers; i++) {
    const p = `v.blk.${i}.`;
    f32(`${p}ln1.weight`, [d], 0.1, 1);
    f32(`${p}ln1.bias`, [d], 0.02);
    if (s.projector === 'qwen3vl_merger') {
      matrix(`${p}attn_qkv.weight`, d, 3 * d);
      f32(`${p}attn_qkv.bias`, [3 * d], 0.02);
    } else {
      for (const m of ['attn_q', 'attn_k', 'attn_v']) {
        matrix(`${p}${m}.weight`, d, d);
        f32(`${p}${m}.bias`, [d], 0.02);
      }
    }
    matrix(`${p}attn_out.weight`, d, d);
    f32(`${p}attn_out.bias`, [d], 0.02);
    f32(`${p}ln2.weight`, [d], 0.1, 1);
    f32(`${p}ln2.bias`, [d], 0.02);
    matrix(`${p}ffn_up.weight`, d, s.ffn);
    f32(`${p}ffn_up.bias`, [s.ffn], 0.02);
    matrix(`${p}ffn_down.weight`, s.ffn, d);
    f32(`${p}ffn_down.bias`, [d], 0.02);
  }
  f32('v.post_ln.weight', [d], 0.1, 1);
  f32('v.post_ln.bias', [d], 0.02);
  if (s.projector === 'gemma3') {
    f32('mm.soft_emb_norm.weight', [d], 0.1, 1);
    // a parameter [vision, text] in transformers, so ggml's dims are [text, vision]; the converter keeps it F16
    matrix('mm.input_projection.weight', s.textHidden, d, GGMLType.F16);
  } else {
    const merged = d * s.spatialMerge! ** 2;
    matrix('mm.0.weight', merged, merged);
    f32('mm.0.bias', [merged], 0.02);
    matrix('mm.2.weight', merged, s.textHidden);
    f32('mm.2.bias', [s.textHidden], 0.02);
  }
  return out;
}
