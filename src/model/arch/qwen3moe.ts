// Qwen3-MoE (Qwen3-30B-A3B, Qwen3-Coder-30B-A3B, Qwen3-235B-A22B) as llama.cpp's qwen3moe
// graph runs it: Qwen3's attention (per-head q/k RMSNorm, GQA, NeoX RoPE) and in every layer a
// routed mixture-of-experts FFN instead of the dense one (moe.ts: softmax router, top-k,
// weights renormalized over the k, SwiGLU experts, batched by expert).
import type { Kernels } from '../../kernels/index.js';
import type { ForwardBatch } from '../batch.js';
import type { KvCache } from '../kv-cache.js';
import type { ModelConfig, MoeParams, TensorSource } from '../weights.js';
import type { WeightTensor } from '../../tensor/weight-tensor.js';
import type { Architecture } from './architecture.js';
import { Scratch, rmsNormLogits, loadVector, outputWeight } from './architecture.js';
import { MoeFfn, minRoutingGapOf } from './moe.js';
import { ropeScalingAt } from '../../tensor/rope-scaling.js';
import type { RopeScaling } from '../../tensor/rope-scaling.js';
import { attentionView, writeInputEmbeds } from './input-embeds.js';

interface Qwen3MoeLayer {
  attnNorm: Float32Array;
  wq: WeightTensor;
  wk: WeightTensor;
  wv: WeightTensor;
  qNorm: Float32Array; // [headDim]
  kNorm: Float32Array;
  wo: WeightTensor;
  ffnNorm: Float32Array;
  ffn: MoeFfn;
}

export class Qwen3MoeArchitecture implements Architecture {
  private readonly embedding: WeightTensor;
  private readonly outputNorm: Float32Array;
  private readonly output: WeightTensor;
  private readonly scratch = new Scratch();
  private readonly layers: Qwen3MoeLayer[];
  private readonly ropeScaling: RopeScaling | undefined;
  readonly moe: MoeParams;

  constructor(
    readonly config: ModelConfig,
    tensors: TensorSource,
    contextLength = config.contextLength,
  ) {
    if (!config.moe) throw new Error(`${config.arch}: the config has no mixture-of-experts parameters`);
    this.moe = config.moe;
    this.ropeScaling = ropeScalingAt(config.ropeScaling, contextLength);
    this.embedding = tensors.get('token_embd.weight');
    this.outputNorm = loadVector(tensors, 'output_norm.weight');
    this.output = outputWeight(tensors);
    this.layers = Array.from({ length: config.numLayers }, (_, i) => {
      const p = `blk.${i}.`;
      return {
        attnNorm: loadVector(tensors, `${p}attn_norm.weight`),
        wq: tensors.get(`${p}attn_q.weight`),
        wk: tensors.get(`${p}attn_k.weight`),
        wv: tensors.get(`${p}attn_v.weight`),
        qNorm: loadVector(tensors, `${p}attn_q_norm.weight`),
        kNorm: loadVector(tensors, `${p}attn_k_norm.weight`),
        wo: tensors.get(`${p}attn_output.weight`),
        ffnNorm: loadVector(tensors, `${p}ffn_norm.weight`),
        ffn: new MoeFfn(tensors, i, this.moe, config.hiddenSize),
      };
    });
  }

  /** per layer, the tokens routed to each expert so far ([numExperts] each; a bench or profile reads them) */
  get expertLoad(): readonly Float64Array[] {
    return this.layers.map((l) => l.ffn.load);
  }

  /** the smallest gap between a token's k-th and (k+1)-th router logit seen so far, over every layer */
  get minRoutingGap(): number {
    return minRoutingGapOf(this.layers.map((l) => l.ffn));
  }

  resetExpertLoad(): void {
    for (const l of this.layers) l.ffn.resetCounters();
  }

  forward(batch: ForwardBatch, kv: KvCache, k: Kernels): Float32Array {
    const c = this.config;
    const n = batch.tokenIds.length;
    const qWidth = c.numHeads * c.headDim;
    const kvWidth = c.numKvHeads * c.headDim;
    const x = this.scratch.take('x', n * c.hiddenSize); // residual stream [n, hidden]
    const h = this.scratch.take('h', n * c.hiddenSize);
    const f = this.scratch.take('f', n * c.hiddenSize);
    const q = this.scratch.take('q', n * qWidth);
    const kk = this.scratch.take('kk', n * kvWidth);
    const v = this.scratch.take('v', n * kvWidth);
    const attn = this.scratch.take('attn', n * qWidth);
    const attnShape = { numHeads: c.numHeads, numKvHeads: c.numKvHeads, headDim: c.headDim, scale: 1 / Math.sqrt(c.headDim) };

    k.embedRows(x, this.embedding, batch.tokenIds);
    writeInputEmbeds(x, batch, c.hiddenSize);
    this.layers.forEach((layer, li) => {
      k.rmsNorm(h, x, layer.attnNorm, n, c.hiddenSize, c.normEps);
      k.matmulSet(h, n, [{ out: q, w: layer.wq }, { out: kk, w: layer.wk }, { out: v, w: layer.wv }]);
      k.rmsNorm(q, q, layer.qNorm, n * c.numHeads, c.headDim, c.normEps);
      k.rmsNorm(kk, kk, layer.kNorm, n * c.numKvHeads, c.headDim, c.normEps);
      k.rope(q, batch.positions, c.numHeads, c.headDim, c.ropeDim, c.ropeBase, c.ropeStyle, this.ropeScaling);
      k.rope(kk, batch.positions, c.numKvHeads, c.headDim, c.ropeDim, c.ropeBase, c.ropeStyle, this.ropeScaling);
      const cacheLayer = kv.layers[li]!;
      k.writeKv(cacheLayer, kv.shape, kk, v, batch.slotMapping);
      k.attention(attn, q, cacheLayer, kv.shape, attentionView(batch), attnShape);
      k.matmul(h, attn, layer.wo, n);
      k.add(x, x, h, n * c.hiddenSize);

      k.rmsNorm(h, x, layer.ffnNorm, n, c.hiddenSize, c.normEps);
      layer.ffn.forward(f, h, n, k, this.scratch);
      k.add(x, x, f, n * c.hiddenSize);
    });

    return rmsNormLogits(x, batch.logitIndices, this.outputNorm, this.output, c, this.scratch, k);
  }
}
