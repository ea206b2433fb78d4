// Gemma 4 (E2B/E4B/31B dense) as llama.cpp's src/models/gemma4.cpp runs it: embeddings scaled
// by √hidden, and (E2B/E4B) per-layer token inputs; per layer RMSNorm → q (per-head RMSNorm)
// and, on layers that keep KV, k (per-head RMSNorm) and v (plain RMSNorm) → NeoX RoPE (sliding
// layers: their own head size, base and rotated dims; global layers: rope_freqs divisors) →
// attention with scale 1 (sliding layers over their window; shared-KV layers read the cache of
// an earlier layer of their kind) → o → post-attention RMSNorm → residual; RMSNorm →
// GELU-tanh(gate)·up → down → post-FFN RMSNorm → residual (26B-A4B: the dense MLP's output
// RMSNorm'd, plus routed GeGLU experts over their own RMSNorm of the residual, routed from
// RMSNorm(x)/√hidden·scale, RMSNorm'd after: then the post-FFN norm); then the per-layer input:
// GELU(x·G)·input → projection → RMSNorm → residual; the residual × layer_output_scale.
// Final RMSNorm, the output projection, the final logit soft-cap.
import type { AttentionBatch, Kernels } from '../../kernels/index.js';
import type { ForwardBatch } from '../batch.js';
import type { KvCache } from '../kv-cache.js';
import type { Gemma4Params, ModelConfig, TensorSource } from '../weights.js';
import type { WeightTensor } from '../../tensor/weight-tensor.js';
import type { Architecture } from './architecture.js';
import { Scratch, loadVector, outputWeight, rmsNormLogits } from './architecture.js';
import { layerSlice, loadGemma4Layers, loadPerLayerEmbedding, perLayerInputs } from './gemma4-layers.js';
import type { Gemma4Layer, Gemma4Moe, PerLayerEmbedding } from './gemma4-layers.js';
import { minRoutingGapOf } from './moe.js';
import { attentionView, writeInputEmbeds } from './input-embeds.js';

export class Gemma4Architecture implements Architecture {
  private readonly embedding: WeightTensor;
  private readonly outputNorm: Float32Array;
  private readonly output: WeightTensor;
  private readonly scratch = new Scratch();
  private readonly layers: Gemma4Layer[];
  private readonly params: Gemma4Params;
  private readonly perLayer: PerLayerEmbedding | undefined;
  private readonly finalSoftcap: number;
  /** ones, for v's RMSNorm without a weight */
  private readonly ones: Float32Array;
  /** [hidden] ones, for the router's RMSNorm without a weight (MoE layers) */
  private readonly hiddenOnes: Float32Array;
  /** widest q, kv and FFN rows over the layers (the scratch sizes) */
  private readonly widths: { q: number; kv: number; ffn: number };

  constructor(
    readonly config: ModelConfig,
    tensors: TensorSource,
    contextLength = config.contextLength,
  ) {
    if (!config.gemma4 || !config.slidingWindow) throw new Error('gemma4: Gemma 4 parameters missing from the model config');
    this.params = config.gemma4;
    this.finalSoftcap = config.gemma?.finalSoftcap ?? 0;
    this.embedding = tensors.get('token_embd.weight');
    this.outputNorm = loadVector(tensors, 'output_norm.weight');
    this.output = outputWeight(tensors);
    this.layers = loadGemma4Layers(config, this.params, tensors, contextLength);
    this.perLayer = loadPerLayerEmbedding(this.params, tensors);
    this.ones = new Float32Array(Math.max(...this.layers.map((l) => l.headDim))).fill(1);
    this.hiddenOnes = new Float32Array(config.hiddenSize).fill(1);
    this.widths = {
      q: Math.max(...this.layers.map((l) => config.numHeads * l.headDim)),
      kv: Math.max(...this.layers.map((l) => l.numKvHeads * l.headDim)),
      ffn: Math.max(...this.layers.map((l) => l.ffnSize)),
    };
  }

