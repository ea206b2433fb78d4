// A Hugging Face config.json's rope_scaling (or transformers' newer rope_parameters) resolved
// into the RoPE scaling llama.cpp would apply to the converted GGUF (see gguf-rope.ts).
import { ModelFormatError, UnsupportedModelError } from '../errors.js';
import type { ModelRopeScaling } from '../tensor/rope-scaling.js';
import { linearScaling, llama3FreqFactors, longropeAttnFactor, yarnScaling } from '../tensor/rope-scaling.js';

export interface HFRopeShape {
  readonly file: string;
  /** the whole config.json */
  readonly json: Record<string, unknown>;
  readonly headDim: number;
  readonly ropeDim: number;
  readonly ropeBase: number;
  readonly contextLength: number;
}

export function hfRopeScaling(s: HFRopeShape): ModelRopeScaling | undefined {
  const raw = s.json['rope_scaling'] ?? s.json['rope_parameters'];
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new ModelFormatError(s.file, '"rope_scaling" should be an object or null');
  const r = raw as Record<string, unknown>;
  const type = String(r['rope_type'] ?? r['type'] ?? 'default');
  const num = (key: string, fallback?: number): number => {
    const v = r[key] ?? (key === 'original_max_position_embeddings' ? s.json[key] : undefined);
    if (v === undefined || v === null) {
      if (fallback !== undefined) return fallback;
      throw new ModelFormatError(s.file, `rope_scaling ${type} needs "${key}"`);
    }
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) throw new ModelFormatError(s.file, `rope_scaling "${key}" should be a positive number`);
    return v;
  };
  const factors = (key: string): Float32Array => {
    const v = r[key];
    if (!Array.isArray(v) || v.length !== s.ropeDim / 2 || !v.every((x) => typeof x === 'number' && x > 0)) {
      throw new ModelFormatError(s.file, `rope_scaling "${key}" should be ${s.ropeDim / 2} positive numbers`);
    }
    return Float32Array.from(v as number[]);
  };
  switch (type) {
    case 'default':
      return undefined;
    case 'linear':
      return { type, origContext: s.contextLength, scaling: linearScaling(num('factor')) };
    case 'yarn': {
      const factor = num('factor');
      const origContext = num('original_max_position_embeddings', s.contextLength);
      // transformers' attention_factor scales cos/sin outright; the kernel adds 0.1·ln(factor) + 1 itself
      const given = r['attention_factor'];
      const attnFactor = typeof given === 'number' ? given / (1 + 0.1 * Math.log(factor)) : 1;
      const opts = { attnFactor, betaFast: num('beta_fast', 32), betaSlow: num('beta_slow', 1) };
      return { type, origContext, scaling: yarnScaling(factor, s.ropeDim, s.ropeBase, origContext, opts) };
    }
    case 'llama3': {
      const origContext = num('original_max_position_embeddings', 8192);
      const params = { factor: num('factor', 8), lowFreqFactor: num('low_freq_factor', 1), highFreqFactor: num('high_freq_factor', 4), origContext };
      // llama.cpp's converter builds rope_freqs over the whole head dim
      const freqFactors = llama3FreqFactors(s.headDim, s.ropeBase, params).subarray(0, s.ropeDim / 2);
      return { type, origContext, scaling: { ...linearScaling(1), freqFactors } };
    }
    case 'longrope':
    case 'su': {
      const origContext = num('original_max_position_embeddings');
      const given = r['attention_factor'];
      const attnFactor = typeof given === 'number' ? given : longropeAttnFactor(s.contextLength, origContext);
      const base = linearScaling(1, attnFactor);
      return { type: 'longrope', origContext, scaling: { ...base, freqFactors: factors('short_factor') }, long: { ...base, freqFactors: factors('long_factor') } };
    }
    default:
      throw new UnsupportedModelError(s.file, `RoPE scaling ${JSON.stringify(type)} is not supported (loom runs linear, yarn, llama3 and longrope)`);
  }
}
