// The only file that loads the native core (build/Release/loom_native.node, built by
// `npm install` / `npm run build:native`). The addon is test-loaded (a tiny RMSNorm checked
// against its known answer) before it is trusted; when it cannot load, loadNativeKernels()
// says so in one line on stderr (once) and returns undefined, so callers fall back to the
// reference; nativeUnavailableReason() asks without the notice.
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AttentionBatch, AttentionShape, DeltaRuleShape, ExpertActivation, ExpertRouting, ExpertWeights, KvCacheShape, KvDtype, KvLayer, Kernels, MatmulTarget, MropeMode, RopeSections } from './index.js';
import { moeExpertsComposed, SWIGLU_OAI_ALPHA, SWIGLU_OAI_LIMIT } from './reference-moe.js';
import { referenceKernels } from './reference.js';
import type { RopeStyle, WeightTensor } from '../tensor/weight-tensor.js';
import type { RopeScaling } from '../tensor/rope-scaling.js';
import type { R16Interleaver } from '../tensor/quant/r16.js';

/** CPU features the addon detected, and which instruction set its own kernels use. */
export interface CpuFeatures {
  readonly avx2: boolean;
  readonly fma: boolean;
  readonly f16c: boolean;
  readonly avx512f: boolean;
  readonly avx512bw: boolean;
  readonly avx512vl: boolean;
  readonly avx512dq: boolean;
  readonly avx512vnni: boolean;
  readonly avx512bf16: boolean;
  readonly neon: boolean;
  /** 'avx512' | 'avx2' | 'portable' */
  readonly kernels: string;
}

/** Which kernels the native matmul runs for one weight type on the instruction set in use
 * (native/matmul.h kernel_info). Names are "<isa>:<kernel>"; gemm is the GEMM's
 * micro-kernel family ('' without one) and gemmMinRows the rows from which it is used (0
 * without one); layout is the type a load-time layout rewrites this type into (-1: none). */
export interface NativeKernelInfo {
  readonly act: string;
  readonly oneRow: string;
  readonly fewRows: string;
  readonly gemm: string;
  readonly gemmMinRows: number;
  readonly layout: number;
}

/** f32 FMA throughput of every pool thread, at `bits`-wide vectors (32 = the scalar fallback). */
export interface FmaPeak {
  readonly gflops: number;
  readonly bits: number;
}

type F32 = Float32Array;
type ExpertData = Uint8Array | readonly Uint8Array[];
type Cache = Float32Array | Uint16Array | Uint8Array;

/** Integer multiply-add throughput of every pool thread (GOP/s, 2 ops a product) and the instruction it was measured with. */
export interface Int8Peak {
  readonly gops: number;
  readonly instruction: string;
}

