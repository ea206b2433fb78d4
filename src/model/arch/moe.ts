// A routed mixture-of-experts FFN (Qwen3-MoE's, Qwen3.5-MoE's, Gemma 4's; llama.cpp's
// build_moe_ffn with softmax gating and SwiGLU or GeGLU experts), batched by expert: for a batch of T tokens, route all of them, then for
// each expert with at least one token gather those tokens' rows, run the expert's gate/up,
// SwiGLU and down over them as one matmul batch, and scatter the rows back, weighted, into
// k slots of [T, hidden]; each token then sums its k slots in the order the router ranked them, as
// llama.cpp adds its experts' outputs. A token's result depends on its own row only (the
// same expert weights, its own routing), whichever tokens share the expert's batch.
// A file may hold gate and up fused per expert (ffn_gate_up_exps [hidden, 2·F, E]: gate rows
// then up rows, as Gemma 4's converter writes them), and a per-expert scale of the down
// projection's output (ffn_down_exps.scale [E]: Gemma 4's per_expert_scale), applied before
// the routing weight as build_lora_mm_id does. gpt-oss adds biases to the router and to each
// expert's gate, up and down (ffn_*.bias, ggml_add_id), chooses the top k on the raw logits
// with a softmax over those k, and clamps its SwiGLU (oai-moe.ts).
import type { Kernels } from '../../kernels/index.js';
import type { MoeParams, TensorSource } from '../weights.js';
import type { WeightTensor } from '../../tensor/weight-tensor.js';
import { expertTensorName, moeTensorNames } from '../gguf-config-moe.js';
import type { Scratch } from './architecture.js';
import { loadVector } from './architecture.js';
import { GGMLType } from '../../tensor/weight-types.js';
import { routeTopKSoftmax, swigluOai } from './oai-moe.js';
import { topKOfRow } from './top-k.js';

/**
 * The 2-D [dims[0], dims[1]] matrices of a 3-D expert tensor [dims[0], dims[1], numExperts]:
 * views into the same bytes, one per expert (expert e's rows follow expert e - 1's).
 */
export function expertViews(t: WeightTensor, numExperts: number): WeightTensor[] {
  const [inF, outF, n] = t.dims;
  if (t.dims.length !== 3 || n !== numExperts || t.data.length % numExperts !== 0) {
    throw new RangeError(`${t.name}: dims [${t.dims.join(', ')}] are not ${numExperts} expert matrices`);
  }
  const bytes = t.data.length / numExperts;
  return Array.from({ length: numExperts }, (_, e) => ({
    name: `${t.name}[${e}]`,
    type: t.type,
    dims: [inF!, outF!],
    data: t.data.subarray(e * bytes, (e + 1) * bytes),
  }));
}

/** a matrix dequantized to an owned F32 copy (small tensors only) */
function widenToF32(t: WeightTensor): WeightTensor {
  if (t.type === GGMLType.F32) return t;
  const values = loadVector({ has: () => true, get: () => t }, t.name);
  return { name: t.name, type: GGMLType.F32, dims: t.dims, data: new Uint8Array(values.buffer) };
}

/** The routing of T tokens: per token its k experts, best first, and their weights. */
export interface Routing {
  /** [T, k] expert ids, by descending router probability */
  readonly experts: Int32Array;
  /** [T, k] the chosen experts' probabilities, renormalized over the k when normTopK (f32) */
  readonly weights: Float32Array;
}

/** smallest positive f16 normal: llama.cpp clamps the sum of the chosen probabilities to it */
const MIN_WEIGHT_SUM = 6.103515625e-5;

/**
 * Top-k routing of T rows of softmax probabilities [T, numExperts] (llama.cpp's argsort top-k,
 * the lowest id first among equals), weights divided by their sum (summed in f64, rounded to
 * f32, as ggml_sum_rows) when normTopK. Returns the smallest routing margin of the rows: the
 * gap between the k-th and (k+1)-th router logit, log(p_k / p_k+1) (Infinity when k = numExperts).
 */
export function routeTopK(probs: Float32Array, T: number, p: MoeParams, out: Routing): number {
  const { numExperts: E, numExpertsUsed: k } = p;
  const taken = new Uint8Array(E);
  let minGap = Infinity;
  for (let t = 0; t < T; t++) {
    const row = probs.subarray(t * E, (t + 1) * E);
    const ids = out.experts.subarray(t * k, (t + 1) * k);
    const w = out.weights.subarray(t * k, (t + 1) * k);
    const next = topKOfRow(row, ids, w, taken);
    if (next >= 0) minGap = Math.min(minGap, Math.log(row[ids[k - 1]!]! / row[next]!));
    if (p.normTopK) {
      let sum = 0;
      for (let j = 0; j < k; j++) sum += w[j]!;
      const s = Math.max(Math.fround(sum), MIN_WEIGHT_SUM);
      for (let j = 0; j < k; j++) w[j] = w[j]! / s;
    }
  }
  return minGap;
}

