// Qwen3.5 dense (llama.cpp arch `qwen35`, src/models/qwen35.cpp): a hybrid of Gated DeltaNet
// layers and gated full-attention layers (by default every 4th), each followed by a SwiGLU FFN:
//   x += mixer(RMSNorm(x)); x += FFN(RMSNorm_post(x))
// Gated DeltaNet: qkv → causal conv1d + SiLU (per-sequence conv state) → q, k L2-normalized →
// gated delta rule (per-sequence recurrent state) with g = softplus(alpha + dt_bias)·ssm_a and
// β = σ(beta) → RMSNorm(out)·SiLU(z) → ssm_out.
// Full attention: q projection holds [q | gate] per head; q/k RMSNorm; RoPE over the first ropeDim
// dims: IMROPE (rope.dimension_sections interleaved t, h, w) by batch.ropePositions when a batch
// carries images, which for text positions is NeoX RoPE; attention · σ(gate) → o.
// Qwen3.5-MoE (`qwen35moe`, Qwen3.5/3.6-35B-A3B) is the same hybrid with, in every layer, routed
// experts plus a shared expert behind its sigmoid gate (shared-expert.ts) instead of the dense FFN.
// The multi-token-prediction block (nextn) is not run (gguf-config counts the trunk only).
import type { Kernels } from '../../kernels/index.js';
import type { ForwardBatch } from '../batch.js';
import type { KvCache } from '../kv-cache.js';
import type { RecurrentState } from '../recurrent-state.js';
import { linearConvDim } from '../weights.js';
import type { LinearAttention, ModelConfig, TensorSource } from '../weights.js';
import type { WeightTensor } from '../../tensor/weight-tensor.js';
import type { Architecture } from './architecture.js';
import { Scratch, rmsNormLogits, loadVector, outputWeight } from './architecture.js';
import { SharedExpertMoeFfn } from './shared-expert.js';
import { minRoutingGapOf } from './moe.js';
import { attentionView, writeInputEmbeds } from './input-embeds.js';

interface AttentionMixer {
  readonly kind: 'attention';
  wq: WeightTensor; // [hidden] → [numHeads, 2 · headDim]: q then gate per head
  wk: WeightTensor;
  wv: WeightTensor;
  qNorm: Float32Array;
  kNorm: Float32Array;
  wo: WeightTensor;
}

interface DeltaNetMixer {
  readonly kind: 'deltanet';
  wqkv: WeightTensor; // [hidden] → [convDim]: q, k, v
  wz: WeightTensor; // attn_gate: [hidden] → [numVHeads · headDim]
  wBeta: WeightTensor; // [hidden] → [numVHeads]
  wAlpha: WeightTensor;
  dtBias: Float32Array; // [numVHeads]
  a: Float32Array; // [numVHeads] −exp(A_log), as the converter stores it
  conv: Float32Array; // [convDim, convKernel]
  norm: Float32Array; // [headDim]
  wOut: WeightTensor; // [numVHeads · headDim] → [hidden]
}

interface DenseFfn {
  readonly kind: 'dense';
  gate: WeightTensor;
  up: WeightTensor;
  down: WeightTensor;
}

interface Qwen35Layer {
  attnNorm: Float32Array;
  mixer: AttentionMixer | DeltaNetMixer;
  postNorm: Float32Array;
  ffn: DenseFfn | SharedExpertMoeFfn;
}

export class Qwen35Architecture implements Architecture {
  private readonly embedding: WeightTensor;
  private readonly outputNorm: Float32Array;
  private readonly output: WeightTensor;
  private readonly scratch = new Scratch();
  private readonly layers: Qwen35Layer[];
  private readonly linear: LinearAttention;
  /** ggml's L2 norm as RMSNorm(eps / headDim) · 1/√headDim: the weight row of 1/√headDim */
  private readonly l2Weight: Float32Array;

