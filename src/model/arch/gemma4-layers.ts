// Gemma 4's weights per layer (llama.cpp's llama_model_gemma4::load_arch_tensors names) and
// its per-layer token inputs (build_inp_per_layer + project_per_layer_inputs in gemma4.cpp).
import type { Kernels } from '../../kernels/index.js';
import { NO_SCALING, ropeScalingAt } from '../../tensor/rope-scaling.js';
import type { RopeScaling } from '../../tensor/rope-scaling.js';
import { layerAttention, ownsKv } from '../weights.js';
import type { Gemma4Params, ModelConfig, TensorSource } from '../weights.js';
import type { WeightTensor } from '../../tensor/weight-tensor.js';
import { loadVector } from './architecture.js';
import type { Scratch } from './architecture.js';
import { MoeFfn } from './moe.js';

/** A 26B-A4B layer's experts beside its dense MLP (llama.cpp's gemma4.cpp is_moe_layer). */
export interface Gemma4Moe {
  /** GeGLU experts; ffn_gate_inp routes, ffn_down_exps.scale scales each expert's output */
  ffn: MoeFfn;
  /** [hidden] ffn_gate_inp.scale: the router's input is RMSNorm(x) / √hidden · this */
  routerScale: Float32Array;
  /** pre_ffw_norm_2: the experts' input norm */
  preNorm: Float32Array;
  /** post_ffw_norm_1: the dense MLP's output norm */
  mlpPostNorm: Float32Array;
  /** post_ffw_norm_2: the experts' output norm */
  postNorm: Float32Array;
}

export interface Gemma4Layer {
  attnNorm: Float32Array;
  wq: WeightTensor;
  qNorm: Float32Array;
  /** the layer's own k/v/k-norm; absent on shared-KV layers (they read an earlier layer's cache) */
  kv: { wk: WeightTensor; wv: WeightTensor | undefined; kNorm: Float32Array } | undefined;
  wo: WeightTensor;
  attnPostNorm: Float32Array;
  ffnNorm: Float32Array;
  gate: WeightTensor;
  up: WeightTensor;
  down: WeightTensor;
  ffnPostNorm: Float32Array;
  ffnSize: number;
  numKvHeads: number;
  headDim: number;
  ropeDim: number;
  ropeBase: number;
  ropeScaling: RopeScaling | undefined;
  /** 0 for a global layer */
  window: number;
  /** the per-layer input's gate [hidden → perLayerInput], projection back and its norm */
  perLayer: { gate: WeightTensor; proj: WeightTensor; postNorm: Float32Array } | undefined;
  /** layer_output_scale: multiplies the residual stream after the layer; 1 when absent */
  outScale: number;
  /** the experts beside the dense MLP (26B-A4B); absent on a dense layer */
  moe: Gemma4Moe | undefined;
}

