// The images of one engine step: every image a scheduled chunk covers is encoded by one call
// of the projector (batched across requests, each distinct picture once), on the engine's
// kernels, and its embeddings become the chunk's embedding runs. Nothing is kept after the
// step: a span is never split across chunks (image-spans.ts), so its embeddings are used once
// (a preempted sequence encodes its images again when it is recomputed, as its tokens are).
import { performance } from 'node:perf_hooks';
import type { Kernels } from '../kernels/index.js';
import type { ChunkEmbeds } from '../model/batch.js';
import type { PreparedImage, VisionProjector } from '../model/vision/projector.js';
import { spansIn } from './image-spans.js';
import type { Sequence } from './sequence.js';

export interface StepEmbeddings {
  /** image hash → its embeddings [numTokens, hidden] */
  readonly byHash: ReadonlyMap<string, Float32Array>;
  readonly encodeMs: number;
  readonly count: number;
}

export const NO_IMAGES: StepEmbeddings = { byHash: new Map(), encodeMs: 0, count: 0 };

export class ImageEncoder {
  constructor(
    readonly projector: VisionProjector,
    private readonly kernels: Kernels,
    private readonly hidden: number,
  ) {
    if (projector.outputSize !== hidden) throw new Error(`${projector.source}: the projector writes embeddings of ${projector.outputSize}, the model's hidden size is ${hidden}`);
  }

  /** Encodes, in one call, every image the chunks (seq, its next numTokens) cover. */
  encode(chunks: readonly { readonly seq: Sequence; readonly numTokens: number }[]): StepEmbeddings {
    const wanted = new Map<string, PreparedImage>();
    for (const { seq, numTokens } of chunks) {
      if (seq.images.length === 0) continue;
      for (const s of spansIn(seq.images, seq.numComputed, numTokens)) wanted.set(s.image.hash, s.image.prepared);
    }
    if (wanted.size === 0) return NO_IMAGES;
    const t0 = performance.now();
    const images = [...wanted.values()];
    const out = this.projector.encode(images, this.kernels);
    if (out.length !== images.length) throw new Error(`${this.projector.source}: encode returned ${out.length} embeddings for ${images.length} images`);
    const byHash = new Map<string, Float32Array>();
    [...wanted.keys()].forEach((hash, i) => {
      const e = out[i]!;
      if (e.length !== images[i]!.numTokens * this.hidden) throw new Error(`${this.projector.source}: an image of ${images[i]!.numTokens} tokens was encoded to ${e.length} values, not ${images[i]!.numTokens} × ${this.hidden}`);
      byHash.set(hash, e);
    });
    return { byHash, encodeMs: performance.now() - t0, count: images.length };
  }

  /** seq's chunk [from, from + n) as embedding runs (undefined when it covers no image). */
  chunkEmbeds(seq: Sequence, from: number, n: number, step: StepEmbeddings): ChunkEmbeds[] | undefined {
    if (seq.images.length === 0) return undefined;
    const spans = spansIn(seq.images, from, n);
    if (spans.length === 0) return undefined;
    const h = this.hidden;
    return spans.map((s) => {
      const e = step.byHash.get(s.image.hash);
      if (!e) throw new Error(`image ${s.image.hash.slice(0, 12)} of ${seq.key} was not encoded this step`);
      const first = Math.max(from, s.start);
      const last = Math.min(from + n, s.end);
      if (last !== s.end) throw new Error(`${seq.key}: a chunk ends inside an image span (${from + n} in [${s.start}, ${s.end}))`);
      return { at: first - from, count: last - first, data: e.subarray((first - s.start) * h, (last - s.start) * h), nonCausal: this.projector.nonCausalImage };
    });
  }
}