  constructor(
    readonly config: ModelConfig,
    tensors: TensorSource,
  ) {
    const linear = config.linearAttention;
    if (!linear) throw new Error(`${config.arch}: linear-attention parameters missing from the model config`);
    this.linear = linear;
    this.l2Weight = new Float32Array(linear.headDim).fill(1 / Math.sqrt(linear.headDim));
    this.embedding = tensors.get('token_embd.weight');
    this.outputNorm = loadVector(tensors, 'output_norm.weight');
    this.output = outputWeight(tensors);
    this.layers = Array.from({ length: config.numLayers }, (_, i) => {
      const p = `blk.${i}.`;
      const mixer: AttentionMixer | DeltaNetMixer = linear.layers[i]
        ? {
            kind: 'deltanet',
            wqkv: tensors.get(`${p}attn_qkv.weight`),
            wz: tensors.get(`${p}attn_gate.weight`),
            wBeta: tensors.get(`${p}ssm_beta.weight`),
            wAlpha: tensors.get(`${p}ssm_alpha.weight`),
            dtBias: loadVector(tensors, `${p}ssm_dt.bias`),
            a: loadVector(tensors, `${p}ssm_a`),
            conv: loadVector(tensors, `${p}ssm_conv1d.weight`),
            norm: loadVector(tensors, `${p}ssm_norm.weight`),
            wOut: tensors.get(`${p}ssm_out.weight`),
          }
        : {
            kind: 'attention',
            wq: tensors.get(`${p}attn_q.weight`),
            wk: tensors.get(`${p}attn_k.weight`),
            wv: tensors.get(`${p}attn_v.weight`),
            qNorm: loadVector(tensors, `${p}attn_q_norm.weight`),
            kNorm: loadVector(tensors, `${p}attn_k_norm.weight`),
            wo: tensors.get(`${p}attn_output.weight`),
          };
      if (mixer.kind === 'deltanet' && mixer.conv.length !== linearConvDim(linear) * linear.convKernel) {
        throw new Error(`${p}ssm_conv1d.weight: ${mixer.conv.length} values, expected ${linearConvDim(linear)}×${linear.convKernel}`);
      }
      return {
        attnNorm: loadVector(tensors, `${p}attn_norm.weight`),
        mixer,
        postNorm: loadVector(tensors, `${p}post_attention_norm.weight`),
        ffn: config.moe
          ? new SharedExpertMoeFfn(tensors, i, config.moe, config.hiddenSize)
          : { kind: 'dense' as const, gate: tensors.get(`${p}ffn_gate.weight`), up: tensors.get(`${p}ffn_up.weight`), down: tensors.get(`${p}ffn_down.weight`) },
      };
    });
  }

  private get moeLayers(): SharedExpertMoeFfn[] {
    return this.layers.flatMap((l) => (l.ffn instanceof SharedExpertMoeFfn ? [l.ffn] : []));
  }

  /** qwen35moe: per layer, the tokens routed to each expert so far ([numExperts] each); undefined for the dense model */
  get expertLoad(): readonly Float64Array[] | undefined {
    return this.config.moe ? this.moeLayers.map((f) => f.routed.load) : undefined;
  }

  /** qwen35moe: the smallest gap between a token's k-th and (k+1)-th router logit seen so far, over every layer */
  get minRoutingGap(): number {
    return minRoutingGapOf(this.moeLayers.map((f) => f.routed));
  }

  /** zeroes the expert counters and forgets the routing margin seen */
  resetExpertLoad(): void {
    for (const f of this.moeLayers) f.routed.resetCounters();
  }

