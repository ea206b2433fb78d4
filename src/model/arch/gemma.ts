// Gemma 2 and Gemma 3 text decoders, as llama.cpp's src/models/gemma2.cpp and gemma3.cpp
// run them: embeddings scaled by √hidden; per layer RMSNorm → q/k/v (Gemma 3: per-head q/k
// RMSNorm) → NeoX RoPE (Gemma 3's sliding layers with their own base) → q scaled by
// queryScale → attention (sliding layers over their window; Gemma 2's scores soft-capped) →
// o → post-attention RMSNorm → residual; RMSNorm → GELU-tanh(gate)·up → down → post-FFN
// RMSNorm → residual; final RMSNorm, the (tied) output, Gemma 2's final-logit soft-cap.
// Norm weights are (1 + w) as the GGUF converter stores them; HF folders add normOffset.
// EmbeddingGemma (llama.cpp's gemma-embedding.cpp) is the same trunk run as an encoder:
// attention both ways, its sliding layers over a symmetric window, and the final RMSNorm's
// output pooled (hiddenStates) instead of logits.
import type { AttentionBatch, AttentionShape, Kernels } from '../../kernels/index.js';
import type { ForwardBatch } from '../batch.js';
import type { KvCache } from '../kv-cache.js';
import { ropeScalingAt } from '../../tensor/rope-scaling.js';
import type { RopeScaling } from '../../tensor/rope-scaling.js';
import type { GemmaParams, ModelConfig, TensorSource } from '../weights.js';
import type { WeightTensor } from '../../tensor/weight-tensor.js';
import type { Architecture } from './architecture.js';
import { Scratch, rmsNormLogits, loadVector, optionalVector, outputWeight } from './architecture.js';
import { symmetricWindowAttention, wholeSequenceAttention } from './bidirectional.js';
import { attentionView, writeInputEmbeds } from './input-embeds.js';

interface GemmaLayer {
  attnNorm: Float32Array;
  wq: WeightTensor;
  wk: WeightTensor;
  wv: WeightTensor;
  qNorm: Float32Array | undefined; // [headDim], Gemma 3
  kNorm: Float32Array | undefined;
  wo: WeightTensor;
  attnPostNorm: Float32Array;
  ffnNorm: Float32Array;
  gate: WeightTensor;
  up: WeightTensor;
  down: WeightTensor;
  ffnPostNorm: Float32Array;
  /** 0 for a global layer */
  window: number;
  ropeBase: number;
  /** global layers only: llama.cpp keeps sliding-window layers at freq_scale 1 (Gemma 3 4B+: linear ×8 on global ones) */
  ropeScaling: RopeScaling | undefined;
}

export class GemmaArchitecture implements Architecture {
  private readonly embedding: WeightTensor;
  private readonly outputNorm: Float32Array;
  private readonly output: WeightTensor;
  private readonly scratch = new Scratch();
  private readonly layers: GemmaLayer[];
  private readonly params: GemmaParams;

  constructor(
    readonly config: ModelConfig,
    tensors: TensorSource,
    contextLength = config.contextLength,
  ) {
    if (!config.gemma) throw new Error(`${config.arch}: Gemma parameters missing from the model config`);
    const params = config.gemma;
    this.params = params;
    const norm = (name: string): Float32Array => offset(loadVector(tensors, name), params.normOffset);
    const optionalNorm = (name: string): Float32Array | undefined => {
      const v = optionalVector(tensors, name);
      return v && offset(v, params.normOffset);
    };
    this.embedding = tensors.get('token_embd.weight');
    this.outputNorm = norm('output_norm.weight');
    this.output = outputWeight(tensors);
    const sw = config.slidingWindow ?? params.symmetricWindow;
    const globalScaling = ropeScalingAt(config.ropeScaling, contextLength);
    this.layers = Array.from({ length: config.numLayers }, (_, i) => {
      const p = `blk.${i}.`;
      const sliding = sw?.layers[i] === true;
      return {
        attnNorm: norm(`${p}attn_norm.weight`),
        wq: tensors.get(`${p}attn_q.weight`),
        wk: tensors.get(`${p}attn_k.weight`),
        wv: tensors.get(`${p}attn_v.weight`),
        qNorm: optionalNorm(`${p}attn_q_norm.weight`),
        kNorm: optionalNorm(`${p}attn_k_norm.weight`),
        wo: tensors.get(`${p}attn_output.weight`),
        attnPostNorm: norm(`${p}post_attention_norm.weight`),
        ffnNorm: norm(`${p}ffn_norm.weight`),
        gate: tensors.get(`${p}ffn_gate.weight`),
        up: tensors.get(`${p}ffn_up.weight`),
        down: tensors.get(`${p}ffn_down.weight`),
        ffnPostNorm: norm(`${p}post_ffw_norm.weight`),
        window: sliding ? sw!.size : 0,
        ropeBase: sliding ? sw!.ropeBase : config.ropeBase,
        ropeScaling: sliding ? undefined : globalScaling,
      };
    });
  }

  forward(batch: ForwardBatch, kv: KvCache, k: Kernels): Float32Array {
    if (this.config.bidirectional) throw new Error(`${this.config.arch} is an encoder: it pools hidden states (hiddenStates), it has no next-token logits`);
    const x = this.trunk(batch, kv, k);
    const logits = rmsNormLogits(x, batch.logitIndices, this.outputNorm, this.output, this.config, this.scratch, k);
    const rows = batch.logitIndices.length;
    if (this.params.finalSoftcap > 0) k.softcap(logits, rows * this.config.vocabSize, this.params.finalSoftcap);
    return logits;
  }

