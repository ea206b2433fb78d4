// A decoder layer's feed-forward block as the Llama-family trunk (llama.ts) runs it: the FFN of
// the normed rows h added to the residual stream x. Dense SwiGLU here; routed experts
// (qwen3moe.ts) are another implementation of the same step.
import type { Kernels } from '../../kernels/index.js';
import type { WeightTensor } from '../../tensor/weight-tensor.js';
import type { Scratch } from './architecture.js';
import { splitRows } from './qkv-projection.js';

export interface ResidualFfn {
  /** x += FFN(h) over n rows of [hidden]; h is the FFN's input and may be overwritten */
  addTo(x: Float32Array, h: Float32Array, n: number, k: Kernels, scratch: Scratch): void;
}

/** SwiGLU: down(silu(gate·h) ⊙ up·h); gate and up, or undefined gate with up [hidden] → [gate | up] (Phi-3) */
export class DenseFfn implements ResidualFfn {
  constructor(
    private readonly gate: WeightTensor | undefined,
    private readonly up: WeightTensor,
    private readonly down: WeightTensor,
    private readonly ffnSize: number,
    private readonly hiddenSize: number,
  ) {}

  addTo(x: Float32Array, h: Float32Array, n: number, k: Kernels, scratch: Scratch): void {
    const gate = scratch.take('gate', n * this.ffnSize);
    const up = scratch.take('up', n * this.ffnSize);
    if (this.gate) {
      k.matmulSet(h, n, [{ out: gate, w: this.gate }, { out: up, w: this.up }]);
    } else {
      const gateUp = scratch.take('gateUp', n * 2 * this.ffnSize);
      k.matmul(gateUp, h, this.up, n);
      splitRows(gateUp, n, [gate, this.ffnSize], [up, this.ffnSize]);
    }
    k.siluMul(gate, gate, up, n * this.ffnSize);
    k.matmul(h, gate, this.down, n);
    k.add(x, x, h, n * this.hiddenSize);
  }
}
