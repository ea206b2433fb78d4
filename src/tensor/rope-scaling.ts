// RoPE scaling as llama.cpp applies it (ggml_rope_ext's parameters, llama-context.cpp's
// cparams): linear (positions squeezed by 1/factor), YaRN (interpolation ramped against
// extrapolation per dimension, cos/sin scaled by an attention factor), Llama 3 (per-pair
// frequency divisors, the `rope_freqs` tensor) and Phi-3's longrope (short/long divisors
// chosen by the served context length, plus an attention factor).

/** What the rope kernels apply on top of the plain angles pos·base^(−2i/ropeDim). */
export interface RopeScaling {
  /** multiplies every angle: 1 / the linear or YaRN factor (1 = unscaled) */
  readonly freqScale: number;
  /** YaRN: how far each dim ramps from the interpolated towards the extrapolated angle (0 = off) */
  readonly extFactor: number;
  /** multiplies cos and sin (ggml's attn_factor) */
  readonly attnFactor: number;
  /** YaRN correction dims [low, high] (ggml_rope_yarn_corr_dims) */
  readonly corrDims: readonly [number, number];
  /** [ropeDim / 2] divisors of each pair's angle (rope_freqs / longrope factors); absent = 1 */
  readonly freqFactors?: Float32Array;
}

export type RopeScalingType = 'linear' | 'yarn' | 'llama3' | 'longrope';

/** A model's RoPE scaling as its files declare it. */
export interface ModelRopeScaling {
  readonly type: RopeScalingType;
  /** the training context the scaling extends (rope.scaling.original_context_length) */
  readonly origContext: number;
  /** what the kernels apply; for longrope, with the short factors */
  readonly scaling: RopeScaling;
  /** longrope: the same with the long factors, used when the served context exceeds origContext */
  readonly long?: RopeScaling;
}

/** ggml_rope_yarn_corr_dims: the dims where rotation at the original context passes beta_fast/beta_slow turns. */
export function yarnCorrDims(ropeDim: number, origContext: number, base: number, betaFast: number, betaSlow: number): [number, number] {
  const corrDim = (nRot: number): number => Math.fround((ropeDim * Math.log(origContext / (nRot * 2 * Math.PI))) / (2 * Math.log(base)));
  const start = Math.floor(corrDim(betaFast));
  const end = Math.ceil(corrDim(betaSlow));
  return [Math.max(0, start), Math.min(ropeDim - 1, end)];
}

export const NO_SCALING: RopeScaling = { freqScale: 1, extFactor: 0, attnFactor: 1, corrDims: [0, 0] };

/** linear: angles × 1/factor (llama.cpp: rope.scaling.type linear, rope.scaling.factor). */
export function linearScaling(factor: number, attnFactor = 1): RopeScaling {
  return { ...NO_SCALING, freqScale: 1 / factor, attnFactor };
}

/**
 * YaRN as llama.cpp runs it for llama-like archs: ext_factor 1, beta_fast 32 / beta_slow 1
 * unless given; its attention factor 0.1·ln(factor) + 1 is applied by the kernel itself
 * (ggml multiplies mscale by it when ext_factor ≠ 0), so attnFactor holds only the file's
 * extra rope.scaling.attn_factor.
 */
export function yarnScaling(
  factor: number,
  ropeDim: number,
  base: number,
  origContext: number,
  opts: { attnFactor?: number; betaFast?: number; betaSlow?: number; extFactor?: number } = {},
): RopeScaling {
  return {
    freqScale: 1 / factor,
    extFactor: opts.extFactor ?? 1,
    attnFactor: opts.attnFactor ?? 1,
    corrDims: yarnCorrDims(ropeDim, origContext, base, opts.betaFast ?? 32, opts.betaSlow ?? 1),
  };
}

export interface Llama3Params {
  readonly factor: number;
  readonly lowFreqFactor: number;
  readonly highFreqFactor: number;
  readonly origContext: number;
}

/** Llama 3.1's per-pair divisors, computed as llama.cpp's converter writes `rope_freqs` (f32 torch). */
export function llama3FreqFactors(ropeDim: number, base: number, p: Llama3Params): Float32Array {
  const out = new Float32Array(ropeDim / 2);
  const lowWavelen = p.origContext / p.lowFreqFactor;
  const highWavelen = p.origContext / p.highFreqFactor;
  for (let i = 0; i < out.length; i++) {
    const freq = Math.fround(1 / Math.fround(Math.pow(base, Math.fround((2 * i) / ropeDim))));
    const wavelen = Math.fround((2 * Math.PI) / freq);
    if (wavelen < highWavelen) out[i] = 1;
    else if (wavelen > lowWavelen) out[i] = p.factor;
    else {
      const smooth = (p.origContext / wavelen - p.lowFreqFactor) / (p.highFreqFactor - p.lowFreqFactor);
      out[i] = 1 / ((1 - smooth) / p.factor + smooth);
    }
  }
  return out;
}

/** Phi-3's longrope attention factor, as llama.cpp's converter computes it into rope.scaling.attn_factor. */
export function longropeAttnFactor(contextLength: number, origContext: number): number {
  const scale = contextLength / origContext;
  return scale > 1 ? Math.sqrt(1 + Math.log(scale) / Math.log(origContext)) : 1;
}

/** The scaling to run at a served per-sequence context (llama.cpp picks longrope's long factors past origContext). */
export function ropeScalingAt(model: ModelRopeScaling | undefined, contextLength: number): RopeScaling | undefined {
  if (!model) return undefined;
  return model.long && contextLength > model.origContext ? model.long : model.scaling;
}
