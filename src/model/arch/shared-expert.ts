// Qwen3.5-MoE's FFN (llama.cpp's qwen35moe build_layer_ffn): the routed experts (moe.ts) plus
// a shared expert every token runs, a SwiGLU FFN scaled by the sigmoid of its own gate:
//   out = moe(h) + down(silu(gate·h) ⊙ up·h) · σ(gate_inp_shexp · h)
// the shared expert's product rounded to f32 per element (ggml_mul), then added to the routed
// sum (ggml_add). The shared expert runs over the whole batch as one matmul.
import type { Kernels } from '../../kernels/index.js';
import type { MoeParams, TensorSource } from '../weights.js';
import type { WeightTensor } from '../../tensor/weight-tensor.js';
import { GGMLType } from '../../tensor/weight-types.js';
import { sharedExpertTensorNames } from '../gguf-config-moe.js';
import type { Scratch } from './architecture.js';
import { loadVector } from './architecture.js';
import { MoeFfn } from './moe.js';

export class SharedExpertMoeFfn {
  readonly kind = 'moe';
  readonly routed: MoeFfn;
  private readonly gateInp: WeightTensor; // [hidden] → 1, F32
  private readonly gate: WeightTensor;
  private readonly up: WeightTensor;
  private readonly down: WeightTensor;
  private readonly sharedFfnSize: number;

  constructor(
    tensors: TensorSource,
    li: number,
    params: MoeParams,
    private readonly hiddenSize: number,
  ) {
    if (!params.sharedFfnSize) throw new Error(`layer ${li}: the MoE parameters have no shared expert`);
    this.sharedFfnSize = params.sharedFfnSize;
    this.routed = new MoeFfn(tensors, li, params, hiddenSize);
    const names = sharedExpertTensorNames(li);
    const g = loadVector(tensors, names.gateInp);
    if (g.length !== hiddenSize) throw new RangeError(`${names.gateInp}: ${g.length} values, expected ${hiddenSize}`);
    this.gateInp = { name: names.gateInp, type: GGMLType.F32, dims: [hiddenSize, 1], data: new Uint8Array(g.buffer, g.byteOffset, g.byteLength) };
    this.gate = tensors.get(names.gate);
    this.up = tensors.get(names.up);
    this.down = tensors.get(names.down);
  }

  /** out[t] = routed(h[t]) + σ(gate_inp · h[t]) · shared(h[t]). h, out: [T, hidden] */
  forward(out: Float32Array, h: Float32Array, T: number, k: Kernels, scratch: Scratch): void {
    const D = this.hiddenSize;
    const F = this.sharedFfnSize;
    this.routed.forward(out, h, T, k, scratch);
    const g = scratch.take('shexp.gate', T * F);
    const u = scratch.take('shexp.up', T * F);
    const y = scratch.take('shexp.y', T * D);
    const s = scratch.take('shexp.s', T);
    k.matmulSet(h, T, [{ out: g, w: this.gate }, { out: u, w: this.up }]);
    k.matmul(s, h, this.gateInp, T);
    k.siluMul(g, g, u, T * F);
    k.matmul(y, g, this.down, T);
    for (let t = 0; t < T; t++) {
      const sig = Math.fround(1 / (1 + Math.exp(-s[t]!)));
      // f32 products (a Float32Array store rounds the f64 product of two f32 values as f32 multiplication)
      for (let j = t * D; j < (t + 1) * D; j++) y[j] = y[j]! * sig;
    }
    k.add(out, out, y, T * D);
  }
}
