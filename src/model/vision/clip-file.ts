// Reading an mmproj GGUF as llama.cpp's clip_model_loader does: the clip.vision.* keys, the
// v.* encoder tensors (clip-impl.h's TN_* names) and the checks that make a file loom cannot run
// a one-line refusal naming the file, never a wrong answer.
import { UnsupportedModelError } from '../../errors.js';
import { f32ArrayToF16 } from '../../tensor/half.js';
import type { WeightTensor } from '../../tensor/weight-tensor.js';
import { GGMLType, typeName, weightType } from '../../tensor/weight-types.js';
import { loadVector } from '../arch/architecture.js';
import type { GGUFFile } from '../gguf.js';
import { MetadataReader } from '../gguf-metadata.js';
import type { Linear, Norm, VitLayer, VitShape, VitWeights } from './vit.js';

export class ClipFile {
  readonly meta: MetadataReader;

  constructor(readonly gguf: GGUFFile) {
    this.meta = new MetadataReader(gguf.path, gguf.metadata);
  }

  get path(): string {
    return this.gguf.path;
  }

  refuse(problem: string): never {
    throw new UnsupportedModelError(this.path, problem);
  }

  u32(key: string, fallback?: number): number {
    const v = fallback === undefined ? this.meta.number(key) : this.meta.number(key, fallback);
    if (!Number.isInteger(v) || v < 0) this.refuse(`metadata key ${key} is ${v}, not a count`);
    return v;
  }

  /** the first n values of an f32 array key, as f32 (clip's float hparams) */
  f32s(key: string, n: number): Float32Array {
    const v = this.meta.numbers(key);
    if (!v || v.length < n) this.refuse(`metadata key ${key} needs at least ${n} numbers`);
    return Float32Array.from(v.slice(0, n));
  }

  has(name: string): boolean {
    return this.gguf.has(name);
  }

  /** Refuses a file holding any of these tensors: ones llama.cpp's graph would apply but the
   *  encoder reading this file does not (a wrong answer is worse than a refusal). */
  refuseAny(names: readonly string[], encoder: string): void {
    const found = names.find((n) => this.gguf.has(n));
    if (found !== undefined) this.refuse(`tensor ${found} is part of the encoder in llama.cpp, but loom's ${encoder} encoder has no place for it`);
  }

  tensor(name: string): WeightTensor {
    if (!this.gguf.has(name)) this.refuse(`no tensor ${name}`);
    return this.gguf.tensor(name);
  }

  /** an f32 copy of a vector (or any tensor read flat) of exactly n values when n is given */
  vector(name: string, n?: number): Float32Array {
    if (!this.gguf.has(name)) this.refuse(`no tensor ${name}`);
    const v = loadVector(this.gguf, name);
    if (n !== undefined && v.length !== n) this.refuse(`tensor ${name} has ${v.length} values, not ${n}`);
    return v;
  }

  optionalVector(name: string, n: number): Float32Array | undefined {
    return this.has(name) ? this.vector(name, n) : undefined;
  }

  /** `name.weight` as a matrix (of inF inputs and outF outputs when given) and its `name.bias`, if any */
  linear(name: string, inF?: number, outF?: number): Linear {
    const w = this.tensor(`${name}.weight`);
    if (w.dims.length !== 2 || (inF !== undefined && w.dims[0] !== inF) || (outF !== undefined && w.dims[1] !== outF)) {
      this.refuse(`tensor ${name}.weight has dims [${w.dims.join(', ')}], expected [${inF ?? 'n'}, ${outF ?? 'n'}]`);
    }
    const b = this.optionalVector(`${name}.bias`, w.dims[1]!);
    return b ? { w, b } : { w };
  }

  norm(name: string, n: number): Norm {
    const w = this.vector(`${name}.weight`, n);
    const b = this.optionalVector(`${name}.bias`, n);
    return b ? { w, b } : { w };
  }
}

/** Tensors clip.cpp's build_vit applies when a file has them and loadVit's layers do not: a
 *  family on loadVit refuses the ones it does not handle itself (refuseAny). */
