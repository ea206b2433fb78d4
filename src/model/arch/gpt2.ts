// GPT-2: learned positions, pre-LayerNorm blocks, fused qkv projection, GELU MLP, all with biases.
import type { Kernels } from '../../kernels/index.js';
import type { ForwardBatch } from '../batch.js';
import type { KvCache } from '../kv-cache.js';
import type { ModelConfig, TensorSource } from '../weights.js';
import type { WeightTensor } from '../../tensor/weight-tensor.js';
import type { Architecture } from './architecture.js';
import { Scratch, gatherRows, loadVector, outputWeight } from './architecture.js';

interface Gpt2Layer {
  attnNorm: Float32Array;
  attnNormBias: Float32Array;
  qkv: WeightTensor; // [hidden] → [3 * hidden]: q, then k, then v
  qkvBias: Float32Array;
  wo: WeightTensor;
  woBias: Float32Array;
  ffnNorm: Float32Array;
  ffnNormBias: Float32Array;
  up: WeightTensor;
  upBias: Float32Array;
  down: WeightTensor;
  downBias: Float32Array;
}

export class Gpt2Architecture implements Architecture {
  private readonly embedding: WeightTensor;
  private readonly positionEmbedding: WeightTensor;
  private readonly outputNorm: Float32Array;
  private readonly outputNormBias: Float32Array;
  private readonly output: WeightTensor;
  private readonly scratch = new Scratch();
  private readonly layers: Gpt2Layer[];

  constructor(
    readonly config: ModelConfig,
    tensors: TensorSource,
  ) {
    this.embedding = tensors.get('token_embd.weight');
    this.positionEmbedding = tensors.get('position_embd.weight');
    this.outputNorm = loadVector(tensors, 'output_norm.weight');
    this.outputNormBias = loadVector(tensors, 'output_norm.bias');
    this.output = outputWeight(tensors);
    this.layers = Array.from({ length: config.numLayers }, (_, i) => {
      const p = `blk.${i}.`;
      return {
        attnNorm: loadVector(tensors, `${p}attn_norm.weight`),
        attnNormBias: loadVector(tensors, `${p}attn_norm.bias`),
        qkv: tensors.get(`${p}attn_qkv.weight`),
        qkvBias: loadVector(tensors, `${p}attn_qkv.bias`),
        wo: tensors.get(`${p}attn_output.weight`),
        woBias: loadVector(tensors, `${p}attn_output.bias`),
        ffnNorm: loadVector(tensors, `${p}ffn_norm.weight`),
        ffnNormBias: loadVector(tensors, `${p}ffn_norm.bias`),
        up: tensors.get(`${p}ffn_up.weight`),
        upBias: loadVector(tensors, `${p}ffn_up.bias`),
        down: tensors.get(`${p}ffn_down.weight`),
        downBias: loadVector(tensors, `${p}ffn_down.bias`),
      };
    });
  }

  forward(batch: ForwardBatch, kv: KvCache, k: Kernels): Float32Array {
    const c = this.config;
    const n = batch.tokenIds.length;
    const d = c.hiddenSize;
    const x = this.scratch.take('x', n * d);
    const h = this.scratch.take('h', n * d);
    const qkv = this.scratch.take('qkv', n * 3 * d);
    const q = this.scratch.take('q', n * d);
    const kk = this.scratch.take('kk', n * d);
    const v = this.scratch.take('v', n * d);
    const attn = this.scratch.take('attn', n * d);
    const ffn = this.scratch.take('ffn', n * c.ffnSize);
    const attnShape = { numHeads: c.numHeads, numKvHeads: c.numKvHeads, headDim: c.headDim, scale: 1 / Math.sqrt(c.headDim) };

    k.embedRows(x, this.embedding, batch.tokenIds);
    k.embedRows(h, this.positionEmbedding, batch.positions);
    k.add(x, x, h, n * d);
    this.layers.forEach((layer, li) => {
      k.layerNorm(h, x, layer.attnNorm, layer.attnNormBias, n, d, c.normEps);
      k.matmul(qkv, h, layer.qkv, n);
      k.addBias(qkv, layer.qkvBias, n);
      for (let t = 0; t < n; t++) {
        const row = qkv.subarray(t * 3 * d, (t + 1) * 3 * d);
        q.set(row.subarray(0, d), t * d);
        kk.set(row.subarray(d, 2 * d), t * d);
        v.set(row.subarray(2 * d), t * d);
      }
      const cacheLayer = kv.layers[li]!;
      k.writeKv(cacheLayer, kv.shape, kk, v, batch.slotMapping);
      k.attention(attn, q, cacheLayer, kv.shape, batch, attnShape);
      k.matmul(h, attn, layer.wo, n);
      k.addBias(h, layer.woBias, n);
      k.add(x, x, h, n * d);

      k.layerNorm(h, x, layer.ffnNorm, layer.ffnNormBias, n, d, c.normEps);
      k.matmul(ffn, h, layer.up, n);
      k.addBias(ffn, layer.upBias, n);
      k.gelu(ffn, ffn, n * c.ffnSize);
      k.matmul(h, ffn, layer.down, n);
      k.addBias(h, layer.downBias, n);
      k.add(x, x, h, n * d);
    });

    const rows = batch.logitIndices.length;
    const last = gatherRows(x, d, batch.logitIndices, this.scratch.take('last', batch.logitIndices.length * d));
    k.layerNorm(last, last, this.outputNorm, this.outputNormBias, rows, d, c.normEps);
    const logits = this.scratch.take('logits', rows * c.vocabSize);
    k.matmul(logits, last, this.output, rows);
    return logits;
  }
}