  forward(batch: ForwardBatch, kv: KvCache, k: Kernels): Float32Array {
    const c = this.config;
    const n = batch.tokenIds.length;
    const hidden = c.hiddenSize;
    const pl = this.params.perLayerInput;
    const x = this.scratch.take('x', n * hidden); // residual stream [n, hidden]
    const h = this.scratch.take('h', n * hidden);
    const q = this.scratch.take('q', n * this.widths.q);
    const kk = this.scratch.take('kk', n * this.widths.kv);
    const v = this.scratch.take('v', n * this.widths.kv);
    const attn = this.scratch.take('attn', n * this.widths.q);
    const gate = this.scratch.take('gate', n * this.widths.ffn);
    const up = this.scratch.take('up', n * this.widths.ffn);
    // sliding-window layers may keep their KV in a pool of their own, with its own block tables
    const att = attentionView(batch);
    const swaBatch: AttentionBatch = batch.swa ? { ...att, blockTables: batch.swa.blockTables, maxBlocksPerSeq: batch.swa.maxBlocksPerSeq } : batch;

    k.embedRows(x, this.embedding, batch.tokenIds);
    scaleInPlace(x, n * hidden, Math.fround(Math.sqrt(hidden)));
    // image rows unscaled (llama.cpp's gemma4 graph); their per-layer inputs read token 0's row, as llama.cpp's
    // multimodal path does: an image row's token id is 0 (engine/image-spans.ts)
    writeInputEmbeds(x, batch, hidden);
    const inputs = this.perLayer && perLayerInputs(this.perLayer, x, batch.tokenIds, c, pl, this.scratch, k);
    this.layers.forEach((layer, li) => {
      const qWidth = c.numHeads * layer.headDim;
      const kvWidth = layer.numKvHeads * layer.headDim;
      const qs = q.subarray(0, n * qWidth);
      const pooled = layer.window > 0 && batch.swa !== undefined;
      const ks = kk.subarray(0, n * kvWidth);
      const vs = v.subarray(0, n * kvWidth);
      k.rmsNorm(h, x, layer.attnNorm, n, hidden, c.normEps);
      // q, and k/v where the layer keeps KV, from one pass over h
      k.matmulSet(h, n, [
        { out: qs, w: layer.wq },
        ...(layer.kv ? [{ out: ks, w: layer.kv.wk }] : []),
        ...(layer.kv?.wv ? [{ out: vs, w: layer.kv.wv }] : []),
      ]);
      k.rmsNorm(qs, qs, layer.qNorm, n * c.numHeads, layer.headDim, c.normEps);
      k.rope(qs, batch.positions, c.numHeads, layer.headDim, layer.ropeDim, layer.ropeBase, 'neox', layer.ropeScaling);
      if (layer.kv) {
        if (!layer.kv.wv) vs.set(ks);
        k.rmsNorm(ks, ks, layer.kv.kNorm, n * layer.numKvHeads, layer.headDim, c.normEps);
        k.rmsNorm(vs, vs, this.ones.subarray(0, layer.headDim), n * layer.numKvHeads, layer.headDim, c.normEps);
        k.rope(ks, batch.positions, layer.numKvHeads, layer.headDim, layer.ropeDim, layer.ropeBase, 'neox', layer.ropeScaling);
        k.writeKv(kv.layers[li]!, kv.layerShape(li), ks, vs, pooled ? batch.swa!.slotMapping : batch.slotMapping);
      }
      // a shared-KV layer's cache entry is its source layer's arrays (KvCache), so this reads those
      const shape = { numHeads: c.numHeads, numKvHeads: layer.numKvHeads, headDim: layer.headDim, scale: 1, window: layer.window };
      const out = attn.subarray(0, n * qWidth);
      // an image is non-causal in the sliding layers only (llama.cpp's LLAMA_NON_CAUSAL_TYPE_SWA_ONLY for gemma4)
      k.attention(out, qs, kv.layers[li]!, kv.layerShape(li), layer.window === 0 ? batch : pooled ? swaBatch : att, shape);
      k.matmul(h, out, layer.wo, n);
      k.rmsNorm(h, h, layer.attnPostNorm, n, hidden, c.normEps);
      k.add(x, x, h, n * hidden);

      const f = layer.ffnSize;
      k.rmsNorm(h, x, layer.ffnNorm, n, hidden, c.normEps);
      k.matmulSet(h, n, [{ out: gate.subarray(0, n * f), w: layer.gate }, { out: up.subarray(0, n * f), w: layer.up }]);
      k.geluMul(gate, gate, up, n * f);
      k.matmul(h, gate.subarray(0, n * f), layer.down, n);
      if (layer.moe) this.experts(h, x, layer.moe, n, k);
      k.rmsNorm(h, h, layer.ffnPostNorm, n, hidden, c.normEps);
      k.add(x, x, h, n * hidden);

      if (layer.perLayer && inputs) {
        const g = gate.subarray(0, n * pl);
        const input = layerSlice(inputs, li, n, c.numLayers, pl, up.subarray(0, n * pl));
        k.matmul(g, x, layer.perLayer.gate, n);
        k.geluMul(g, g, input, n * pl);
        k.matmul(h, g, layer.perLayer.proj, n);
        k.rmsNorm(h, h, layer.perLayer.postNorm, n, hidden, c.normEps);
        k.add(x, x, h, n * hidden);
      }
      if (layer.outScale !== 1) scaleInPlace(x, n * hidden, layer.outScale);
    });

    return this.logits(x, batch, k);
  }