/** The experts' gated activation: SiLU (SwiGLU, the Qwen families), GELU-tanh (GeGLU, Gemma 4) or
 *  OpenAI's clamped SwiGLU (gpt-oss). */
export type ExpertActivation = 'silu' | 'gelu' | 'swiglu-oai';

/** How router logits become the k experts and their weights: 'softmax' over all experts, then
 *  the top k (renormalized when normTopK); 'topk-softmax': the top k logits, then a softmax over them (gpt-oss). */
export type ExpertGating = 'softmax' | 'topk-softmax';

/** per-expert biases ([E, width] each, expert e's row at e·width), as gpt-oss's files carry them */
interface ExpertBiases {
  readonly gate?: Float32Array;
  readonly up?: Float32Array;
  readonly down?: Float32Array;
}

/** One layer's routed FFN: the router, per-expert views of the expert tensors, and counters. */
export class MoeFfn {
  private readonly router: WeightTensor;
  /** per expert: gate and up, or (fused files) one [hidden, 2·F] matrix of gate rows then up rows */
  private readonly gate: WeightTensor[];
  private readonly up: WeightTensor[] | undefined;
  private readonly down: WeightTensor[];
  /** [E] the multiplier of each expert's down output (ffn_down_exps.scale), or undefined */
  private readonly downScale: Float32Array | undefined;
  /** [E] added to the router's logits (ffn_gate_inp.bias), or undefined */
  private readonly routerBias: Float32Array | undefined;
  private readonly biases: ExpertBiases;
  /** tokens routed to each expert so far (a token counts once per expert it reads) */
  readonly load: Float64Array;
  /** the smallest gap seen between a token's k-th and (k+1)-th router logit (Infinity before any, or when k = numExperts) */
  minRoutingGap = Infinity;

  /** zeroes the expert counters and forgets the routing margin seen (a bench starts its measured run with it) */
  resetCounters(): void {
    this.load.fill(0);
    this.minRoutingGap = Infinity;
  }

  constructor(
    tensors: TensorSource,
    li: number,
    private readonly params: MoeParams,
    private readonly hiddenSize: number,
    private readonly activation: ExpertActivation = 'silu',
    private readonly gating: ExpertGating = 'softmax',
  ) {
    const names = moeTensorNames(li);
    const fused = `blk.${li}.ffn_gate_up_exps.weight`;
    // a GGUF file's 3-D tensor per layer, else (an HF folder) one matrix per expert
    const hf = !tensors.has(names.gate);
    // llama.cpp's converter writes the router in F32 whatever the checkpoint's dtype: an HF
    // folder's is widened here the same way (a few hundred KB), so its logits round as the GGUF's
    this.router = hf ? widenToF32(tensors.get(names.router)) : tensors.get(names.router);
    const experts = (which: 'gate' | 'up' | 'down'): WeightTensor[] =>
      tensors.has(names[which])
        ? expertViews(tensors.get(names[which]), params.numExperts)
        : Array.from({ length: params.numExperts }, (_, e) => tensors.get(expertTensorName(li, which, e)));
    if (tensors.has(fused)) {
      this.gate = expertViews(tensors.get(fused), params.numExperts);
      this.up = undefined;
    } else {
      this.gate = experts('gate');
      this.up = experts('up');
    }
    this.down = experts('down');
    const scale = `blk.${li}.ffn_down_exps.scale`;
    this.downScale = tensors.has(scale) ? loadVector(tensors, scale) : undefined;
    if (this.downScale && this.downScale.length !== params.numExperts) throw new RangeError(`${scale}: ${this.downScale.length} values for ${params.numExperts} experts`);
    this.load = new Float64Array(params.numExperts);
    const vector = (name: string, width: number): Float32Array | undefined => {
      if (!tensors.has(name)) return undefined;
      const v = loadVector(tensors, name);
      if (v.length !== width * params.numExperts) throw new RangeError(`${name}: ${v.length} values, ${params.numExperts} experts of ${width} need ${width * params.numExperts}`);
      return v;
    };
    this.routerBias = vector(`blk.${li}.ffn_gate_inp.bias`, 1);
    this.biases = {
      gate: vector(`blk.${li}.ffn_gate_exps.bias`, params.expertFfnSize),
      up: vector(`blk.${li}.ffn_up_exps.bias`, params.expertFfnSize),
      down: vector(`blk.${li}.ffn_down_exps.bias`, hiddenSize),
    };
  }