export function loadGemma4Layers(config: ModelConfig, params: Gemma4Params, tensors: TensorSource, contextLength: number): Gemma4Layer[] {
  const sw = config.slidingWindow!;
  // full-attention layers: the file's RoPE scaling (if any) with rope_freqs' divisors
  // ("proportional" RoPE: pairs past the rotated quarter get 1e30, i.e. stay put)
  const global = ropeScalingAt(config.ropeScaling, contextLength);
  const globalScaling = params.globalFreqFactors ? { ...(global ?? NO_SCALING), freqFactors: params.globalFreqFactors } : global;
  return Array.from({ length: config.numLayers }, (_, i) => {
    const p = `blk.${i}.`;
    const a = layerAttention(config, i);
    const scale = tensors.has(`${p}layer_output_scale.weight`) ? loadVector(tensors, `${p}layer_output_scale.weight`)[0]! : 1;
    return {
      attnNorm: loadVector(tensors, `${p}attn_norm.weight`),
      wq: tensors.get(`${p}attn_q.weight`),
      qNorm: loadVector(tensors, `${p}attn_q_norm.weight`),
      kv: ownsKv(config, i)
        ? {
            wk: tensors.get(`${p}attn_k.weight`),
            // attention_k_eq_v checkpoints have no v projection: V is K's projection
            wv: tensors.has(`${p}attn_v.weight`) ? tensors.get(`${p}attn_v.weight`) : undefined,
            kNorm: loadVector(tensors, `${p}attn_k_norm.weight`),
          }
        : undefined,
      wo: tensors.get(`${p}attn_output.weight`),
      attnPostNorm: loadVector(tensors, `${p}post_attention_norm.weight`),
      ffnNorm: loadVector(tensors, `${p}ffn_norm.weight`),
      gate: tensors.get(`${p}ffn_gate.weight`),
      up: tensors.get(`${p}ffn_up.weight`),
      down: tensors.get(`${p}ffn_down.weight`),
      ffnPostNorm: loadVector(tensors, `${p}post_ffw_norm.weight`),
      ffnSize: params.ffnSizes[i]!,
      numKvHeads: a.numKvHeads,
      headDim: a.headDim,
      ropeDim: a.ropeDim,
      ropeBase: a.sliding ? sw.ropeBase : config.ropeBase,
      ropeScaling: a.sliding ? undefined : globalScaling,
      window: a.sliding ? sw.size : 0,
      perLayer:
        params.perLayerInput > 0
          ? { gate: tensors.get(`${p}inp_gate.weight`), proj: tensors.get(`${p}proj.weight`), postNorm: loadVector(tensors, `${p}post_norm.weight`) }
          : undefined,
      outScale: scale,
      moe: config.moe && tensors.has(`${p}ffn_gate_inp.weight`)
        ? {
            ffn: new MoeFfn(tensors, i, config.moe, config.hiddenSize, 'gelu'),
            routerScale: loadVector(tensors, `${p}ffn_gate_inp.scale`),
            preNorm: loadVector(tensors, `${p}pre_ffw_norm_2.weight`),
            mlpPostNorm: loadVector(tensors, `${p}post_ffw_norm_1.weight`),
            postNorm: loadVector(tensors, `${p}post_ffw_norm_2.weight`),
          }
        : undefined,
    };
  });
}

/** The model-wide tensors of the per-layer inputs. */
export interface PerLayerEmbedding {
  /** [perLayerInput · numLayers, vocab]: a row per token, every layer's slice in turn */
  table: WeightTensor;
  /** [hidden → perLayerInput · numLayers] */
  modelProj: WeightTensor;
  /** [perLayerInput] */
  projNorm: Float32Array;
}

export function loadPerLayerEmbedding(params: Gemma4Params, tensors: TensorSource): PerLayerEmbedding | undefined {
  if (params.perLayerInput === 0) return undefined;
  return {
    table: tensors.get('per_layer_token_embd.weight'),
    modelProj: tensors.get('per_layer_model_proj.weight'),
    projNorm: loadVector(tensors, 'per_layer_proj_norm.weight'),
  };
}

/**
 * Each token's inputs to every layer, [n, numLayers · perLayerInput]: (RMSNorm(x·P / √hidden)
 * + E[token]·√perLayerInput) / √2, with x the scaled embeddings, P the model projection, E
 * the per-layer token table; every step rounded to f32 as ggml's scale/add are.
 */
export function perLayerInputs(
  pe: PerLayerEmbedding,
  x: Float32Array,
  tokenIds: Int32Array,
  config: ModelConfig,
  perLayerInput: number,
  scratch: Scratch,
  k: Kernels,
): Float32Array {
  const n = tokenIds.length;
  const width = perLayerInput * config.numLayers;
  const table = scratch.take('pleTable', n * width);
  const proj = scratch.take('pleProj', n * width);
  k.embedRows(table, pe.table, tokenIds);
  k.matmul(proj, x, pe.modelProj, n);
  const f = Math.fround;
  const projScale = f(1 / f(Math.sqrt(config.hiddenSize)));
  const tableScale = f(Math.sqrt(perLayerInput));
  const inputScale = f(1 / f(Math.SQRT2));
  for (let i = 0; i < n * width; i++) proj[i] = proj[i]! * projScale;
  k.rmsNorm(proj, proj, pe.projNorm, n * config.numLayers, perLayerInput, config.normEps);
  for (let i = 0; i < n * width; i++) proj[i] = f(proj[i]! + f(table[i]! * tableScale)) * inputScale;
  return proj;
}

/** Layer li's slice of the per-layer inputs, [n, perLayerInput], into out. */
export function layerSlice(inputs: Float32Array, li: number, n: number, numLayers: number, perLayerInput: number, out: Float32Array): Float32Array {
  const width = numLayers * perLayerInput;
  for (let t = 0; t < n; t++) out.set(inputs.subarray(t * width + li * perLayerInput, t * width + (li + 1) * perLayerInput), t * perLayerInput);
  return out;
}
