// gpt-oss (gpt-oss-20b, gpt-oss-120b) as llama.cpp's openai-moe graph runs it: per layer
// RMSNorm → q/k/v with biases → NeoX RoPE (YaRN) → attention with a learned sink logit per
// head (every other layer, from layer 0, over a sliding window) → o with bias → residual;
// RMSNorm (post_attention_norm) → routed experts (moe.ts: biased router, top k on the raw
// logits then a softmax over the k, biased gate/up/down, OpenAI's clamped SwiGLU) → residual;
// final RMSNorm and the output head.
import type { AttentionBatch, AttentionShape, Kernels } from '../../kernels/index.js';
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

interface GptOssLayer {
  attnNorm: Float32Array;
  wq: WeightTensor;
  wk: WeightTensor;
  wv: WeightTensor;
  bq: Float32Array;
  bk: Float32Array;
  bv: Float32Array;
  wo: WeightTensor;
  bo: Float32Array;
  /** [numHeads] */
  sinks: Float32Array;
  postAttnNorm: Float32Array;
  ffn: MoeFfn;
  /** 0 for a full-attention layer */
  window: number;
  ropeBase: number;
}

export class GptOssArchitecture implements Architecture {
  private readonly embedding: WeightTensor;
  private readonly outputNorm: Float32Array;
  private readonly output: WeightTensor;
  private readonly scratch = new Scratch();
  private readonly layers: GptOssLayer[];
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
    const sw = config.slidingWindow;
    this.layers = Array.from({ length: config.numLayers }, (_, i) => {
      const p = `blk.${i}.`;
      const sliding = sw?.layers[i] === true;
      const sinks = loadVector(tensors, `${p}attn_sinks.weight`);
      if (sinks.length !== config.numHeads) throw new RangeError(`${p}attn_sinks.weight: ${sinks.length} values for ${config.numHeads} heads`);
      return {
        attnNorm: loadVector(tensors, `${p}attn_norm.weight`),
        wq: tensors.get(`${p}attn_q.weight`),
        wk: tensors.get(`${p}attn_k.weight`),
        wv: tensors.get(`${p}attn_v.weight`),
        bq: loadVector(tensors, `${p}attn_q.bias`),
        bk: loadVector(tensors, `${p}attn_k.bias`),
        bv: loadVector(tensors, `${p}attn_v.bias`),
        wo: tensors.get(`${p}attn_output.weight`),
        bo: loadVector(tensors, `${p}attn_output.bias`),
        sinks,
        postAttnNorm: loadVector(tensors, `${p}post_attention_norm.weight`),
        ffn: new MoeFfn(tensors, i, this.moe, config.hiddenSize, 'swiglu-oai', 'topk-softmax'),
        window: sliding ? sw!.size : 0,
        ropeBase: sliding ? sw!.ropeBase : config.ropeBase,
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
    const D = c.hiddenSize;
    const qWidth = c.numHeads * c.headDim;
    const kvWidth = c.numKvHeads * c.headDim;
    const x = this.scratch.take('x', n * D); // residual stream [n, hidden]
    const h = this.scratch.take('h', n * D);
    const f = this.scratch.take('f', n * D);
    const q = this.scratch.take('q', n * qWidth);
    const kk = this.scratch.take('kk', n * kvWidth);
    const v = this.scratch.take('v', n * kvWidth);
    const attn = this.scratch.take('attn', n * qWidth);
    const base = { numHeads: c.numHeads, numKvHeads: c.numKvHeads, headDim: c.headDim, scale: 1 / Math.sqrt(c.headDim) };
    // sliding-window layers may keep their KV in a pool of their own, with its own block tables
    const att = attentionView(batch);
    const swaBatch: AttentionBatch = batch.swa ? { ...att, blockTables: batch.swa.blockTables, maxBlocksPerSeq: batch.swa.maxBlocksPerSeq } : batch;

    k.embedRows(x, this.embedding, batch.tokenIds);
    writeInputEmbeds(x, batch, D);
    this.layers.forEach((layer, li) => {
      k.rmsNorm(h, x, layer.attnNorm, n, D, c.normEps);
      k.matmulSet(h, n, [{ out: q, w: layer.wq }, { out: kk, w: layer.wk }, { out: v, w: layer.wv }]);
      k.addBias(q, layer.bq, n);
      k.addBias(kk, layer.bk, n);
      k.addBias(v, layer.bv, n);
      k.rope(q, batch.positions, c.numHeads, c.headDim, c.ropeDim, layer.ropeBase, c.ropeStyle, this.ropeScaling);
      k.rope(kk, batch.positions, c.numKvHeads, c.headDim, c.ropeDim, layer.ropeBase, c.ropeStyle, this.ropeScaling);
      const pooled = layer.window > 0 && batch.swa !== undefined;
      const shape: AttentionShape = { ...base, window: layer.window, sinks: layer.sinks };
      k.writeKv(kv.layers[li]!, kv.layerShape(li), kk, v, pooled ? batch.swa!.slotMapping : batch.slotMapping);
      k.attention(attn, q, kv.layers[li]!, kv.layerShape(li), pooled ? swaBatch : att, shape);
      k.matmul(h, attn, layer.wo, n);
      k.addBias(h, layer.bo, n);
      k.add(x, x, h, n * D);

      k.rmsNorm(h, x, layer.postAttnNorm, n, D, c.normEps);
      layer.ffn.forward(f, h, n, k, this.scratch);
      k.add(x, x, f, n * D);
    });

    return rmsNormLogits(x, batch.logitIndices, this.outputNorm, this.output, c, this.scratch, k);
  }
}