/** The addon's exports, argument for argument (see native/napi-*.cc). */
interface NativeAddon {
  features(): CpuFeatures;
  setThreads(n: number): void;
  threads(): number;
  /** absent in builds without native/probe.cc */
  probeFmaPeak?(seconds: number, bits?: number): FmaPeak;
  probeReadBandwidth?(bytes: number, seconds: number): number;
  probeInt8Peak?(seconds: number): Int8Peak;
  /** zeroed, on huge pages where the OS has them (native/huge-pages.h), faulted in now when
   *  populate; absent in older builds */
  largeBuffer?(bytes: number, populate?: boolean): ArrayBuffer;
  rmsNorm(out: F32, x: F32, weight: F32, rows: number, dim: number, eps: number): void;
  layerNorm(out: F32, x: F32, weight: F32, bias: F32, rows: number, dim: number, eps: number): void;
  rope(x: F32, positions: Int32Array, numHeads: number, headDim: number, ropeDim: number, base: number, neox: boolean,
    scaling?: Float64Array, freqFactors?: F32 | null): void;
  /** absent in builds before M-RoPE; mode 1 mrope, 2 imrope, 3 vision */
  ropeMulti?(x: F32, positions: Int32Array, numHeads: number, headDim: number, ropeDim: number, base: number, sections: Int32Array, mode: number,
    scaling?: Float64Array, freqFactors?: F32 | null): void;
  siluMul(out: F32, gate: F32, up: F32, n: number): void;
  gelu(out: F32, x: F32, n: number): void;
  geluMul(out: F32, gate: F32, up: F32, n: number): void;
  softcap(x: F32, n: number, cap: number): void;
  add(out: F32, a: F32, b: F32, n: number): void;
  addBias(x: F32, bias: F32, rows: number): void;
  softmax(x: F32, rows: number, n: number): void;
  argmax(row: F32): number;
  applyTokenMask(row: F32, mask: Int32Array): void;
  expWeights(out: Float64Array, row: F32, idx: Int32Array | null, n: number, max: number): number;
  sampleCandidates(row: F32, scale: number, logMinP: number, idx: Int32Array): number;
  drawIndex(weights: Float64Array, n: number, u: number): number;
  writeKv(kc: Cache, vc: Cache, dtype: KvDtype, numBlocks: number, blockSize: number, numKvHeads: number, headDim: number,
    k: F32, v: F32, slotMapping: Int32Array): void;
  attention(out: F32, q: F32, kc: Cache, vc: Cache, dtype: KvDtype, numBlocks: number, blockSize: number, numKvHeads: number,
    headDim: number, seqStarts: Int32Array, positions: Int32Array, blockTables: Int32Array, maxBlocksPerSeq: number,
    numHeads: number, scale: number, window: number, softcap: number, sinks: F32 | null, firstPositions: Int32Array | null, windowPositions: Int32Array | null): void;
  /** absent when the addon was built without native/matmul.cc */
  matmul?(out: F32, x: F32, rows: number, data: Uint8Array, type: number, inFeatures: number, outFeatures: number): void;
  /** (x, rows, inFeatures, then out, data, type, outFeatures for each weight) */
  matmulSet?(x: F32, rows: number, inFeatures: number, ...targets: (F32 | Uint8Array | number)[]): void;
  embedRows?(out: F32, data: Uint8Array, type: number, dim: number, nRows: number, ids: Int32Array): void;
  /** native/napi-moe.cc; absent in older builds. Expert data: one Uint8Array of all E, or one per expert */
  moeExperts?(out: F32, x: F32, tokens: number, k: number, ids: Int32Array, weights: F32, experts: number, hidden: number, ffn: number,
    act: number, alpha: number, limit: number, gate: ExpertData, gateType: number, up: ExpertData | null, upType: number,
    down: ExpertData, downType: number, gateBias: F32 | null, upBias: F32 | null, downBias: F32 | null, downScale: F32 | null): void;
  /** a matrix of N rows of K values of the plain type of `type` into that layout interleaved by 16 rows, in place */
  interleaveR16?(data: Uint8Array, type: number, K: number, N: number): void;
  /** absent in older builds */
  kernelInfo?(type: number): NativeKernelInfo | undefined;
  /** memory-mapped files (native/napi-mapping.cc); absent in older builds */
  mapFile?(fd: number, bytes: number): object;
  mappedView?(mapping: object, offset: number, length: number): ArrayBuffer;
  unmapFile?(mapping: object, views: ArrayBuffer[]): void;
  adviseMemory?(bytes: Uint8Array, advice: number): boolean;
  lockMemory?(bytes: Uint8Array): string;
  mappingStats?(): { count: number; bytes: number };
  /** absent when the addon was built without native/recurrent.cc */
  convSilu?(out: F32, x: F32, weight: F32, state: F32, slots: Int32Array, seqStarts: Int32Array, channels: number, kernel: number): void;
  gatedDeltaRule?(out: F32, q: F32, k: F32, v: F32, g: F32, beta: F32, state: F32, slots: Int32Array, seqStarts: Int32Array,
    numKHeads: number, numVHeads: number, headDim: number): void;
}