  /** as an embedding model (EmbeddingGemma): every row after the final RMSNorm (llama.cpp's result_norm) */
  hiddenStates(batch: ForwardBatch, kv: KvCache, k: Kernels): Float32Array {
    const c = this.config;
    const x = this.trunk(batch, kv, k);
    k.rmsNorm(x, x, this.outputNorm, batch.tokenIds.length, c.hiddenSize, c.normEps);
    return x;
  }

  /** the layers: the residual stream [numTokens, hidden] after the last one */
  private trunk(batch: ForwardBatch, kv: KvCache, k: Kernels): Float32Array {
    const c = this.config;
    const n = batch.tokenIds.length;
    const hidden = c.hiddenSize;
    const qWidth = c.numHeads * c.headDim;
    const kvWidth = c.numKvHeads * c.headDim;
    const x = this.scratch.take('x', n * hidden); // residual stream [n, hidden]
    const h = this.scratch.take('h', n * hidden);
    const q = this.scratch.take('q', n * qWidth);
    const kk = this.scratch.take('kk', n * kvWidth);
    const v = this.scratch.take('v', n * kvWidth);
    const attn = this.scratch.take('attn', n * qWidth);
    const gate = this.scratch.take('gate', n * c.ffnSize);
    const up = this.scratch.take('up', n * c.ffnSize);
    const base = { numHeads: c.numHeads, numKvHeads: c.numKvHeads, headDim: c.headDim, scale: 1, softcap: this.params.attnSoftcap };
    // sliding-window layers may keep their KV in a pool of their own, with its own block tables
    const att = attentionView(batch);
    const swaBatch: AttentionBatch = batch.swa ? { ...att, blockTables: batch.swa.blockTables, maxBlocksPerSeq: batch.swa.maxBlocksPerSeq } : att;
    // an encoder's global layers see their whole sequence, its sliding ones the symmetric window
    const encoder = c.bidirectional === true;
    const wholeBatch = encoder ? wholeSequenceAttention(batch) : batch;
    const windowBatch = encoder && this.params.symmetricWindow ? symmetricWindowAttention(batch, this.params.symmetricWindow.size) : undefined;

    k.embedRows(x, this.embedding, batch.tokenIds);
    scaleInPlace(x, n * hidden, Math.fround(Math.sqrt(hidden)));
    writeInputEmbeds(x, batch, hidden); // image rows unscaled, as llama.cpp's gemma3 graph
    this.layers.forEach((layer, li) => {
      k.rmsNorm(h, x, layer.attnNorm, n, hidden, c.normEps);
      k.matmulSet(h, n, [{ out: q, w: layer.wq }, { out: kk, w: layer.wk }, { out: v, w: layer.wv }]);
      if (layer.qNorm) k.rmsNorm(q, q, layer.qNorm, n * c.numHeads, c.headDim, c.normEps);
      if (layer.kNorm) k.rmsNorm(kk, kk, layer.kNorm, n * c.numKvHeads, c.headDim, c.normEps);
      k.rope(q, batch.positions, c.numHeads, c.headDim, c.ropeDim, layer.ropeBase, c.ropeStyle, layer.ropeScaling);
      k.rope(kk, batch.positions, c.numKvHeads, c.headDim, c.ropeDim, layer.ropeBase, c.ropeStyle, layer.ropeScaling);
      scaleInPlace(q, n * qWidth, this.params.queryScale);
      const pooled = layer.window > 0 && batch.swa !== undefined;
      k.writeKv(kv.layers[li]!, kv.layerShape(li), kk, v, pooled ? batch.swa!.slotMapping : batch.slotMapping);
      if (encoder) {
        // the symmetric window is in the batch's first positions, not the shape's (causal) window
        const attnBatch = layer.window > 0 && windowBatch ? windowBatch : wholeBatch;
        k.attention(attn, q, kv.layers[li]!, kv.layerShape(li), attnBatch, base);
      } else {
        const shape: AttentionShape = { ...base, window: layer.window };
        k.attention(attn, q, kv.layers[li]!, kv.layerShape(li), pooled ? swaBatch : att, shape);
      }
      k.matmul(h, attn, layer.wo, n);
      k.rmsNorm(h, h, layer.attnPostNorm, n, hidden, c.normEps);
      k.add(x, x, h, n * hidden);

      k.rmsNorm(h, x, layer.ffnNorm, n, hidden, c.normEps);
      k.matmulSet(h, n, [{ out: gate, w: layer.gate }, { out: up, w: layer.up }]);
      k.geluMul(gate, gate, up, n * c.ffnSize);
      k.matmul(h, gate, layer.down, n);
      k.rmsNorm(h, h, layer.ffnPostNorm, n, hidden, c.normEps);
      k.add(x, x, h, n * hidden);
    });
    return x;
  }
}

/** x[i] = f32(x[i] · s), as ggml_scale */
function scaleInPlace(x: Float32Array, n: number, s: number): void {
  for (let i = 0; i < n; i++) x[i] = x[i]! * s;
}

/** Gemma's RMSNorm multiplies by (1 + w): HF checkpoints store w, GGUF files 1 + w already. */
function offset(w: Float32Array, by: number): Float32Array {
  if (by !== 0) for (let i = 0; i < w.length; i++) w[i] = w[i]! + by;
  return w;
}