  /**
   * out[t] = Σ_j weight[t, j] · expert_j(h[t]) over the k experts token t is routed to. h, out:
   * [T, hidden]; the router reads routerIn (default h: Gemma 4 routes from its own normalization).
   */
  forward(out: Float32Array, h: Float32Array, T: number, k: Kernels, scratch: Scratch, routerIn: Float32Array = h): void {
    const { numExperts: E, numExpertsUsed: K, expertFfnSize: F } = this.params;
    const D = this.hiddenSize;
    const probs = scratch.take('moe.probs', T * E);
    k.matmul(probs, routerIn, this.router, T);
    if (this.routerBias) k.addBias(probs, this.routerBias, T);
    const routing: Routing = { experts: new Int32Array(T * K), weights: new Float32Array(T * K) };
    if (this.gating === 'topk-softmax') {
      this.minRoutingGap = Math.min(this.minRoutingGap, routeTopKSoftmax(probs, T, this.params, routing));
    } else {
      k.softmax(probs, T, E);
      this.minRoutingGap = Math.min(this.minRoutingGap, routeTopK(probs, T, this.params, routing));
    }

    // counting sort of the T·K (token, slot) pairs by expert
    const starts = new Int32Array(E + 1);
    for (const e of routing.experts) starts[e + 1]!++;
    for (let e = 0; e < E; e++) starts[e + 1]! += starts[e]!;
    const pairs = new Int32Array(T * K); // t·K + slot, grouped by expert
    const fill = starts.slice(0, E);
    routing.experts.forEach((e, pair) => (pairs[fill[e]!++] = pair));

    const slots = scratch.take('moe.slots', K * T * D); // [K, T, hidden]: slot s of every token, weighted
    for (let e = 0; e < E; e++) {
      const n = starts[e + 1]! - starts[e]!;
      if (n === 0) continue;
      this.load[e]! += n;
      const mine = pairs.subarray(starts[e]!, starts[e + 1]!);
      const x = scratch.take('moe.x', n * D);
      mine.forEach((pair, i) => {
        const t = (pair / K) | 0;
        x.set(h.subarray(t * D, (t + 1) * D), i * D);
      });
      const g = scratch.take('moe.gate', n * F);
      const u = scratch.take('moe.up', n * F);
      if (this.up) {
        k.matmulSet(x, n, [{ out: g, w: this.gate[e]! }, { out: u, w: this.up[e]! }]);
      } else {
        const gu = scratch.take('moe.gateUp', n * 2 * F);
        k.matmul(gu, x, this.gate[e]!, n);
        for (let i = 0; i < n; i++) {
          g.set(gu.subarray(2 * i * F, (2 * i + 1) * F), i * F);
          u.set(gu.subarray((2 * i + 1) * F, (2 * i + 2) * F), i * F);
        }
      }
      const { gate: gb, up: ub, down: db } = this.biases;
      if (gb) k.addBias(g, gb.subarray(e * F, (e + 1) * F), n);
      if (ub) k.addBias(u, ub.subarray(e * F, (e + 1) * F), n);
      if (this.activation === 'silu') k.siluMul(g, g, u, n * F);
      else if (this.activation === 'gelu') k.geluMul(g, g, u, n * F);
      else swigluOai(g, g, u, n * F);
      const y = scratch.take('moe.y', n * D);
      k.matmul(y, g, this.down[e]!, n);
      if (db) k.addBias(y, db.subarray(e * D, (e + 1) * D), n);
      const ds = this.downScale?.[e];
      if (ds !== undefined) for (let j = 0; j < n * D; j++) y[j] = y[j]! * ds;
      mine.forEach((pair, i) => {
        const w = routing.weights[pair]!;
        const at = ((pair % K) * T + ((pair / K) | 0)) * D;
        // f32 products (a Float32Array store rounds the f64 product of two f32 values exactly as f32 multiplication)
        for (let j = 0; j < D; j++) slots[at + j] = y[i * D + j]! * w;
      });
    }

    // each token sums its slots best first, in f32 (llama.cpp's chain of ggml_add)
    if (K === 1) out.set(slots.subarray(0, T * D));
    else k.add(out, slots.subarray(0, T * D), slots.subarray(T * D, 2 * T * D), T * D);
    for (let s = 2; s < K; s++) k.add(out, out, slots.subarray(s * T * D, (s + 1) * T * D), T * D);
  }
}

/** the smallest gap between a token's k-th and (k+1)-th router logit seen so far, over these layers */
export function minRoutingGapOf(ffns: readonly MoeFfn[]): number {
  return Math.min(...ffns.map((f) => f.minRoutingGap));
}