/** dist/src/kernels/ → the project root; LOOM_NATIVE_ADDON loads another build (the sanitizer build) */
const ADDON_PATH = process.env.LOOM_NATIVE_ADDON ?? resolve(dirname(fileURLToPath(import.meta.url)), '../../../build/Release/loom_native.node');

let state: { addon: NativeAddon; kernels: Kernels } | { error: string } | undefined;

function testLoad(): NativeAddon {
  const addon = createRequire(import.meta.url)(ADDON_PATH) as NativeAddon;
  const out = new Float32Array(2);
  addon.rmsNorm(out, new Float32Array([3, 4]), new Float32Array([1, 2]), 1, 2, 0);
  // rms of (3, 4) is sqrt(12.5)
  if (Math.abs(out[0]! - 3 / Math.sqrt(12.5)) > 1e-6 || Math.abs(out[1]! - 8 / Math.sqrt(12.5)) > 1e-6) {
    throw new Error('its test RMSNorm gave a wrong answer');
  }
  return addon;
}

function load(): NonNullable<typeof state> {
  if (state) return state;
  try {
    const addon = testLoad();
    state = { addon, kernels: wrap(addon) };
  } catch (err) {
    const reason = err instanceof Error ? err.message.split('\n')[0]! : String(err);
    state = { error: reason };
  }
  return state;
}

let noticed = false;

/** The native kernels, or undefined (after one line on stderr, once) when the addon cannot load. */
export function loadNativeKernels(): Kernels | undefined {
  const s = load();
  if ('kernels' in s) return s.kernels;
  if (!noticed) process.stderr.write(`loom: native core unavailable (${s.error}); using the TypeScript reference kernels\n`);
  noticed = true;
  return undefined;
}

/** Why the addon did not load, or undefined when it did. */
export function nativeUnavailableReason(): string | undefined {
  const s = load();
  return 'error' in s ? s.error : undefined;
}

/** Whether the loaded addon has its own matmul/embedRows (else the reference ones stand in). */
export function nativeHasMatmul(): boolean {
  const s = load();
  return 'addon' in s && typeof s.addon.matmul === 'function' && typeof s.addon.embedRows === 'function';
}

/** Sizes the native thread pool (default: the hardware threads). No-op without the addon. */
export function setThreads(n: number): void {
  const s = load();
  if ('addon' in s) s.addon.setThreads(n);
}

/** The native pool's size, or undefined without the addon. */
export function nativeThreads(): number | undefined {
  const s = load();
  return 'addon' in s ? s.addon.threads() : undefined;
}

function probes(): Required<Pick<NativeAddon, 'probeFmaPeak' | 'probeReadBandwidth' | 'probeInt8Peak'>> {
  const s = load();
  if (!('addon' in s)) throw new Error(`the native core is unavailable (${s.error})`);
  const { probeFmaPeak, probeReadBandwidth, probeInt8Peak } = s.addon;
  if (!probeFmaPeak || !probeReadBandwidth || !probeInt8Peak) throw new Error('the native core was built without its probes (npm run build:native)');
  return { probeFmaPeak, probeReadBandwidth, probeInt8Peak };
}

/** This machine's f32 FMA peak over about `seconds` on the native pool; bits 0 = the widest vectors. */
export function probeFmaPeak(seconds: number, bits = 0): FmaPeak {
  return probes().probeFmaPeak(seconds, bits);
}

/** This machine's integer product peak over about `seconds` on the native pool (native/probe.h:
 *  VNNI's dpbusd, else AVX2's maddubs + madd, else a scalar loop). */
export function probeInt8Peak(seconds: number): Int8Peak {
  return probes().probeInt8Peak(seconds);
}

/** Memory read bandwidth (GB/s) of the native pool's threads over a buffer of `bytes`. */
export function probeReadBandwidth(bytes: number, seconds: number): number {
  return probes().probeReadBandwidth(bytes, seconds);
}

/**
 * A zeroed buffer for weights or the KV cache: on 2 MiB pages from the native core (fewer
 * TLB misses when a step streams through it), or a plain ArrayBuffer without the addon.
 * `populate`: its memory is faulted in now, not on first write.
 */
