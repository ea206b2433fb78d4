import type { LinearAttention } from './weights.js';
import { linearStateSizes } from './weights.js';

/**
 * Per-sequence state of a hybrid model's linear-attention layers, beside the paged KV cache:
 * `numSlots` slots (one per running sequence, see engine/state-slots.ts), each holding for
 * every linear layer a conv state [convKernel - 1, convDim] (the last inputs of the causal
 * conv1d, oldest first) and a delta-rule state [numVHeads, headDim, headDim] stored as
 * ggml does: element [h, j, i] is S[i][j], so row j is contiguous over keys i.
 */
export class RecurrentState {
  /** [numLayers] the layer's [numSlots, conv] f32 state, empty for attention layers */
  readonly conv: Float32Array[];
  /** [numLayers] the layer's [numSlots, numVHeads, headDim, headDim] f32 state, empty for attention layers */
  readonly ssm: Float32Array[];
  readonly convSize: number;
  readonly ssmSize: number;

  constructor(
    readonly linear: LinearAttention,
    readonly numSlots: number,
  ) {
    const { conv, ssm } = linearStateSizes(linear);
    this.convSize = conv;
    this.ssmSize = ssm;
    this.conv = linear.layers.map((on) => new Float32Array(on ? numSlots * conv : 0));
    this.ssm = linear.layers.map((on) => new Float32Array(on ? numSlots * ssm : 0));
  }

  /** zeroes a slot in every layer: a sequence starting at position 0 has no history */
  reset(slot: number): void {
    if (!(slot >= 0 && slot < this.numSlots)) throw new Error(`state slot ${slot} outside 0..${this.numSlots - 1}`);
    for (const c of this.conv) c.fill(0, slot * this.convSize, (slot + 1) * this.convSize);
    for (const s of this.ssm) s.fill(0, slot * this.ssmSize, (slot + 1) * this.ssmSize);
  }

  /** slot dst takes slot src's state in every layer */
  copy(src: number, dst: number): void {
    for (const c of this.conv) c.copyWithin(dst * this.convSize, src * this.convSize, (src + 1) * this.convSize);
    for (const s of this.ssm) s.copyWithin(dst * this.ssmSize, src * this.ssmSize, (src + 1) * this.ssmSize);
  }

  get bytes(): number {
    return 4 * [...this.conv, ...this.ssm].reduce((n, a) => n + a.length, 0);
  }
}