  /**
   * A MoE layer's FFN output (gemma4.cpp): mlp [n, hidden], the dense MLP's output, becomes
   * RMSNorm_1(mlp) + RMSNorm_2(experts(RMSNorm_pre2(x))), the experts routed from
   * RMSNorm(x) · 1/√hidden · ffn_gate_inp.scale (each step rounded to f32 as ggml's ops are).
   */
  private experts(mlp: Float32Array, x: Float32Array, moe: Gemma4Moe, n: number, k: Kernels): void {
    const c = this.config;
    const hidden = c.hiddenSize;
    k.rmsNorm(mlp, mlp, moe.mlpPostNorm, n, hidden, c.normEps);
    const input = this.scratch.take('g4.expertsIn', n * hidden);
    const router = this.scratch.take('g4.routerIn', n * hidden);
    const out = this.scratch.take('g4.experts', n * hidden);
    k.rmsNorm(input, x, moe.preNorm, n, hidden, c.normEps);
    k.rmsNorm(router, x, this.hiddenOnes, n, hidden, c.normEps);
    const f = Math.fround;
    const inv = f(1 / f(Math.sqrt(hidden)));
    for (let i = 0; i < n * hidden; i++) router[i] = f(router[i]! * inv) * moe.routerScale[i % hidden]!;
    moe.ffn.forward(out, input, n, k, this.scratch, router);
    k.rmsNorm(out, out, moe.postNorm, n, hidden, c.normEps);
    k.add(mlp, mlp, out, n * hidden);
  }

  /** per MoE layer, the tokens routed to each expert so far ([numExperts] each); undefined for a dense model */
  get expertLoad(): readonly Float64Array[] | undefined {
    return this.config.moe ? this.layers.flatMap((l) => (l.moe ? [l.moe.ffn.load] : [])) : undefined;
  }

  /** the smallest gap between a token's k-th and (k+1)-th router logit seen so far, over every MoE layer */
  get minRoutingGap(): number {
    return minRoutingGapOf(this.layers.flatMap((l) => (l.moe ? [l.moe.ffn] : [])));
  }

  /** zeroes the expert counters and forgets the routing margin seen */
  resetExpertLoad(): void {
    for (const l of this.layers) l.moe?.ffn.resetCounters();
  }

  private logits(x: Float32Array, batch: ForwardBatch, k: Kernels): Float32Array {
    const c = this.config;
    const logits = rmsNormLogits(x, batch.logitIndices, this.outputNorm, this.output, c, this.scratch, k);
    if (this.finalSoftcap > 0) k.softcap(logits, batch.logitIndices.length * c.vocabSize, this.finalSoftcap);
    return logits;
  }
}

/** x[i] = f32(x[i] · s), as ggml_scale / ggml_mul by a scalar */
function scaleInPlace(x: Float32Array, n: number, s: number): void {
  for (let i = 0; i < n; i++) x[i] = x[i]! * s;
}