export function allocateLarge(bytes: number, populate = false): ArrayBuffer {
  const s = load();
  if ('addon' in s && s.addon.largeBuffer) return s.addon.largeBuffer(bytes, populate);
  const buf = new ArrayBuffer(bytes);
  if (populate) new Uint8Array(buf).fill(0);
  return buf;
}

/**
 * The native rewrite of Q4_0 and Q8_0 matrices into their layouts interleaved by 16 rows
 * (tensor/quant/r16.ts), where the native core computes faster with them than with the plain
 * layouts: its AVX2 kernels and its AVX-512 ones with VNNI. Undefined otherwise (no addon, the
 * portable core, AVX-512 without VNNI): tensors then stay as the file has them.
 */
export function nativeR16Interleaver(): R16Interleaver | undefined {
  const s = load();
  if (!('addon' in s) || !nativeHasMatmul()) return undefined;
  const { addon } = s;
  const f = addon.features();
  if (!addon.interleaveR16 || !(f.kernels === 'avx2' || (f.kernels === 'avx512' && f.avx512vnni))) return undefined;
  return (type, data, K, N) => addon.interleaveR16!(data, type, K, N);
}

/** How a mapped range will be read (madvise): random rows (a token table) or front to back. */
export type MemoryAdvice = 'normal' | 'random' | 'sequential' | 'willneed';
const ADVICE: Record<MemoryAdvice, number> = { normal: 0, random: 1, sequential: 2, willneed: 3 };

/**
 * Read-only mappings of files through the native core (native/mapped-file.h): `map` maps the
 * open file `fd` over its first `bytes`; `view` is an ArrayBuffer over a range of it that
 * keeps the mapping alive while it lives; `unmap` detaches the views given (they read as
 * empty afterwards) and unmaps now. `lock` mlocks the pages under a view ('' or why not).
 */
export interface FileMapper {
  map(fd: number, bytes: number): object;
  view(mapping: object, offset: number, length: number): ArrayBuffer;
  unmap(mapping: object, views: ArrayBuffer[]): void;
  advise(bytes: Uint8Array, advice: MemoryAdvice): boolean;
  lock(bytes: Uint8Array): string;
}

/** The native file mapper, or undefined (no addon, or one built before mappings). */
export function nativeFileMapper(): FileMapper | undefined {
  const s = load();
  if (!('addon' in s)) return undefined;
  const a = s.addon;
  const { mapFile, mappedView, unmapFile, adviseMemory, lockMemory } = a;
  if (!mapFile || !mappedView || !unmapFile || !adviseMemory || !lockMemory) return undefined;
  return {
    map: (fd, bytes) => mapFile(fd, bytes),
    view: (mapping, offset, length) => mappedView(mapping, offset, length),
    unmap: (mapping, views) => unmapFile(mapping, views),
    advise: (bytes, advice) => adviseMemory(bytes, ADVICE[advice]),
    lock: (bytes) => lockMemory(bytes),
  };
}

/** Live file mappings of this process and their bytes (0 without the addon). */
export function mappingStats(): { count: number; bytes: number } {
  const s = load();
  return ('addon' in s && s.addon.mappingStats?.()) || { count: 0, bytes: 0 };
}

/** The kernels the native matmul picks for `type` here, or undefined (no addon, an older
 * build, or a type the native kernels do not compute with). */
export function nativeKernelInfo(type: number): NativeKernelInfo | undefined {
  const s = load();
  return 'addon' in s ? s.addon.kernelInfo?.(type) : undefined;
}

export function cpuFeatures(): CpuFeatures | undefined {
  const s = load();
  return 'addon' in s ? s.addon.features() : undefined;
}

function matrixDims(w: WeightTensor): [number, number] {
  const [inF, outF = 1, ...rest] = w.dims;
  if (inF === undefined || rest.some((d) => d !== 1)) throw new Error(`${w.name}: not a matrix (dims ${w.dims.join('x')})`);
  return [inF, outF];
}

