// Every export of the native addon checks what crosses the N-API boundary: a call with a
// wrong type, a buffer too short for the sizes given (products that would overflow
// included), or an index outside its buffer throws TypeError/RangeError and never reaches
// the kernels. Each export's valid call runs first, so every failure below is the check's.
// Under `npm run test:sanitize` this runs against the ASan+UBSan build.
import assert from 'node:assert/strict';
import { openSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { nativeSkip } from '../fixtures/native.js';
import { PROJECT_ROOT } from '../fixtures/index.js';

type Fn = (...args: unknown[]) => unknown;
const skip = nativeSkip();
const addon = skip ? undefined : (createRequire(import.meta.url)(process.env.LOOM_NATIVE_ADDON ?? join(PROJECT_ROOT, 'build', 'Release', 'loom_native.node')) as Record<string, Fn>);

const f32 = (n: number) => new Float32Array(n);
const i32 = (...v: number[]) => Int32Array.from(v);
const BIG = 2 ** 30; // sizes whose products pass 2^53 or wrap int64
const Q8_0 = 8;
const Q4_0_R16 = 128;
const Q8_0_R16 = 129;

interface Case {
  /** a call that must succeed */
  ok: unknown[];
  /** calls that must throw, with the error class and a message pattern */
  bad: [unknown[], typeof TypeError | typeof RangeError, RegExp][];
}

// a file to map (package.json: a few KB), two mappings of it: one viewed, one unmapped
const fd = skip ? -1 : openSync(join(PROJECT_ROOT, 'package.json'), 'r');
const [viewed, unmapped] = skip ? [] : [addon!.mapFile!(fd, 64), addon!.mapFile!(fd, 64)];

// f16 cache of 2 blocks × 4 tokens × 1 head × 8 dims
const cache = () => [new Uint16Array(64), new Uint16Array(64), 'f16', 2, 4, 1, 8] as unknown[];

/** moeExperts' valid call (2 tokens, k 1, 2 experts, hidden 4, ffn 4, SiLU, F32) with arguments replaced */
function moeCall(replace: Record<number, unknown>): unknown[] {
  const F32 = 0;
  const expertBytes = 4 * 4 * 4; // 4 rows of 4 f32 values
  const args: unknown[] = [f32(8), f32(8), 2, 1, i32(0, 1), f32(2), 2, 4, 4, 0, 0, 0, new Uint8Array(2 * expertBytes), F32, new Uint8Array(2 * expertBytes), F32, new Uint8Array(2 * expertBytes), F32, null, null, null, null];
  for (const [i, v] of Object.entries(replace)) args[Number(i)] = v;
  return args;
}

const CASES: Record<string, Case> = {
  setThreads: { ok: [2], bad: [[['2'], TypeError, /threads must be a number/], [[0], RangeError, /threads must be an integer in \[1/], [[1.5], RangeError, /integer/]] },
  probeFmaPeak: { ok: [0.001, 32], bad: [[[0], RangeError, /seconds/], [[0.001, 64], RangeError, /bits/], [[NaN], RangeError, /finite/]] },
  probeInt8Peak: { ok: [0.001], bad: [[[0], RangeError, /seconds/], [[61], RangeError, /seconds/], [[NaN], RangeError, /finite/]] },
  probeReadBandwidth: { ok: [1 << 16, 0.001], bad: [[[1024, 0.001], RangeError, /bytes/], [[1 << 16, -1], RangeError, /seconds/]] },
  largeBuffer: { ok: [1 << 20, true], bad: [[['1'], TypeError, /bytes must be a number/], [[-1], RangeError, /bytes must be an integer/], [[2 ** 50], RangeError, /bytes must be an integer/], [[1 << 20, 1], TypeError, /populate must be a boolean/]] },
  rmsNorm: {
    ok: [f32(16), f32(16), f32(8), 2, 8, 1e-5],
    bad: [
      [[f32(16), f32(8), f32(8), 2, 8, 1e-5], RangeError, /x holds 8 elements, needs 16/],
      [[f32(8), f32(16), f32(8), 2, 8, 1e-5], RangeError, /out holds/],
      [[f32(16), f32(16), f32(4), 2, 8, 1e-5], RangeError, /weight holds/],
      [[f32(16), new Float64Array(16), f32(8), 2, 8, 1e-5], TypeError, /x must be a Float32Array/],
      [[f32(16), f32(16), f32(8), 2, 0, 1e-5], RangeError, /dim/],
      [[f32(16), f32(16), f32(8), 2, 8, Infinity], RangeError, /eps must be finite/],
    ],
  },
  layerNorm: {
    ok: [f32(16), f32(16), f32(8), f32(8), 2, 8, 1e-5],
    bad: [
      [[f32(16), f32(16), f32(8), f32(7), 2, 8, 1e-5], RangeError, /bias holds/],
      [[f32(16), f32(16), f32(8), null, 2, 8, 1e-5], TypeError, /bias must be/],
    ],
  },
  rope: {
    ok: [f32(16), i32(0, 1), 1, 8, 8, 10000, false],
    bad: [
      [[f32(15), i32(0, 1), 1, 8, 8, 10000, false], RangeError, /x holds/],
      [[f32(16), i32(0, 1), 1, 8, 9, 10000, false], RangeError, /ropeDim/],
      [[f32(16), i32(0, 1), 1, 8, 6, -1, false], RangeError, /base/],
      [[f32(16), i32(0, 1), 1, 8, 8, 10000, 0], TypeError, /neox must be a boolean/],
      [[f32(16), i32(0, 1), BIG, BIG, 8, 10000, false], RangeError, /too large|holds/],
      [[f32(16), i32(0, 1), 1, 8, 8, 10000, false, new Float64Array(4)], RangeError, /scaling holds/],
      [[f32(16), i32(0, 1), 1, 8, 8, 10000, false, new Float64Array([0, 0, 1, 0, 0])], RangeError, /freqScale must be > 0/],
      [[f32(16), i32(0, 1), 1, 8, 8, 10000, false, new Float64Array([1, 0, 1, 0, 0]), f32(3)], RangeError, /freqFactors holds/],
    ],
  },
  ropeMulti: {
    ok: [f32(16), i32(0, 1, 0, 1, 0, 1, 0, 1), 1, 8, 8, 10000, i32(2, 1, 1, 0), 2],
    bad: [
      [[f32(15), i32(0, 1, 0, 1, 0, 1, 0, 1), 1, 8, 8, 10000, i32(2, 1, 1, 0), 2], RangeError, /x holds/],
      [[f32(16), i32(0, 1, 0, 1, 0, 1, 0), 1, 8, 8, 10000, i32(2, 1, 1, 0), 2], RangeError, /4 per token/],
      [[f32(16), i32(0, 1, 0, 1, 0, 1, 0, 1), 1, 8, 7, 10000, i32(2, 1, 1, 0), 2], RangeError, /ropeDim must be even/],
      [[f32(16), i32(0, 1, 0, 1, 0, 1, 0, 1), 1, 8, 8, 10000, i32(2, 1, 1, 0), 3], RangeError, /ropeDim/],
      [[f32(16), i32(0, 1, 0, 1, 0, 1, 0, 1), 1, 8, 8, 10000, i32(2, 1, 1), 2], RangeError, /sections holds/],
      [[f32(16), i32(0, 1, 0, 1, 0, 1, 0, 1), 1, 8, 8, 10000, i32(2, -1, 1, 0), 2], RangeError, /sections must be >= 0/],
      [[f32(16), i32(0, 1, 0, 1, 0, 1, 0, 1), 1, 8, 8, 10000, i32(0, 0, 0, 0), 2], RangeError, /sum/],
      [[f32(16), i32(0, 1, 0, 1, 0, 1, 0, 1), 1, 8, 8, 10000, i32(2, 1, 1, 0), 4], RangeError, /mode/],
      [[f32(16), i32(0, 1, 0, 1, 0, 1, 0, 1), 1, 8, 8, -1, i32(2, 1, 1, 0), 2], RangeError, /base/],
      [[f32(16), i32(0, 1, 0, 1, 0, 1, 0, 1), BIG, BIG, 8, 10000, i32(2, 1, 1, 0), 2], RangeError, /too large|holds/],
      [[f32(16), i32(0, 1, 0, 1, 0, 1, 0, 1), 1, 8, 8, 10000, i32(2, 1, 1, 0), 2, new Float64Array([1, 0, 1, 0, 0]), f32(3)], RangeError, /freqFactors holds/],
    ],
  },
  siluMul: { ok: [f32(4), f32(4), f32(4), 4], bad: [[[f32(4), f32(3), f32(4), 4], RangeError, /gate holds/], [[f32(4), f32(4), f32(4), -1], RangeError, /n must be/]] },
  gelu: { ok: [f32(4), f32(4), 4], bad: [[[f32(4), [0, 0, 0, 0], 4], TypeError, /x must be a Float32Array/], [[f32(4), f32(4), 5], RangeError, /holds/]] },
  geluMul: { ok: [f32(4), f32(4), f32(4), 4], bad: [[[f32(4), f32(4), f32(3), 4], RangeError, /up holds/], [[f32(4), f32(4), f32(4), -1], RangeError, /n must be/]] },
  softcap: { ok: [f32(4), 4, 30], bad: [[[f32(4), 5, 30], RangeError, /x holds/], [[f32(4), 4, 0], RangeError, /cap must be > 0/], [[f32(4), 4, NaN], RangeError, /finite|cap/]] },
  applyTokenMask: { ok: [f32(33), i32(-1, 1)], bad: [[[f32(33), i32(-1)], RangeError, /mask holds/], [[f32(33), new Uint32Array(2)], TypeError, /mask must be/]] },
  add: { ok: [f32(4), f32(4), f32(4), 4], bad: [[[f32(4), f32(4), f32(2), 4], RangeError, /b holds/]] },
  addBias: { ok: [f32(8), f32(4), 2], bad: [[[f32(7), f32(4), 2], RangeError, /x holds/], [[f32(8), f32(4), BIG * BIG * 4], RangeError, /rows must be an integer/]] },
  softmax: { ok: [f32(8), 2, 4], bad: [[[f32(8), 3, 4], RangeError, /x holds/], [[f32(8), BIG, BIG], RangeError, /x is too large/]] },
  argmax: { ok: [f32(3)], bad: [[[f32(0)], RangeError, /row is empty/], [[new Int32Array(3)], TypeError, /row must be/]] },
  expWeights: {
    ok: [new Float64Array(2), f32(4), i32(0, 3), 2, 0],
    bad: [
      [[new Float64Array(2), f32(4), i32(0, 4), 2, 0], RangeError, /idx holds an index outside row/],
      [[new Float64Array(2), f32(4), i32(-1, 0), 2, 0], RangeError, /outside row/],
      [[new Float64Array(1), f32(4), null, 2, 0], RangeError, /out holds/],
      [[new Float64Array(8), f32(4), null, 8, 0], RangeError, /row holds/],
    ],
  },
  sampleCandidates: { ok: [f32(4), 1, -Infinity, new Int32Array(4)], bad: [[[f32(4), 1, -Infinity, new Int32Array(3)], RangeError, /idx holds/], [[f32(4), 1, '0', new Int32Array(4)], TypeError, /logMinP/]] },
  drawIndex: { ok: [new Float64Array([0.5, 0.5]), 2, 0.7], bad: [[[new Float64Array(1), 2, 0.5], RangeError, /weights holds/], [[new Float64Array(2), 0, 0.5], RangeError, /n must be/]] },
  writeKv: {
    ok: [...cache(), f32(16), f32(16), i32(0, 7)],
    bad: [
      [[...cache(), f32(16), f32(16), i32(0, 8)], RangeError, /KV slot 8 outside the cache \(8 slots\)/],
      [[...cache(), f32(16), f32(16), i32(-1)], RangeError, /KV slot -1/],
      [[...cache(), f32(15), f32(16), i32(0, 1)], RangeError, /k holds/],
      [[new Float32Array(64), new Float32Array(64), 'f16', 2, 4, 1, 8, f32(8), f32(8), i32(0)], TypeError, /cache k \(f16\) must be a Uint16Array/],
      [[new Uint16Array(64), new Uint16Array(64), 'f16', BIG, BIG, BIG, BIG, f32(8), f32(8), i32(0)], RangeError, /the KV cache is too large/],
      [[new Uint16Array(64), new Uint16Array(32), 'f16', 2, 4, 1, 8, f32(8), f32(8), i32(0)], RangeError, /cache v holds/],
      [[new Uint16Array(64), new Uint16Array(64), true, 2, 4, 1, 8, f32(8), f32(8), i32(0)], TypeError, /dtype must be "f32", "f16", "q8_0" or "q4_0"/],
      [[new Uint8Array(68), new Uint8Array(68), 'q8_0', 2, 4, 1, 8, f32(8), f32(8), i32(0)], RangeError, /q8_0 cache needs headDim a multiple of 32/],
      [[new Uint8Array(271), new Uint8Array(272), 'q8_0', 2, 4, 1, 32, f32(32), f32(32), i32(0)], RangeError, /cache k holds 271 elements, needs 272/],
      [[new Uint16Array(256), new Uint16Array(256), 'q8_0', 2, 4, 1, 32, f32(32), f32(32), i32(0)], TypeError, /cache k \(q8_0\) must be a Uint8Array/],
      [[new Uint8Array(143), new Uint8Array(144), 'q4_0', 2, 4, 1, 32, f32(32), f32(32), i32(0)], RangeError, /cache k holds 143 elements, needs 144/],
    ],
  },
  attention: {
    // one sequence of 2 new tokens at positions 0, 1 in block 0; 2 heads over 1 KV head
    ok: [f32(32), f32(32), ...cache(), i32(0, 2), i32(0, 1), i32(0, 1), 2, 2, 0.35],
    bad: [
      [[f32(32), f32(32), ...cache(), i32(0, 2), i32(0, 1), i32(2, 0), 2, 2, 0.35], RangeError, /attention: a block needed by a position is missing or outside the cache/],
      [[f32(32), f32(32), ...cache(), i32(0, 3), i32(0, 1), i32(0, 1), 2, 2, 0.35], RangeError, /attention: seqStarts must run from 0/],
      [[f32(32), f32(32), ...cache(), i32(0, 2), i32(0, 9), i32(0, 1), 2, 2, 0.35], RangeError, /attention: a position lies beyond/],
      [[f32(32), f32(32), ...cache(), i32(0, 2), i32(0, -1), i32(0, 1), 2, 2, 0.35], RangeError, /attention: positions must be >= 0/],
      [[f32(32), f32(32), ...cache(), i32(), i32(0, 1), i32(0, 1), 2, 2, 0.35], RangeError, /seqStarts/],
      [[f32(32), f32(31), ...cache(), i32(0, 2), i32(0, 1), i32(0, 1), 2, 2, 0.35], RangeError, /q holds/],
      [[f32(48), f32(48), new Uint16Array(128), new Uint16Array(128), 'f16', 2, 4, 2, 8, i32(0, 2), i32(0, 1), i32(0, 1), 2, 3, 0.35], RangeError, /multiple of numKvHeads/],
      [[f32(32), f32(32), ...cache(), i32(0, 2), i32(0, 1), i32(0), 2, 2, 0.35], RangeError, /blockTables holds/],
      [[f32(32), f32(32), ...cache(), i32(0, 2), i32(0, 1), i32(0, 1), 2, 2, 0.35, -1], RangeError, /window/],
      [[f32(32), f32(32), ...cache(), i32(0, 2), i32(0, 1), i32(0, 1), 2, 2, 0.35, 0, -1], RangeError, /softcap must be >= 0/],
      [[f32(32), f32(32), ...cache(), i32(0, 2), i32(0, 1), i32(0, 1), 2, 2, 0.35, 0, 0, null, i32(0)], RangeError, /firstPositions holds/],
      [[f32(32), f32(32), ...cache(), i32(0, 2), i32(0, 1), i32(0, 1), 2, 2, 0.35, 0, 0, null, i32(0, 2)], RangeError, /attention: firstPositions must lie in 0\.\.the token's position/],
      [[f32(32), f32(32), ...cache(), i32(0, 2), i32(0, 1), i32(0, 1), 2, 2, 0.35, 0, 0, null, f32(2)], TypeError, /firstPositions/],
    ],
  },
  // 2 tokens of one sequence in slot 1 of 2; 3 channels, 4 taps
  convSilu: {
    ok: [f32(6), f32(6), f32(12), f32(18), i32(1), i32(0, 2), 3, 4],
    bad: [
      [[f32(6), f32(6), f32(11), f32(18), i32(1), i32(0, 2), 3, 4], RangeError, /weight holds 11 elements, needs 12/],
      [[f32(6), f32(6), f32(12), f32(18), i32(2), i32(0, 2), 3, 4], RangeError, /a state slot is outside the state/],
      [[f32(6), f32(6), f32(12), f32(18), i32(1), i32(0, 3), 3, 4], RangeError, /x holds 6 elements, needs 9/],
      [[f32(6), f32(6), f32(12), f32(18), i32(0, 0), i32(0, 1, 2), 3, 4], RangeError, /two sequences share a state slot/],
      [[f32(6), f32(6), f32(12), f32(18), i32(0, 1), i32(0, 2, 1), 3, 4], RangeError, /seqStarts must not decrease/],
      [[f32(6), f32(6), f32(12), f32(18), i32(1), i32(0, 2), 3, 1], RangeError, /kernel must be an integer in \[2/],
      [[f32(6), f32(6), f32(12), f32(18), i32(1, 0), i32(0, 2), 3, 4], RangeError, /one entry per sequence/],
      [[f32(6), f32(6), f32(12), f32(18), i32(1), i32(), 3, 4], RangeError, /seqStarts must not be empty/],
    ],
  },
  // one token, 1 key head and 2 value heads of 4, one state slot
  gatedDeltaRule: {
    ok: [f32(8), f32(4), f32(4), f32(8), f32(2), f32(2), f32(32), i32(0), i32(0, 1), 1, 2, 4],
    bad: [
      [[f32(8), f32(4), f32(4), f32(8), f32(2), f32(2), f32(32), i32(0), i32(0, 1), 2, 3, 4], RangeError, /numVHeads must be a multiple of numKHeads/],
      [[f32(8), f32(4), f32(4), f32(8), f32(2), f32(2), f32(32), i32(1), i32(0, 1), 1, 2, 4], RangeError, /a state slot is outside the state/],
      [[f32(8), f32(4), f32(4), f32(8), f32(1), f32(2), f32(32), i32(0), i32(0, 1), 1, 2, 4], RangeError, /g holds 1 elements, needs 2/],
      [[f32(8), f32(4), f32(4), f32(7), f32(2), f32(2), f32(32), i32(0), i32(0, 1), 1, 2, 4], RangeError, /v holds 7 elements, needs 8/],
      [[f32(8), f32(4), f32(4), f32(8), f32(2), f32(2), f32(32), i32(0), i32(0, 1), 1, BIG, 4096], RangeError, /q holds 4 elements, needs 4096/],
      [[f32(8), f32(4), f32(4), f32(8), f32(2), f32(2), f32(32), i32(0), i32(0, 1), 1, 2, 5000], RangeError, /headDim must be an integer/],
    ],
  },
  matmul: {
    ok: [f32(2 * 3), f32(2 * 64), 2, new Uint8Array(3 * 68), Q8_0, 64, 3],
    bad: [
      [[f32(6), f32(128), 2, new Uint8Array(3 * 68 - 1), Q8_0, 64, 3], RangeError, /weight data holds/],
      [[f32(6), f32(128), 2, new Uint8Array(3 * 68), 99, 64, 3], TypeError, /unsupported weight type 99/],
      [[f32(6), f32(128), 2, new Uint8Array(3 * 68), Q8_0, 48, 3], RangeError, /not a whole number of blocks/],
      [[f32(6), f32(127), 2, new Uint8Array(3 * 68), Q8_0, 64, 3], RangeError, /x holds/],
      [[f32(6), f32(128), 2, new Uint8Array(3 * 68), Q8_0, 2 ** 31 - 32, 2 ** 31 - 1], RangeError, /too large|holds/],
      [[f32(6), f32(128), 2, f32(51), Q8_0, 64, 3], TypeError, /weight data must be a Uint8Array/],
    ],
  },
  // x, rows, inFeatures, then (out, data, type, outFeatures) per weight
  matmulSet: {
    ok: [f32(2 * 64), 2, 64, f32(2 * 3), new Uint8Array(3 * 68), Q8_0, 3, f32(2), new Uint8Array(68), Q8_0, 1],
    bad: [
      [[f32(2 * 64), 2, 64, f32(2 * 3), new Uint8Array(3 * 68), Q8_0, 3, f32(2), new Uint8Array(67), Q8_0, 1], RangeError, /weight data holds/],
      [[f32(2 * 64), 2, 64, f32(2 * 3), new Uint8Array(3 * 68), Q8_0, 3, f32(1), new Uint8Array(68), Q8_0, 1], RangeError, /out holds/],
      [[f32(2 * 64), 2, 64, f32(2 * 3), new Uint8Array(3 * 68), Q8_0, 3, f32(2), new Uint8Array(68), Q8_0], RangeError, /groups/],
      [[f32(2 * 64), 2, 64], RangeError, /groups/],
      [[f32(2 * 63), 2, 64, f32(2 * 3), new Uint8Array(3 * 68), Q8_0, 3], RangeError, /x holds/],
      [[f32(2 * 64), 2, 64, f32(2 * 3), new Uint8Array(3 * 68), 99, 3], TypeError, /unsupported weight type 99/],
      [[f32(2 * 64), 2, 64, f32(2 * 24), new Uint8Array(24 * 36), Q4_0_R16, 24], RangeError, /outFeatures of a tensor interleaved by 16 rows must be a multiple of 16/],
    ],
  },
  // (out, x, tokens, k, ids, weights, experts, hidden, ffn, act, alpha, limit, gate, gateType, up,
  //  upType, down, downType, gateBias, upBias, downBias, downScale): 2 tokens, top-1 of 2 experts, F32
  moeExperts: {
    ok: moeCall({}),
    bad: [
      [moeCall({ 1: f32(4) }), RangeError, /x holds 4 elements, needs 8/],
      [moeCall({ 0: f32(7) }), RangeError, /out holds/],
      [moeCall({ 4: i32(0, 2) }), RangeError, /expert id 2 outside \[0, 2\)/],
      [moeCall({ 4: i32(-1, 0) }), RangeError, /expert id -1/],
      [moeCall({ 5: f32(1) }), RangeError, /weights holds/],
      [moeCall({ 9: 3 }), RangeError, /act/],
      [moeCall({ 12: new Uint8Array(127) }), RangeError, /gate holds/],
      [moeCall({ 12: f32(32) }), TypeError, /gate must be/],
      [moeCall({ 14: [new Uint8Array(64)] }), TypeError, /up must be a Uint8Array or an Array of one per expert/],
      [moeCall({ 14: [new Uint8Array(64), new Uint8Array(63)] }), RangeError, /up holds/],
      [moeCall({ 16: new Uint8Array(128), 17: 99 }), TypeError, /unsupported weight type 99/],
      [moeCall({ 21: f32(1) }), RangeError, /downScale holds/],
      [moeCall({ 2: BIG, 7: BIG }), RangeError, /./],
      [moeCall({}).slice(0, 21), TypeError, /22 arguments/],
    ],
  },
  embedRows: {
    ok: [f32(2 * 64), new Uint8Array(3 * 68), Q8_0, 64, 3, i32(0, 2)],
    bad: [
      [[f32(2 * 64), new Uint8Array(3 * 68), Q8_0, 64, 3, i32(0, 3)], RangeError, /token id 3 outside the table/],
      [[f32(2 * 64), new Uint8Array(3 * 68), Q8_0, 64, 3, i32(-1)], RangeError, /token id -1/],
      [[f32(64), new Uint8Array(3 * 68), Q8_0, 64, 3, i32(0, 2)], RangeError, /out holds/],
      [[f32(2 * 64), new Uint8Array(3 * 68), Q8_0, 64, 4, i32(0, 2)], RangeError, /table data holds/],
      [[f32(2 * 64), new Uint8Array(24 * 36), Q4_0_R16, 64, 24, i32(0, 2)], RangeError, /nRows of a tensor interleaved by 16 rows must be a multiple of 16/],
    ],
  },
  // data, type, K, N: a Q4_0 or Q8_0 matrix rewritten in place
  interleaveR16: {
    ok: [new Uint8Array(16 * 68), Q8_0_R16, 64, 16],
    bad: [
      [[new Uint8Array(16 * 36 - 1), Q4_0_R16, 64, 16], RangeError, /data must hold exactly N rows of K values of the plain type/],
      [[new Uint8Array(16 * 36), Q8_0_R16, 64, 16], RangeError, /data must hold exactly/],
      [[new Uint8Array(16 * 68), Q8_0, 64, 16], TypeError, /type 8 is not a layout interleaved by 16 rows/],
      [[new Uint8Array(24 * 36), Q4_0_R16, 64, 24], RangeError, /N of a tensor interleaved by 16 rows must be a multiple of 16/],
      [[new Uint8Array(16 * 36), Q4_0_R16, 48, 16], RangeError, /not a whole number of blocks/],
      [[new Float32Array(16 * 9), Q4_0_R16, 64, 16], TypeError, /data must be a Uint8Array/],
    ],
  },
  // fd, bytes → a read-only mapping of the file
  mapFile: {
    ok: [fd, 64],
    bad: [[['3', 64], TypeError, /fd must be a number/], [[fd, -1], RangeError, /bytes must be an integer/], [[fd, 2 ** 51], RangeError, /bytes must be an integer/]],
  },
  // mapping, offset, length → an ArrayBuffer over those bytes of the file
  mappedView: {
    ok: [viewed, 8, 56],
    bad: [
      [[viewed, 8, 57], RangeError, /bytes 8\.\.65 lie beyond the mapping's 64/],
      [[viewed, -1, 8], RangeError, /offset must be an integer/],
      [[{}, 0, 8], TypeError, /mapping must be a value mapFile returned/],
      [[new Uint8Array(8), 0, 8], TypeError, /mapping must be a value mapFile returned/],
    ],
  },
  // mapping, views → the views detached, the file unmapped
  unmapFile: {
    ok: [unmapped, []],
    bad: [[[unmapped, [new Uint8Array(4)]], TypeError, /views must be an array of ArrayBuffers/], [[unmapped, null], TypeError, /views must be an array/], [[null, []], TypeError, /mapping must be/]],
  },
  // bytes, advice (0 normal … 3 willneed) → whether madvise took it
  adviseMemory: { ok: [new Uint8Array(4096), 0], bad: [[[new Uint8Array(8), 4], RangeError, /advice must be an integer/], [[new Float32Array(8), 0], TypeError, /bytes must be a Uint8Array/]] },
  // bytes → '' when mlocked, else why not
  lockMemory: { ok: [new Uint8Array(8)], bad: [[[new Float32Array(8)], TypeError, /bytes must be a Uint8Array/]] },
  // type → the kernels matmul runs for it (undefined for a type it does not compute with)
  kernelInfo: {
    ok: [Q8_0],
    bad: [[['8'], TypeError, /type must be a number/], [[256], RangeError, /type must be an integer/], [[-1], RangeError, /type must be an integer/]],
  },
};

describe('native addon: every N-API input is checked', { skip }, () => {
  it('has a case for every export', () => {
    const untested = Object.keys(addon!).filter((name) => !(name in CASES) && !['features', 'threads', 'mappingStats'].includes(name));
    assert.deepEqual(untested, [], 'exports without argument checks in this test');
  });
  for (const [name, c] of Object.entries(CASES)) {
    it(name, { skip: addon && typeof addon[name] !== 'function' ? `${name} is not in this build` : false }, () => {
      const fn = addon![name]!;
      fn(...c.ok);
      for (const [args, type, message] of c.bad) assert.throws(() => fn(...args), (err: Error) => err instanceof type && message.test(err.message), `${name}(${args.map((a) => (ArrayBuffer.isView(a) ? `${a.constructor.name}(${(a as Float32Array).length})` : typeof a === 'object' && a !== null ? Object.prototype.toString.call(a) : String(a))).join(', ')})`);
      if (name !== 'setThreads') assert.throws(() => fn(), TypeError, 'no arguments');
    });
  }
  it('the pool still works after the refused calls', () => {
    addon!.setThreads!(2);
    const out = f32(4);
    addon!.add!(out, Float32Array.from([1, 2, 3, 4]), Float32Array.from([1, 1, 1, 1]), 4);
    assert.deepEqual([...out], [2, 3, 4, 5]);
  });
});
