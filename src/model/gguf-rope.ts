// RoPE scaling of a GGUF file, read as llama.cpp's loader and context do (llama-model.cpp
// hparams, llama-context.cpp cparams, llama_model::get_rope_factors).
import { UnsupportedModelError } from '../errors.js';
import type { MetadataReader } from './gguf-metadata.js';
import type { ModelRopeScaling, RopeScaling } from '../tensor/rope-scaling.js';
import { linearScaling, yarnScaling } from '../tensor/rope-scaling.js';
import type { ArchName, TensorSource } from './weights.js';
import { loadVector } from './arch/architecture.js';

export interface GGUFRopeShape {
  readonly arch: ArchName;
  readonly ropeDim: number;
  readonly ropeBase: number;
  readonly contextLength: number;
}

export function ggufRopeScaling(meta: MetadataReader, tensors: TensorSource, s: GGUFRopeShape): ModelRopeScaling | undefined {
  const key = (k: string): string => `${s.arch}.rope.scaling.${k}`;
  // llama.cpp: type defaults to "linear", factor 0 (= none); attn_factor multiplies cos/sin for every type
  const type = meta.optionalString(key('type')) ?? 'linear';
  const factor = meta.optionalNumber(key('factor')) ?? meta.optionalNumber(`${s.arch}.rope.scale_linear`) ?? 0;
  const attnFactor = meta.optionalNumber(key('attn_factor')) ?? 1;
  const origContext = meta.optionalNumber(key('original_context_length')) ?? s.contextLength;
  const scaled = factor !== 0 && factor !== 1;
  const factors = (name: string): Float32Array | undefined => {
    if (!tensors.has(name)) return undefined;
    const f = loadVector(tensors, name);
    if (f.length < s.ropeDim / 2) throw new UnsupportedModelError(meta.file, `${name} holds ${f.length} values, RoPE needs ${s.ropeDim / 2}`);
    return f;
  };
  let scaling: RopeScaling;
  switch (type) {
    case 'none':
    case 'linear':
    case 'longrope':
      scaling = type === 'linear' && scaled ? linearScaling(factor, attnFactor) : linearScaling(1, attnFactor);
      break;
    case 'yarn':
      scaling = scaled ? yarnScaling(factor, s.ropeDim, s.ropeBase, origContext, { attnFactor }) : linearScaling(1, attnFactor);
      break;
    default:
      throw new UnsupportedModelError(meta.file, `RoPE scaling "${type}" (${key('type')}) is not supported (loom runs none, linear, yarn, longrope and Llama 3 rope_freqs)`);
  }
  // phi3 always reads the longrope pair; llama reads it for longrope files, rope_freqs otherwise
  const longrope = s.arch === 'phi3' || (s.arch === 'llama' && type === 'longrope');
  if (longrope) {
    const short = factors('rope_factors_short.weight');
    const long = factors('rope_factors_long.weight');
    if (short || long) {
      return {
        type: 'longrope',
        origContext,
        scaling: short ? { ...scaling, freqFactors: short } : scaling,
        long: long ? { ...scaling, freqFactors: long } : scaling,
      };
    }
  } else if (s.arch === 'llama') {
    const freqs = factors('rope_freqs.weight');
    if (freqs) return { type: 'llama3', origContext, scaling: { ...scaling, freqFactors: freqs } };
  }
  if ((scaling.freqScale === 1 && scaling.extFactor === 0 && scaling.attnFactor === 1)) return undefined;
  return { type: scaling.extFactor !== 0 ? 'yarn' : 'linear', origContext, scaling };
}