/** weights per native matmulSet call (native/matmul.h kMaxMatmulParts) */
const MAX_MATMUL_SET = 8;

/** the addon's numbers for the experts' activations (native/moe.h ExpertAct) */
const EXPERT_ACTS: Record<ExpertActivation, number> = { silu: 0, gelu: 1, 'swiglu-oai': 2 };

interface ExpertArgs {
  readonly gate: ExpertData;
  readonly up: ExpertData | null;
  readonly down: ExpertData;
  readonly types: readonly [number, number, number];
  readonly hidden: number;
  readonly ffn: number;
}

/** Each ExpertWeights' arguments for the addon, checked and built once. */
const expertArgsOf = new WeakMap<ExpertWeights, ExpertArgs>();
function expertArgs(w: ExpertWeights): ExpertArgs {
  let args = expertArgsOf.get(w);
  if (args) return args;
  const typeOf = (ts: readonly WeightTensor[], kind: string): number => {
    const t = ts[0]!.type;
    if (ts.some((x) => x.type !== t)) throw new Error(`moeExperts: the ${kind} experts are not all of one type`);
    return t;
  };
  const [ffn, hidden] = matrixDims(w.down[0]!);
  args = {
    gate: w.stacked?.gate ?? w.gate.map((t) => t.data),
    up: w.up ? (w.stacked?.up ?? w.up.map((t) => t.data)) : null,
    down: w.stacked?.down ?? w.down.map((t) => t.data),
    types: [typeOf(w.gate, 'gate'), w.up ? typeOf(w.up, 'up') : 0, typeOf(w.down, 'down')],
    hidden,
    ffn,
  };
  expertArgsOf.set(w, args);
  return args;
}

