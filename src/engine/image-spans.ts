// Images inside a sequence: the span of prompt positions each one's embeddings take, what the
// prefix cache keys those positions by, and the scheduler's rule that a span is computed in
// one chunk (its embeddings come from one encode, and a non-causal span attends both ways, so
// each of its tokens needs the whole span in the same step).
//
// Cache keys: a sequence's `tokens` hold, at an image's positions, negative keys derived from
// the image's content hash and the position within the image (real token ids are >= 0, so a
// key never equals one). The block manager, the disk cache and KV events see these keys like
// token ids: a block overlapping an image is named by that image's content, so the same
// picture re-sent hits the cache and another one misses. The model never sees a key: a batch
// row of an image carries token id 0 (IMAGE_TOKEN_ID) and its embedding.
import type { PreparedImage } from '../model/vision/projector.js';
import type { AddRequest } from './protocol.js';

/** the token id a batch row of an image carries (Gemma 4's per-layer input reads its row, as llama.cpp's multimodal path takes token 0's) */
export const IMAGE_TOKEN_ID = 0;

/** An image as the engine receives it (AddRequest.images). */
export interface EngineImage {
  /** prompt index of its first position */
  readonly offset: number;
  /** ready for the projector's encode (its pixels are transferred to the engine) */
  readonly prepared: PreparedImage;
  /** hex sha256 of the decoded pixels and size (pipeline/images.ts) */
  readonly hash: string;
}

/** An image's span in a sequence: positions [start, end). */
export interface ImageSpan {
  readonly start: number;
  readonly end: number;
  readonly image: EngineImage;
}

export function spansOf(images: readonly EngineImage[]): ImageSpan[] {
  return images.map((image) => ({ start: image.offset, end: image.offset + image.prepared.numTokens, image }));
}

/** Why these images cannot sit in a prompt of `length` tokens (out of range, overlapping, empty, not in order), or undefined. */
export function checkImageSpans(spans: readonly ImageSpan[], length: number): string | undefined {
  let end = 0;
  for (const [i, s] of spans.entries()) {
    const p = s.image.prepared;
    if (!(Number.isInteger(p.numTokens) && p.numTokens > 0)) return `image ${i} takes no positions`;
    if (p.gridRows * p.gridCols !== p.numTokens) return `image ${i}: a grid of ${p.gridRows} × ${p.gridCols} is not its ${p.numTokens} tokens`;
    if (!Number.isInteger(s.start) || s.start < end) return `image ${i} overlaps the one before it or is out of order`;
    if (s.end > length) return `image ${i} runs past the prompt's end`;
    end = s.end;
  }
  return undefined;
}

/** Why a request's images cannot run on this engine (`projector`: it has one), or undefined. */
export function checkEngineImages(req: AddRequest, projector: boolean): string | undefined {
  if (!projector) return 'this engine has no vision projector: a prompt with images needs one (--mmproj)';
  if (req.params.promptLogprobs !== null) return 'prompt logprobs are not computed for prompts with images';
  for (const [i, image] of (req.images ?? []).entries()) {
    const p = image.prepared;
    if (!(p.pixels instanceof Float32Array) || p.pixels.length !== p.width * p.height * 3) return `image ${i}: its pixels are not ${p.width} × ${p.height} × 3 floats`;
  }
  return checkImageSpans(spansOf(req.images ?? []), req.promptIds.length);
}

/** The prompt's tokens with each image's positions replaced by its cache keys. */
export function withImageKeys(promptIds: ArrayLike<number>, spans: readonly ImageSpan[]): number[] {
  const tokens = Array.from(promptIds);
  for (const s of spans) {
    const words = hashWords(s.image.hash);
    for (let i = s.start; i < s.end; i++) tokens[i] = imageKey(words, i - s.start);
  }
  return tokens;
}

/** a batch row's token id: an image position's key becomes IMAGE_TOKEN_ID */
export const modelTokenId = (t: number): number => (t < 0 ? IMAGE_TOKEN_ID : t);

/** the 32-bit words of a hex hash */
function hashWords(hex: string): Int32Array {
  const words = new Int32Array(Math.max(1, hex.length >> 3));
  for (let i = 0; i < words.length; i++) words[i] = parseInt(hex.slice(8 * i, 8 * i + 8).padEnd(8, '0'), 16) | 0;
  return words;
}

/** a negative 31-bit key mixing every word of the hash with the offset: in [-2^31, -1] */
function imageKey(words: Int32Array, offset: number): number {
  let h = Math.imul(offset + 1, 0x9e3779b1);
  for (const w of words) {
    h = Math.imul(h ^ w, 0x85ebca6b);
    h ^= h >>> 13;
  }
  h = Math.imul(h ^ (h >>> 16), 0xc2b2ae35);
  return -1 - ((h ^ (h >>> 16)) & 0x7fffffff);
}

/**
 * How many tokens a chunk from `from` may take, given that `n` were offered, so that it never
 * ends inside an image span: it stops before the span, or, when the chunk starts at or inside
 * one, takes the span to its end, past the offer only when `mayExceed` (the step's first
 * prefill chunk: a span larger than any budget runs alone rather than never). 0: wait.
 */
export function fitToSpans(spans: readonly ImageSpan[], from: number, n: number, mayExceed: boolean): number {
  const to = from + n;
  for (const s of spans) {
    if (s.start >= to) break;
    if (s.end <= to) continue;
    // the chunk ends inside s
    if (s.start > from) return s.start - from;
    return mayExceed ? s.end - from : 0;
  }
  return n;
}

/** The spans (or their uncomputed parts) a chunk [from, from + n) covers. */
export function spansIn(spans: readonly ImageSpan[], from: number, n: number): ImageSpan[] {
  return spans.filter((s) => s.start < from + n && s.end > from);
}
