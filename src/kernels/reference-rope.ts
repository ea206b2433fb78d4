// RoPE in plain TypeScript (ggml_rope_ext and ggml_rope_multi): angles built in f32 exactly as
// ggml-cpu builds them (repeated multiplication, every step rounded to f32), rotations in f64.
import type { MropeMode, RopeSections } from './index.js';
import type { RopeStyle } from '../tensor/weight-tensor.js';
import type { RopeScaling } from '../tensor/rope-scaling.js';
import { NO_SCALING } from '../tensor/rope-scaling.js';

const f = Math.fround;

/** ggml's rope_yarn for one call's scaling: pair i's scaled cos and sin of theta (before its frequency factor) */
function yarnAngles(scaling: RopeScaling): (theta: number, i: number, cos: Float64Array, sin: Float64Array) => void {
  const { freqFactors } = scaling;
  const [freqScale, extFactor, attnFactor, low, high] = [scaling.freqScale, scaling.extFactor, scaling.attnFactor, ...scaling.corrDims].map(f) as [number, number, number, number, number];
  const yarnMscale = extFactor !== 0 ? f(attnFactor * f(1 + 0.1 * Math.log(1 / freqScale))) : attnFactor;
  return (theta, i, cos, sin) => {
    const extrap = freqFactors ? f(theta / freqFactors[i]!) : theta;
    let angle = f(freqScale * extrap);
    if (extFactor !== 0) {
      const y = f(f(i - low) / Math.max(0.001, f(high - low)));
      const mix = f(f(1 - Math.min(1, Math.max(0, y))) * extFactor);
      angle = f(f(angle * f(1 - mix)) + f(extrap * mix));
    }
    cos[i] = f(f(Math.cos(angle)) * yarnMscale);
    sin[i] = f(f(Math.sin(angle)) * yarnMscale);
  };
}

/** rotates pairs (a(i), b(i)), i < pairs, of every head of token t by cos[i], sin[i] */
function rotateToken(x: Float32Array, t: number, numHeads: number, headDim: number, pairs: number, neox: boolean, cos: Float64Array, sin: Float64Array): void {
  for (let h = 0; h < numHeads; h++) {
    const headBase = (t * numHeads + h) * headDim;
    for (let i = 0; i < pairs; i++) {
      const a = headBase + (neox ? i : 2 * i);
      const b = headBase + (neox ? i + pairs : 2 * i + 1);
      const x0 = x[a]!;
      const x1 = x[b]!;
      x[a] = x0 * cos[i]! - x1 * sin[i]!;
      x[b] = x0 * sin[i]! + x1 * cos[i]!;
    }
  }
}

export function rope(
  x: Float32Array,
  positions: Int32Array,
  numHeads: number,
  headDim: number,
  ropeDim: number,
  base: number,
  style: RopeStyle,
  scaling: RopeScaling = NO_SCALING,
): void {
  const half = ropeDim / 2;
  const angle = yarnAngles(scaling);
  const thetaScale = f(Math.pow(base, -2 / ropeDim));
  const cos = new Float64Array(half);
  const sin = new Float64Array(half);
  for (let t = 0; t < positions.length; t++) {
    // ggml builds the angles in f32 by repeated multiplication; doing the same keeps
    // long positions within f32 rounding of llama.cpp.
    let theta = f(positions[t]!);
    for (let i = 0; i < half; i++) {
      angle(theta, i, cos, sin);
      theta = f(theta * thetaScale);
    }
    rotateToken(x, t, numHeads, headDim, half, style === 'neox', cos, sin);
  }
}

/** The position component (0 t, 1 h, 2 w, 3 e) rotary pair `sector` reads (ggml_mrope_cache_init). */
export function mropeComponent(sector: number, s: RopeSections, mode: MropeMode): number {
  if (mode === 'imrope') {
    if (sector % 3 === 1 && sector < 3 * s[1]) return 1;
    if (sector % 3 === 2 && sector < 3 * s[2]) return 2;
    if (sector % 3 === 0 && sector < 3 * s[0]) return 0;
    return 3;
  }
  return sector < s[0] ? 0 : sector < s[0] + s[1] ? 1 : sector < s[0] + s[1] + s[2] ? 2 : 3;
}

export function ropeMulti(
  x: Float32Array,
  positions: Int32Array,
  numHeads: number,
  headDim: number,
  ropeDim: number,
  base: number,
  sections: RopeSections,
  mode: MropeMode,
  scaling: RopeScaling = NO_SCALING,
): void {
  if (positions.length % 4 !== 0) throw new RangeError('ropeMulti: positions must hold 4 per token');
  const n = positions.length / 4;
  const vision = mode === 'vision';
  const pairs = vision ? ropeDim : ropeDim / 2;
  const sectDims = sections[0] + sections[1] + sections[2] + sections[3];
  // the section each pair's own angles restart at (vision only): its first pair
  const starts = [0, sections[0], sections[0] + sections[1], sections[0] + sections[1] + sections[2]];
  const angle = yarnAngles(scaling);
  const thetaScale = f(Math.pow(base, -2 / ropeDim));
  const cos = new Float64Array(pairs);
  const sin = new Float64Array(pairs);
  const theta = new Float64Array(4);
  for (let t = 0; t < n; t++) {
    const p = [positions[t]!, positions[t + n]!, positions[t + 2 * n]!, positions[t + 3 * n]!];
    for (let c = 0; c < 4; c++) theta[c] = f(p[c]!);
    for (let i = 0; i < pairs; i++) {
      const sector = i % sectDims;
      if (vision) {
        const restart = starts.indexOf(sector);
        if (restart >= 0) theta[restart] = f(p[restart]!);
      }
      angle(theta[mropeComponent(sector, sections, mode)]!, i, cos, sin);
      for (let c = 0; c < 4; c++) theta[c] = f(theta[c]! * thetaScale);
    }
    rotateToken(x, t, numHeads, headDim, pairs, true, cos, sin);
  }
}