function wrap(a: NativeAddon): Kernels {
  const { matmul, matmulSet, embedRows, moeExperts } = a;
  const kernels: Kernels = {
    name: matmul && embedRows ? 'native' : 'native (reference matmul)',
    matmul: matmul
      ? (out: F32, x: F32, w: WeightTensor, rows: number) => {
          const [inF, outF] = matrixDims(w);
          matmul(out, x, rows, w.data, w.type, inF, outF);
        }
      : referenceKernels.matmul,
    matmulSet: matmulSet
      ? (x: F32, rows: number, targets: readonly MatmulTarget[]) => {
          const inF = matrixDims(targets[0]!.w)[0];
          for (let at = 0; at < targets.length; at += MAX_MATMUL_SET) {
            const args: (F32 | Uint8Array | number)[] = [];
            for (const { out, w } of targets.slice(at, at + MAX_MATMUL_SET)) {
              const [wIn, outF] = matrixDims(w);
              if (wIn !== inF) throw new Error(`matmulSet: ${w.name} takes ${wIn} inputs, ${targets[0]!.w.name} ${inF}`);
              args.push(out, w.data, w.type, outF);
            }
            matmulSet(x, rows, inF, ...args);
          }
        }
      : referenceKernels.matmulSet,
    embedRows: embedRows
      ? (out: F32, table: WeightTensor, ids: Int32Array) => {
          const [dim, rows] = matrixDims(table);
          embedRows(out, table.data, table.type, dim, rows, ids);
        }
      : referenceKernels.embedRows,
    moeExperts: (out: F32, x: F32, T: number, k: number, r: ExpertRouting, w: ExpertWeights) => {
      if (!moeExperts || !matmul) return moeExpertsComposed(kernels, out, x, T, k, r, w);
      const e = expertArgs(w);
      moeExperts(out, x, T, k, r.experts, r.weights, w.down.length, e.hidden, e.ffn, EXPERT_ACTS[w.activation], SWIGLU_OAI_ALPHA, SWIGLU_OAI_LIMIT,
        e.gate, e.types[0], e.up, e.types[1], e.down, e.types[2], w.gateBias ?? null, w.upBias ?? null, w.downBias ?? null, w.downScale ?? null);
    },
    rmsNorm: a.rmsNorm,
    layerNorm: a.layerNorm,
    convSilu: a.convSilu ?? referenceKernels.convSilu,
    gatedDeltaRule: a.gatedDeltaRule
      ? (out: F32, q: F32, k: F32, v: F32, g: F32, beta: F32, state: F32, slots: Int32Array, seqStarts: Int32Array, s: DeltaRuleShape) =>
          a.gatedDeltaRule!(out, q, k, v, g, beta, state, slots, seqStarts, s.numKHeads, s.numVHeads, s.headDim)
      : referenceKernels.gatedDeltaRule,
    rope: (x: F32, positions: Int32Array, numHeads: number, headDim: number, ropeDim: number, base: number, style: RopeStyle, s?: RopeScaling) =>
      s
        ? a.rope(x, positions, numHeads, headDim, ropeDim, base, style === 'neox', ropeScalingArgs(s), s.freqFactors ?? null)
        : a.rope(x, positions, numHeads, headDim, ropeDim, base, style === 'neox'),
    ropeMulti: a.ropeMulti
      ? (x: F32, positions: Int32Array, numHeads: number, headDim: number, ropeDim: number, base: number, sections: RopeSections, mode: MropeMode, s?: RopeScaling) =>
          s
            ? a.ropeMulti!(x, positions, numHeads, headDim, ropeDim, base, Int32Array.from(sections), MROPE_MODES[mode], ropeScalingArgs(s), s.freqFactors ?? null)
            : a.ropeMulti!(x, positions, numHeads, headDim, ropeDim, base, Int32Array.from(sections), MROPE_MODES[mode])
      : referenceKernels.ropeMulti,
    siluMul: a.siluMul,
    gelu: a.gelu,
    geluMul: a.geluMul,
    softcap: a.softcap,
    add: a.add,
    addBias: a.addBias,
    softmax: a.softmax,
    argmax: a.argmax,
    applyTokenMask: a.applyTokenMask,
    expWeights: a.expWeights,
    sampleCandidates: a.sampleCandidates,
    drawIndex: a.drawIndex,
    writeKv: (layer: KvLayer, s: KvCacheShape, k: F32, v: F32, slotMapping: Int32Array) =>
      a.writeKv(layer.k, layer.v, s.dtype, s.numBlocks, s.blockSize, s.numKvHeads, s.headDim, k, v, slotMapping),
    attention: (out: F32, q: F32, layer: KvLayer, c: KvCacheShape, b: AttentionBatch, shape: AttentionShape) => {
      if (shape.numKvHeads !== c.numKvHeads || shape.headDim !== c.headDim) {
        throw new RangeError(`attention: heads ${shape.numKvHeads}x${shape.headDim} do not match the cache's ${c.numKvHeads}x${c.headDim}`);
      }
      a.attention(out, q, layer.k, layer.v, c.dtype, c.numBlocks, c.blockSize, c.numKvHeads, c.headDim,
        b.seqStarts, b.positions, b.blockTables, b.maxBlocksPerSeq, shape.numHeads, shape.scale, shape.window ?? 0, shape.softcap ?? 0, shape.sinks ?? null, b.firstPositions ?? null, b.windowPositions ?? null);
    },
   };
  return kernels;
}

/** the addon's numbers for ggml_rope_multi's modes (native/rope.h MropeMode) */
const MROPE_MODES: Record<MropeMode, number> = { mrope: 1, imrope: 2, vision: 3 };

/** The scalars of a RopeScaling as the addon takes them, built once per scaling object. */
const scalingArgs = new WeakMap<RopeScaling, Float64Array>();
function ropeScalingArgs(s: RopeScaling): Float64Array {
  let args = scalingArgs.get(s);
  if (!args) {
    args = Float64Array.of(s.freqScale, s.extFactor, s.attnFactor, s.corrDims[0], s.corrDims[1]);
    scalingArgs.set(s, args);
  }
  return args;
}