export function vitExtras(layers: number): string[] {
  const perLayer = ['attn_q_norm.weight', 'attn_k_norm.weight', 'ls1.weight', 'ls2.weight', 'out_scale.weight', 'attn_post_norm.weight', 'ffn_post_norm.weight', 'ffn_gate.weight', 'ffn_gate_exps.weight'];
  const out = ['v.class_embd', 'v.norm_embd.weight', 'v.patch_embd.weight.1'];
  for (let l = 0; l < layers; l++) out.push(...perLayer.map((t) => `v.blk.${l}.${t}`));
  return out;
}

/** The encoder's shape and weights (clip.cpp's load_hparams and load_tensors for build_vit). */
export function loadVit(file: ClipFile): { shape: VitShape; weights: VitWeights } {
  const hidden = file.u32('clip.vision.embedding_length');
  const heads = file.u32('clip.vision.attention.head_count');
  const kvHeads = file.u32('clip.vision.attention.head_count_kv', heads);
  const headDim = file.u32('clip.vision.attention.head_dim', heads > 0 ? hidden / heads : 0);
  const ffn = file.u32('clip.vision.feed_forward_length');
  const layers = file.u32('clip.vision.block_count');
  const patchSize = file.u32('clip.vision.patch_size');
  const eps = file.meta.number('clip.vision.attention.layer_norm_epsilon', 1e-6);
  if (heads === 0 || !Number.isInteger(headDim) || headDim === 0) file.refuse(`${heads} attention heads do not divide the encoder width ${hidden}`);
  if (kvHeads !== heads) file.refuse(`the encoder has ${kvHeads} KV heads for ${heads} heads; loom's ViT runs plain multi-head attention`);
  // clip.cpp: use_gelu → GELU, use_silu → SiLU, neither → quick GELU
  if (!file.meta.bool('clip.use_gelu', false)) {
    file.refuse(`the encoder's MLP uses ${file.meta.bool('clip.use_silu', false) ? 'SiLU' : 'quick GELU'}; loom's ViT runs GELU (clip.use_gelu)`);
  }
  const shape: VitShape = { hidden, heads, headDim, patchSize, eps };
  const width = heads * headDim;

  const patchWeight = file.tensor('v.patch_embd.weight');
  const patchIn = 3 * patchSize * patchSize;
  const [kw, kh, ch, out] = patchWeight.dims;
  if (kw !== patchSize || kh !== patchSize || ch !== 3 || out !== hidden) {
    file.refuse(`tensor v.patch_embd.weight has dims [${patchWeight.dims.join(', ')}], expected [${patchSize}, ${patchSize}, 3, ${hidden}]`);
  }
  const patchBias = file.optionalVector('v.patch_embd.bias', hidden);
  const patch: Linear = { w: patchMatrix(file, patchIn, hidden), ...(patchBias ? { b: patchBias } : {}) };

  const vitLayers: VitLayer[] = [];
  for (let l = 0; l < layers; l++) {
    const p = `v.blk.${l}`;
    let up = file.linear(`${p}.ffn_up`);
    let down = file.linear(`${p}.ffn_down`);
    // old conversions named fc1 ffn_down (clip.cpp's is_ffn_swapped): the one reading the
    // encoder's width is the up projection
    if (down.w.dims[0] === hidden) [up, down] = [down, up];
    if (up.w.dims[0] !== hidden || up.w.dims[1] !== ffn || down.w.dims[0] !== ffn || down.w.dims[1] !== hidden) {
      file.refuse(`the MLP of layer ${l} is [${up.w.dims.join(', ')}] then [${down.w.dims.join(', ')}], not [${hidden}, ${ffn}] then [${ffn}, ${hidden}]`);
    }
    const layer: VitLayer = file.has(`${p}.attn_qkv.weight`)
      ? { ln1: file.norm(`${p}.ln1`, hidden), qkv: file.linear(`${p}.attn_qkv`, hidden, 3 * width), o: file.linear(`${p}.attn_out`, width, hidden), ln2: file.norm(`${p}.ln2`, hidden), up, down }
      : {
          ln1: file.norm(`${p}.ln1`, hidden),
          q: file.linear(`${p}.attn_q`, hidden, width),
          k: file.linear(`${p}.attn_k`, hidden, width),
          v: file.linear(`${p}.attn_v`, hidden, width),
          o: file.linear(`${p}.attn_out`, width, hidden),
          ln2: file.norm(`${p}.ln2`, hidden),
          up,
          down,
        };
    for (const l2 of [layer.q, layer.k, layer.v, layer.qkv, layer.o, layer.up, layer.down]) if (l2) assertMatrixType(file, l2.w);
    vitLayers.push(layer);
  }
  const position = file.has('v.position_embd.weight') ? file.vector('v.position_embd.weight') : undefined;
  if (position && position.length % hidden !== 0) file.refuse(`tensor v.position_embd.weight is not rows of ${hidden}`);
  const weights: VitWeights = {
    patch,
    ...(position ? { position } : {}),
    ...(file.has('v.pre_ln.weight') ? { preLn: file.norm('v.pre_ln', hidden) } : {}),
    layers: vitLayers,
    ...(file.has('v.post_ln.weight') ? { postLn: file.norm('v.post_ln', hidden) } : {}),
  };
  return { shape, weights };
}

