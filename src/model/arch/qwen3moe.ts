// Qwen3-MoE (Qwen3-30B-A3B, Qwen3-Coder-30B-A3B, Qwen3-235B-A22B) as llama.cpp's qwen3moe
// graph runs it: Qwen3's attention (per-head q/k RMSNorm, GQA, NeoX RoPE), the Llama-family
// trunk (llama.ts), and in every layer a routed mixture-of-experts FFN instead of the dense one
// (moe.ts: softmax router, top-k, weights renormalized over the k, SwiGLU experts, batched by expert).
import type { Kernels } from '../../kernels/index.js';
import type { ModelConfig, MoeParams, TensorSource } from '../weights.js';
import type { Scratch } from './architecture.js';
import { LlamaArchitecture } from './llama.js';
import { MoeFfn, minRoutingGapOf } from './moe.js';
import type { ResidualFfn } from './residual-ffn.js';

export class Qwen3MoeArchitecture extends LlamaArchitecture {
  readonly moe: MoeParams;
  /** each layer's experts, in layer order */
  private readonly ffns: readonly MoeFfn[];

  constructor(config: ModelConfig, tensors: TensorSource, contextLength = config.contextLength) {
    const moe = config.moe;
    if (!moe) throw new Error(`${config.arch}: the config has no mixture-of-experts parameters`);
    const ffns: MoeFfn[] = [];
    super(config, tensors, contextLength, (i) => {
      const ffn = new MoeFfn(tensors, i, moe, config.hiddenSize);
      ffns.push(ffn);
      return new ResidualMoe(ffn, config.hiddenSize);
    });
    this.moe = moe;
    this.ffns = ffns;
  }

  /** per layer, the tokens routed to each expert so far ([numExperts] each; a bench or profile reads them) */
  get expertLoad(): readonly Float64Array[] {
    return this.ffns.map((f) => f.load);
  }

  /** the smallest gap between a token's k-th and (k+1)-th router logit seen so far, over every layer */
  get minRoutingGap(): number {
    return minRoutingGapOf(this.ffns);
  }

  resetExpertLoad(): void {
    for (const f of this.ffns) f.resetCounters();
  }
}

/** the routed experts as the layer's FFN: their weighted sum (into a buffer of its own) added to x */
class ResidualMoe implements ResidualFfn {
  constructor(
    private readonly ffn: MoeFfn,
    private readonly hiddenSize: number,
  ) {}

  addTo(x: Float32Array, h: Float32Array, n: number, k: Kernels, scratch: Scratch): void {
    const f = scratch.take('f', n * this.hiddenSize);
    this.ffn.forward(f, h, n, k, scratch);
    k.add(x, x, f, n * this.hiddenSize);
  }
}