  forward(batch: ForwardBatch, kv: KvCache, k: Kernels): Float32Array {
    const c = this.config;
    const n = batch.tokenIds.length;
    const hidden = c.hiddenSize;
    const state = kv.recurrent;
    const slots = batch.stateSlots;
    if (!state || !slots) throw new Error('qwen35: a hybrid model needs a recurrent state and the batch\'s state slots');
    // a sequence starting at position 0 (new, or recomputed after preemption) has no history
    for (let s = 0; s < slots.length; s++) if (batch.positions[batch.seqStarts[s]!] === 0) state.reset(slots[s]!);

    const x = this.scratch.take('x', n * hidden); // residual stream [n, hidden]
    const h = this.scratch.take('h', n * hidden);
    const f = this.scratch.take('f', n * hidden);
    k.embedRows(x, this.embedding, batch.tokenIds);
    writeInputEmbeds(x, batch, hidden);
    this.layers.forEach((layer, li) => {
      k.rmsNorm(h, x, layer.attnNorm, n, hidden, c.normEps);
      if (layer.mixer.kind === 'attention') this.attention(h, h, layer.mixer, li, batch, kv, k);
      else this.deltaNet(h, h, layer.mixer, li, batch, slots, state, k);
      k.add(x, x, h, n * hidden);
      k.rmsNorm(h, x, layer.postNorm, n, hidden, c.normEps);
      if (layer.ffn.kind === 'dense') this.denseFfn(h, h, layer.ffn, n, k);
      else layer.ffn.forward(f, h, n, k, this.scratch);
      k.add(x, x, layer.ffn.kind === 'dense' ? h : f, n * hidden);
    });

    return rmsNormLogits(x, batch.logitIndices, this.outputNorm, this.output, c, this.scratch, k);
  }

  /** out [n, hidden] = down(silu(gate·h) ⊙ up·h) (out may alias h) */
  private denseFfn(out: Float32Array, h: Float32Array, ffn: DenseFfn, n: number, k: Kernels): void {
    const F = this.config.ffnSize;
    const gate = this.scratch.take('gate', n * F);
    const up = this.scratch.take('up', n * F);
    k.matmulSet(h, n, [{ out: gate, w: ffn.gate }, { out: up, w: ffn.up }]);
    k.siluMul(gate, gate, up, n * F);
    k.matmul(out, gate, ffn.down, n);
  }

  /** out [n, hidden] = gated attention of h [n, hidden] (out may alias h) */
  private attention(out: Float32Array, h: Float32Array, m: AttentionMixer, li: number, batch: ForwardBatch, kv: KvCache, k: Kernels): void {
    const c = this.config;
    const n = batch.tokenIds.length;
    const hd = c.headDim;
    const qWidth = c.numHeads * hd;
    const kvWidth = c.numKvHeads * hd;
    const qFull = this.scratch.take('qFull', n * 2 * qWidth);
    const q = this.scratch.take('q', n * qWidth);
    const g = this.scratch.take('qGate', n * qWidth);
    const kk = this.scratch.take('kk', n * kvWidth);
    const v = this.scratch.take('v', n * kvWidth);
    const attn = this.scratch.take('attn', n * qWidth);
    k.matmulSet(h, n, [{ out: qFull, w: m.wq }, { out: kk, w: m.wk }, { out: v, w: m.wv }]);
    for (let r = 0; r < n * c.numHeads; r++) {
      q.set(qFull.subarray(2 * r * hd, (2 * r + 1) * hd), r * hd);
      g.set(qFull.subarray((2 * r + 1) * hd, (2 * r + 2) * hd), r * hd);
    }
    k.rmsNorm(q, q, m.qNorm, n * c.numHeads, hd, c.normEps);
    k.rmsNorm(kk, kk, m.kNorm, n * c.numKvHeads, hd, c.normEps);
    this.rotate(q, c.numHeads, batch, k);
    this.rotate(kk, c.numKvHeads, batch, k);
    const cache = kv.layers[li]!;
    k.writeKv(cache, kv.shape, kk, v, batch.slotMapping);
    k.attention(attn, q, cache, kv.shape, attentionView(batch), { numHeads: c.numHeads, numKvHeads: c.numKvHeads, headDim: hd, scale: 1 / Math.sqrt(hd) });
    for (let i = 0; i < n * qWidth; i++) attn[i] = attn[i]! * sigmoid(g[i]!);
    k.matmul(out, attn, m.wo, n);
  }

