// A routed mixture-of-experts FFN (Qwen3-MoE's, Qwen3.5-MoE's, Gemma 4's, gpt-oss's; llama.cpp's
// build_moe_ffn with softmax gating and SwiGLU or GeGLU experts): for a batch of T tokens, route
// all of them here, then run the routed experts as one kernel (Kernels.moeExperts): per expert
// with at least one token, its tokens' rows gathered, gate/up, the activation and down over them
// as one matmul batch, every expert's work spread over the threads at once; each token then sums
// its k experts' weighted outputs in the order the router ranked them, as llama.cpp adds them. A
// token's result depends on its own row only (the same expert weights, its own routing),
// whichever tokens share the expert's batch.
// A file may hold gate and up fused per expert (ffn_gate_up_exps [hidden, 2·F, E]: gate rows
// then up rows, as Gemma 4's converter writes them), and a per-expert scale of the down
// projection's output (ffn_down_exps.scale [E]: Gemma 4's per_expert_scale), applied before
// the routing weight as build_lora_mm_id does. gpt-oss adds biases to the router and to each
// expert's gate, up and down (ffn_*.bias, ggml_add_id), chooses the top k on the raw logits
// with a softmax over those k, and clamps its SwiGLU (oai-moe.ts).
import type { ExpertActivation, ExpertWeights, Kernels } from '../../kernels/index.js';
import type { MoeParams, TensorSource } from '../weights.js';
import type { WeightTensor } from '../../tensor/weight-tensor.js';
import { expertTensorName, moeTensorNames } from '../gguf-config-moe.js';
import type { Scratch } from './architecture.js';
import { loadVector } from './architecture.js';
import { GGMLType } from '../../tensor/weight-types.js';
import { routeTopKSoftmax } from './oai-moe.js';
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

export type { ExpertActivation } from '../../kernels/index.js';

/** How router logits become the k experts and their weights: 'softmax' over all experts, then
 *  the top k (renormalized when normTopK); 'topk-softmax': the top k logits, then a softmax over them (gpt-oss). */
export type ExpertGating = 'softmax' | 'topk-softmax';

/** One layer's routed FFN: the router, per-expert views of the expert tensors, and counters. */
export class MoeFfn {
  private readonly router: WeightTensor;
  /** [E] added to the router's logits (ffn_gate_inp.bias), or undefined */
  private readonly routerBias: Float32Array | undefined;
  /** the experts, their biases and down scale, as the moeExperts kernel takes them */
  private readonly experts: ExpertWeights;
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
    hiddenSize: number,
    activation: ExpertActivation = 'silu',
    private readonly gating: ExpertGating = 'softmax',
  ) {
    const names = moeTensorNames(li);
    const fused = `blk.${li}.ffn_gate_up_exps.weight`;
    // a GGUF file's 3-D tensor per layer, else (an HF folder) one matrix per expert
    const hf = !tensors.has(names.gate);
    // llama.cpp's converter writes the router in F32 whatever the checkpoint's dtype: an HF
    // folder's is widened here the same way (a few hundred KB), so its logits round as the GGUF's
    this.router = hf ? widenToF32(tensors.get(names.router)) : tensors.get(names.router);
    const views = (which: 'gate' | 'up' | 'down'): WeightTensor[] =>
      tensors.has(names[which])
        ? expertViews(tensors.get(names[which]), params.numExperts)
        : Array.from({ length: params.numExperts }, (_, e) => tensors.get(expertTensorName(li, which, e)));
    const stackedData = (name: string): Uint8Array | undefined => (tensors.has(name) ? tensors.get(name).data : undefined);
    const isFused = tensors.has(fused);
    const gate = isFused ? expertViews(tensors.get(fused), params.numExperts) : views('gate');
    const up = isFused ? undefined : views('up');
    const down = views('down');
    const stackedGate = stackedData(isFused ? fused : names.gate);
    const stackedDown = stackedData(names.down);
    const stackedUp = isFused ? undefined : stackedData(names.up);
    const scale = `blk.${li}.ffn_down_exps.scale`;
    const downScale = tensors.has(scale) ? loadVector(tensors, scale) : undefined;
    if (downScale && downScale.length !== params.numExperts) throw new RangeError(`${scale}: ${downScale.length} values for ${params.numExperts} experts`);
    this.load = new Float64Array(params.numExperts);
    const vector = (name: string, width: number): Float32Array | undefined => {
      if (!tensors.has(name)) return undefined;
      const v = loadVector(tensors, name);
      if (v.length !== width * params.numExperts) throw new RangeError(`${name}: ${v.length} values, ${params.numExperts} experts of ${width} need ${width * params.numExperts}`);
      return v;
    };
    this.routerBias = vector(`blk.${li}.ffn_gate_inp.bias`, 1);
    this.experts = {
      gate,
      up,
      down,
      gateBias: vector(`blk.${li}.ffn_gate_exps.bias`, params.expertFfnSize),
      upBias: vector(`blk.${li}.ffn_up_exps.bias`, params.expertFfnSize),
      downBias: vector(`blk.${li}.ffn_down_exps.bias`, hiddenSize),
      downScale,
      activation,
      stacked: stackedGate && stackedDown && (isFused || stackedUp) ? { gate: stackedGate, up: stackedUp, down: stackedDown } : undefined,
    };
  }

  /**
   * out[t] = Σ_j weight[t, j] · expert_j(h[t]) over the k experts token t is routed to. h, out:
   * [T, hidden]; the router reads routerIn (default h: Gemma 4 routes from its own normalization).
   */
  forward(out: Float32Array, h: Float32Array, T: number, k: Kernels, scratch: Scratch, routerIn: Float32Array = h): void {
    const { numExperts: E, numExpertsUsed: K } = this.params;
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

    for (const e of routing.experts) this.load[e]!++;
    k.moeExperts(out, h, T, K, routing, this.experts);
  }
}

/** the smallest gap between a token's k-th and (k+1)-th router logit seen so far, over these layers */
export function minRoutingGapOf(ffns: readonly MoeFfn[]): number {
  return Math.min(...ffns.map((f) => f.minRoutingGap));
}
