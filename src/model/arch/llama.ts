// The Llama-family decoder: Llama 2/3, Mistral, SmolLM, TinyLlama, and Qwen2 (q/k/v
// bias), Qwen3 (per-head q/k RMSNorm), Phi-3/4 (fused attn_qkv, ffn_up holding gate then up)
// and SmolLM3 (no RoPE on some layers), which differ only in tensors and config that exist or not.
import type { Kernels } from '../../kernels/index.js';
import type { ForwardBatch } from '../batch.js';
import type { KvCache } from '../kv-cache.js';
import type { ModelConfig, TensorSource } from '../weights.js';
import type { WeightTensor } from '../../tensor/weight-tensor.js';
import type { Architecture } from './architecture.js';
import { Scratch, rmsNormLogits, loadVector, optionalVector, outputWeight } from './architecture.js';
import { loadQkv, projectQkv } from './qkv-projection.js';
import { DenseFfn } from './residual-ffn.js';
import type { ResidualFfn } from './residual-ffn.js';
import type { QkvProjection } from './qkv-projection.js';
import { ropeScalingAt } from '../../tensor/rope-scaling.js';
import type { RopeScaling } from '../../tensor/rope-scaling.js';
import { attentionView, writeInputEmbeds } from './input-embeds.js';

interface LlamaLayer {
  attnNorm: Float32Array;
  /** q, k, v projections (fused in Phi-3) */
  qkv: QkvProjection;
  qNorm: Float32Array | undefined; // [headDim]
  kNorm: Float32Array | undefined;
  wo: WeightTensor;
  ffnNorm: Float32Array;
  ffn: ResidualFfn;
  rope: boolean;
}

export class LlamaArchitecture implements Architecture {
  private readonly embedding: WeightTensor;
  private readonly outputNorm: Float32Array;
  private readonly output: WeightTensor;
  private readonly scratch = new Scratch();
  private readonly layers: LlamaLayer[];

  private readonly ropeScaling: RopeScaling | undefined;

  /**
   * `contextLength`: the per-sequence context served (picks longrope's short or long factors, as
   * llama.cpp's n_ctx_seq); `layerFfn`: layer i's FFN (default the dense SwiGLU; Qwen3-MoE's experts).
   */
  constructor(
    readonly config: ModelConfig,
    tensors: TensorSource,
    contextLength = config.contextLength,
    layerFfn: (i: number) => ResidualFfn = (i) => denseFfn(config, tensors, `blk.${i}.`),
  ) {
    this.ropeScaling = ropeScalingAt(config.ropeScaling, contextLength);
    const noRope = new Set(config.noRopeLayers ?? []);
    this.embedding = tensors.get('token_embd.weight');
    this.outputNorm = loadVector(tensors, 'output_norm.weight');
    this.output = outputWeight(tensors);
    this.layers = Array.from({ length: config.numLayers }, (_, i) => {
      const p = `blk.${i}.`;
      return {
        attnNorm: loadVector(tensors, `${p}attn_norm.weight`),
        qkv: loadQkv(tensors, p, false),
        qNorm: optionalVector(tensors, `${p}attn_q_norm.weight`),
        kNorm: optionalVector(tensors, `${p}attn_k_norm.weight`),
        wo: tensors.get(`${p}attn_output.weight`),
        ffnNorm: loadVector(tensors, `${p}ffn_norm.weight`),
        ffn: layerFfn(i),
        rope: !noRope.has(i),
      };
    });
  }

  forward(batch: ForwardBatch, kv: KvCache, k: Kernels): Float32Array {
    const x = this.trunk(batch, kv, k);
    return rmsNormLogits(x, batch.logitIndices, this.outputNorm, this.output, this.config, this.scratch, k);
  }

  /** as an embedding model (Qwen3-Embedding): every row after the final RMSNorm (llama.cpp's result_norm) */
  hiddenStates(batch: ForwardBatch, kv: KvCache, k: Kernels): Float32Array {
    const c = this.config;
    const x = this.trunk(batch, kv, k);
    k.rmsNorm(x, x, this.outputNorm, batch.tokenIds.length, c.hiddenSize, c.normEps);
    return x;
  }

  /** the decoder layers: the residual stream [numTokens, hidden] after the last one */
  private trunk(batch: ForwardBatch, kv: KvCache, k: Kernels): Float32Array {
    const c = this.config;
    const n = batch.tokenIds.length;
    const qWidth = c.numHeads * c.headDim;
    const kvWidth = c.numKvHeads * c.headDim;
    const x = this.scratch.take('x', n * c.hiddenSize); // residual stream [n, hidden]
    const h = this.scratch.take('h', n * c.hiddenSize);
    const q = this.scratch.take('q', n * qWidth);
    const kk = this.scratch.take('kk', n * kvWidth);
    const v = this.scratch.take('v', n * kvWidth);
    const attn = this.scratch.take('attn', n * qWidth);
    const attnShape = { numHeads: c.numHeads, numKvHeads: c.numKvHeads, headDim: c.headDim, scale: 1 / Math.sqrt(c.headDim) };

    k.embedRows(x, this.embedding, batch.tokenIds);
    writeInputEmbeds(x, batch, c.hiddenSize);
    const att = attentionView(batch);
    this.layers.forEach((layer, li) => {
      k.rmsNorm(h, x, layer.attnNorm, n, c.hiddenSize, c.normEps);
      projectQkv(k, this.scratch, layer.qkv, h, n, q, kk, v, qWidth, kvWidth);
      if (layer.qNorm) k.rmsNorm(q, q, layer.qNorm, n * c.numHeads, c.headDim, c.normEps);
      if (layer.kNorm) k.rmsNorm(kk, kk, layer.kNorm, n * c.numKvHeads, c.headDim, c.normEps);
      if (layer.rope) {
        k.rope(q, batch.positions, c.numHeads, c.headDim, c.ropeDim, c.ropeBase, c.ropeStyle, this.ropeScaling);
        k.rope(kk, batch.positions, c.numKvHeads, c.headDim, c.ropeDim, c.ropeBase, c.ropeStyle, this.ropeScaling);
      }
      const cacheLayer = kv.layers[li]!;
      k.writeKv(cacheLayer, kv.shape, kk, v, batch.slotMapping);
      k.attention(attn, q, cacheLayer, kv.shape, att, attnShape);
      k.matmul(h, attn, layer.wo, n);
      k.add(x, x, h, n * c.hiddenSize);

      k.rmsNorm(h, x, layer.ffnNorm, n, c.hiddenSize, c.normEps);
      layer.ffn.addTo(x, h, n, k, this.scratch);
    });
    return x;
  }
}

/** the llama family's dense FFN of layer prefix p (Phi-3: ffn_up holds gate then up) */
function denseFfn(config: ModelConfig, tensors: TensorSource, p: string): DenseFfn {
  const gate = config.arch === 'phi3' ? undefined : tensors.get(`${p}ffn_gate.weight`);
  return new DenseFfn(gate, tensors.get(`${p}ffn_up.weight`), tensors.get(`${p}ffn_down.weight`), config.ffnSize, config.hiddenSize);
}