/**
 * The patch conv as the matmul ggml_conv_2d makes of it: im2col writes the pixels in f16
 * (f32 for a BF16 kernel) and the kernel is the product's second operand, so it is rounded to
 * that type too: an F16 matrix (F32 for BF16), whatever the file's type. [inF, hidden].
 */
export function patchMatrix(file: ClipFile, inF: number, hidden: number): WeightTensor {
  const t = file.tensor('v.patch_embd.weight');
  const values = file.vector('v.patch_embd.weight', inF * hidden);
  if (t.type === GGMLType.BF16) return { name: t.name, type: GGMLType.F32, dims: [inF, hidden], data: new Uint8Array(values.buffer) };
  const bits = f32ArrayToF16(values);
  return { name: t.name, type: GGMLType.F16, dims: [inF, hidden], data: new Uint8Array(bits.buffer) };
}

function assertMatrixType(file: ClipFile, w: WeightTensor): void {
  const t = weightType(w.type);
  if (!t?.compute) file.refuse(`tensor ${w.name} has type ${typeName(w.type)}, which loom does not compute with`);
  if (w.dims[0]! % t.blockSize !== 0) file.refuse(`tensor ${w.name} rows of ${w.dims[0]} are not whole ${typeName(w.type)} blocks`);
}

const ELEMENT_BYTES: Partial<Record<GGMLType, number>> = { [GGMLType.F32]: 4, [GGMLType.F16]: 2, [GGMLType.BF16]: 2 };

/**
 * A matrix stored transposed (Gemma's mm.input_projection: dims [out, in], used as x · W, which
 * clip.cpp runs as ggml_cont(ggml_transpose(w))), as [in, out] rows in the same type: an F32,
 * F16 or BF16 tensor only, as ggml cannot transpose a quantized one either.
 */
export function transposedMatrix(file: ClipFile, name: string, inF: number): WeightTensor {
  const t = file.tensor(name);
  const size = ELEMENT_BYTES[t.type];
  if (size === undefined) file.refuse(`tensor ${name} has type ${typeName(t.type)}; loom (and llama.cpp) read it in F32, F16 or BF16`);
  if (t.dims.length !== 2 || t.dims[1] !== inF) file.refuse(`tensor ${name} has dims [${t.dims.join(', ')}], expected [n, ${inF}]`);
  const outF = t.dims[0]!;
  const data = new Uint8Array(t.data.length);
  for (let i = 0; i < inF; i++) {
    for (let o = 0; o < outF; o++) {
      const src = (i * outF + o) * size, dst = (o * inF + i) * size;
      for (let b = 0; b < size; b++) data[dst + b] = t.data[src + b]!;
    }
  }
  return { name, type: t.type, dims: [inF, outF], data };
}
