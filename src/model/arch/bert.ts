// BERT as llama.cpp builds it (src/models/bert.cpp): token + token-type (row 0, "sentence A")
// + learned absolute position embeddings, LayerNorm, then post-norm encoder layers
// (attention with biases → residual → LayerNorm → GELU FFN → residual → LayerNorm). Every
// token attends to its whole sequence; the output is the last layer's hidden states, which
// the pooler (model/pooling.ts) turns into one vector per sequence. nomic-bert is the same
// graph with RoPE (NeoX) on q and k instead of position embeddings and a SwiGLU FFN
// (ffn_gate; llama.cpp runs it without the FFN biases).
import type { Kernels } from '../../kernels/index.js';
import type { ForwardBatch } from '../batch.js';
import type { KvCache } from '../kv-cache.js';
import type { ModelConfig, TensorSource } from '../weights.js';
import type { WeightTensor } from '../../tensor/weight-tensor.js';
import type { Architecture } from './architecture.js';
import { Scratch, loadVector, optionalVector } from './architecture.js';
import { loadQkv, projectQkv } from './qkv-projection.js';
import { wholeSequenceAttention } from './bidirectional.js';
import type { QkvProjection } from './qkv-projection.js';

interface BertLayer {
  qkv: QkvProjection;
  wo: WeightTensor;
  bo: Float32Array | undefined;
  attnOutNorm: Float32Array;
  attnOutNormBias: Float32Array;
  /** nomic-bert's SwiGLU gate: down(silu(gate·x) * up·x) */
  gate: WeightTensor | undefined;
  up: WeightTensor;
  upBias: Float32Array | undefined;
  down: WeightTensor;
  downBias: Float32Array | undefined;
  outNorm: Float32Array;
  outNormBias: Float32Array;
}

export class BertArchitecture implements Architecture {
  private readonly embedding: WeightTensor;
  /** bert's learned positions; nomic-bert rotates q and k instead */
  private readonly positionEmbedding: WeightTensor | undefined;
  /** token type 0's row: llama.cpp feeds every token as "sentence A" */
  private readonly typeRow: Float32Array | undefined;
  private readonly embedNorm: Float32Array;
  private readonly embedNormBias: Float32Array;
  private readonly scratch = new Scratch();
  private readonly layers: BertLayer[];

  constructor(
    readonly config: ModelConfig,
    tensors: TensorSource,
  ) {
    this.embedding = tensors.get('token_embd.weight');
    this.positionEmbedding = config.arch === 'nomic-bert' ? undefined : tensors.get('position_embd.weight');
    const types = optionalVector(tensors, 'token_types.weight');
    this.typeRow = types?.subarray(0, config.hiddenSize);
    this.embedNorm = loadVector(tensors, 'token_embd_norm.weight');
    this.embedNormBias = loadVector(tensors, 'token_embd_norm.bias');
    this.layers = Array.from({ length: config.numLayers }, (_, i) => {
      const p = `blk.${i}.`;
      return {
        qkv: loadQkv(tensors, p, true),
        wo: tensors.get(`${p}attn_output.weight`),
        bo: optionalVector(tensors, `${p}attn_output.bias`),
        attnOutNorm: loadVector(tensors, `${p}attn_output_norm.weight`),
        attnOutNormBias: loadVector(tensors, `${p}attn_output_norm.bias`),
        gate: tensors.has(`${p}ffn_gate.weight`) ? tensors.get(`${p}ffn_gate.weight`) : undefined,
        up: tensors.get(`${p}ffn_up.weight`),
        upBias: optionalVector(tensors, `${p}ffn_up.bias`),
        down: tensors.get(`${p}ffn_down.weight`),
        downBias: optionalVector(tensors, `${p}ffn_down.bias`),
        outNorm: loadVector(tensors, `${p}layer_output_norm.weight`),
        outNormBias: loadVector(tensors, `${p}layer_output_norm.bias`),
      };
    });
  }

  forward(): Float32Array {
    throw new Error('bert is an encoder: it pools hidden states (hiddenStates), it has no next-token logits');
  }

  hiddenStates(batch: ForwardBatch, kv: KvCache, k: Kernels): Float32Array {
    const c = this.config;
    const n = batch.tokenIds.length;
    const d = c.hiddenSize;
    const qWidth = c.numHeads * c.headDim;
    const kvWidth = c.numKvHeads * c.headDim;
    const x = this.scratch.take('x', n * d);
    const h = this.scratch.take('h', n * d);
    const q = this.scratch.take('q', n * qWidth);
    const kk = this.scratch.take('kk', n * kvWidth);
    const v = this.scratch.take('v', n * kvWidth);
    const attn = this.scratch.take('attn', n * qWidth);
    const ffn = this.scratch.take('ffn', n * c.ffnSize);
    const up = this.scratch.take('up', n * c.ffnSize);
    const attnShape = { numHeads: c.numHeads, numKvHeads: c.numKvHeads, headDim: c.headDim, scale: 1 / Math.sqrt(c.headDim) };
    const whole = wholeSequenceAttention(batch);

    k.embedRows(x, this.embedding, batch.tokenIds);
    if (this.typeRow) k.addBias(x, this.typeRow, n);
    if (this.positionEmbedding) {
      k.embedRows(h, this.positionEmbedding, batch.positions);
      k.add(x, h, x, n * d);
    }
    k.layerNorm(x, x, this.embedNorm, this.embedNormBias, n, d, c.normEps);
    this.layers.forEach((layer, li) => {
      projectQkv(k, this.scratch, layer.qkv, x, n, q, kk, v, qWidth, kvWidth);
      if (!this.positionEmbedding) {
        k.rope(q, batch.positions, c.numHeads, c.headDim, c.ropeDim, c.ropeBase, c.ropeStyle);
        k.rope(kk, batch.positions, c.numKvHeads, c.headDim, c.ropeDim, c.ropeBase, c.ropeStyle);
      }
      const cacheLayer = kv.layers[li]!;
      k.writeKv(cacheLayer, kv.shape, kk, v, batch.slotMapping);
      k.attention(attn, q, cacheLayer, kv.shape, whole, attnShape);
      k.matmul(h, attn, layer.wo, n);
      if (layer.bo) k.addBias(h, layer.bo, n);
      k.add(x, h, x, n * d);
      k.layerNorm(x, x, layer.attnOutNorm, layer.attnOutNormBias, n, d, c.normEps);

      if (layer.gate) {
        // llama.cpp's LLM_FFN_SILU + LLM_FFN_PAR branch: no biases
        k.matmulSet(x, n, [{ out: ffn, w: layer.gate }, { out: up, w: layer.up }]);
        k.siluMul(ffn, ffn, up, n * c.ffnSize);
        k.matmul(h, ffn, layer.down, n);
      } else {
        k.matmul(ffn, x, layer.up, n);
        if (layer.upBias) k.addBias(ffn, layer.upBias, n);
        k.gelu(ffn, ffn, n * c.ffnSize);
        k.matmul(h, ffn, layer.down, n);
        if (layer.downBias) k.addBias(h, layer.downBias, n);
      }
      k.add(x, h, x, n * d);
      k.layerNorm(x, x, layer.outNorm, layer.outNormBias, n, d, c.normEps);
    });
    return x;
  }
}