  /** RoPE in place on x [n, heads · headDim]: IMROPE by the batch's M-RoPE positions (images),
   *  else NeoX by its positions (the same angles when every section holds the text position) */
  private rotate(x: Float32Array, heads: number, batch: ForwardBatch, k: Kernels): void {
    const c = this.config;
    if (!batch.ropePositions) {
      k.rope(x, batch.positions, heads, c.headDim, c.ropeDim, c.ropeBase, c.ropeStyle);
      return;
    }
    if (!c.ropeSections) throw new Error(`${c.arch}: the batch has M-RoPE positions but the model no rope sections`);
    k.ropeMulti(x, batch.ropePositions, heads, c.headDim, c.ropeDim, c.ropeBase, c.ropeSections, 'imrope');
  }

  /** out [n, hidden] = Gated DeltaNet of h [n, hidden] (out may alias h), states in place */
  private deltaNet(out: Float32Array, h: Float32Array, m: DeltaNetMixer, li: number, batch: ForwardBatch, slots: Int32Array, state: RecurrentState, k: Kernels): void {
    const { headDim: S, numKHeads: hk, numVHeads: hv, convKernel } = this.linear;
    const n = batch.tokenIds.length;
    const convDim = linearConvDim(this.linear);
    const eps = this.config.normEps;
    const qkv = this.scratch.take('qkv', n * convDim);
    const z = this.scratch.take('z', n * hv * S);
    const beta = this.scratch.take('beta', n * hv);
    const g = this.scratch.take('g', n * hv);
    const q = this.scratch.take('dq', n * hk * S);
    const kk = this.scratch.take('dk', n * hk * S);
    const v = this.scratch.take('dv', n * hv * S);
    const o = this.scratch.take('do', n * hv * S);
    k.matmulSet(h, n, [{ out: qkv, w: m.wqkv }, { out: z, w: m.wz }, { out: beta, w: m.wBeta }, { out: g, w: m.wAlpha }]);
    for (let t = 0; t < n; t++) {
      for (let j = 0; j < hv; j++) {
        const i = t * hv + j;
        beta[i] = sigmoid(beta[i]!);
        g[i] = Math.fround(softplus(Math.fround(g[i]! + m.dtBias[j]!)) * m.a[j]!);
      }
    }
    k.convSilu(qkv, qkv, m.conv, state.conv[li]!, slots, batch.seqStarts, convDim, convKernel);
    const kWidth = hk * S;
    for (let t = 0; t < n; t++) {
      const row = t * convDim;
      q.set(qkv.subarray(row, row + kWidth), t * kWidth);
      kk.set(qkv.subarray(row + kWidth, row + 2 * kWidth), t * kWidth);
      v.set(qkv.subarray(row + 2 * kWidth, row + convDim), t * hv * S);
    }
    k.rmsNorm(q, q, this.l2Weight, n * hk, S, eps / S);
    k.rmsNorm(kk, kk, this.l2Weight, n * hk, S, eps / S);
    k.gatedDeltaRule(o, q, kk, v, g, beta, state.ssm[li]!, slots, batch.seqStarts, { numKHeads: hk, numVHeads: hv, headDim: S });
    k.rmsNorm(o, o, m.norm, n * hv, S, eps);
    k.siluMul(o, z, o, n * hv * S);
    k.matmul(out, o, m.wOut, n);
  }
}

function sigmoid(x: number): number {
  return Math.fround(1 / (1 + Math.exp(-x)));
}

/** ggml's softplus: x above 20, else log(1 + e^x) */
function softplus(x: number): number {
  return x > 20 ? x : Math.fround(Math.log(1 + Math.exp(x)));
}
