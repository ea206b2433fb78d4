// A prompt with images, tokenized as llama.cpp's mtmd_tokenize does: the rendered text is
// split at IMAGE_MARKER; each text piece, each image's begin text and end text (the
// projector's, e.g. Gemma 3's "<start_of_image>" / "<end_of_image>") is tokenized on its own
// (special tokens parsed in the markers), and each image takes numTokens positions between
// its begin and end tokens; BOS before it all and EOS after it when the model adds them.
import { InvalidArgumentError } from '../errors.js';
import { IMAGE_TOKEN_ID } from '../engine/image-spans.js';
import type { EngineImage } from '../engine/image-spans.js';
import type { PipelineContext } from './context.js';
import { IMAGE_MARKER } from './image-input.js';
import type { ImageInput } from './image-input.js';
import type { ReadyImage, VisionContext } from './images.js';
import type { PanAndScanText } from '../model/vision/projector.js';
import { createHash } from 'node:crypto';

export interface ImagePrompt {
  /** the prompt's ids: IMAGE_TOKEN_ID at each image's positions */
  readonly ids: number[];
  readonly images: EngineImage[];
}

/** Refusals that need no decoding: no projector, too many images, markers that do not match the images. */
export function checkImagePrompt(vision: VisionContext | undefined, text: string, images: readonly ImageInput[], param: string): VisionContext {
  if (!vision) throw new InvalidArgumentError('This model cannot read images: start loom with a vision projector (--mmproj)', param);
  if (images.length > vision.limits.maxImages) {
    throw new InvalidArgumentError(`this request has ${images.length} images, more than the ${vision.limits.maxImages} this server takes (--max-images-per-request)`, param);
  }
  const markers = text.split(IMAGE_MARKER).length - 1;
  if (markers !== images.length) {
    throw new InvalidArgumentError(`the prompt has ${markers} image marker${markers === 1 ? '' : 's'} (${IMAGE_MARKER}) for ${images.length} image${images.length === 1 ? '' : 's'}`, param);
  }
  return vision;
}

/** The prompt's ids and its images, ready for the engine (every image decoded and prepared at once). */
export async function tokenizeImagePrompt(
  ctx: Pick<PipelineContext, 'text' | 'tokenizer' | 'vision'>,
  prompt: string,
  images: readonly ImageInput[],
  opts: { readonly addSpecial: boolean; readonly parseSpecial: boolean; readonly param: string },
): Promise<ImagePrompt> {
  const vision = checkImagePrompt(ctx.vision, prompt, images, opts.param);
  let text = prompt;
  let ready = Promise.all(images.map((image) => vision.prepare(image)));
  ready.catch(() => undefined); // awaited below; a refusal of the tokenizer's first must not leave it unhandled
  // pan and scan: the crops (known once prepared) become images of their own, with their words
  const words = vision.projector.panAndScanText;
  if (words) {
    const expanded = withCrops(text, await ready, words);
    text = expanded.text;
    ready = Promise.resolve(expanded.images);
  }
  const encode = (s: string, parseSpecial: boolean) => (s ? ctx.text.encode(s, { addSpecial: false, parseSpecial }) : Promise.resolve([]));
  const pieces = text.split(IMAGE_MARKER);
  const [begin, end, ...texts] = await Promise.all([
    encode(vision.projector.imageBegin, true),
    encode(vision.projector.imageEnd, true),
    ...pieces.map((p) => encode(p, opts.parseSpecial)),
  ]);
  const prepared = await ready;
  const { bos, eos } = opts.addSpecial ? await specialIds(ctx) : { bos: [], eos: [] };
  const ids: number[] = [...bos];
  const out: EngineImage[] = [];
  texts.forEach((piece, i) => {
    ids.push(...piece);
    const image = prepared[i];
    if (!image) return;
    ids.push(...begin!);
    out.push({ offset: ids.length, prepared: image.prepared, hash: image.hash });
    for (let k = 0; k < image.prepared.numTokens; k++) ids.push(IMAGE_TOKEN_ID);
    ids.push(...end!);
  });
  ids.push(...eos);
  return { ids, images: out };
}

/**
 * Each image that came with crops as transformers' Gemma3Processor writes it: its marker becomes
 * before + marker + between + one marker per crop joined by separator, and its crops follow it
 * in the images, each hashed as the image's hash and its crop's index.
 */
export function withCrops(text: string, ready: readonly ReadyImage[], words: PanAndScanText): { text: string; images: ReadyImage[] } {
  const pieces = text.split(IMAGE_MARKER);
  const images: ReadyImage[] = [];
  let out = pieces[0]!;
  ready.forEach((image, i) => {
    const { crops, ...whole } = image.prepared;
    images.push({ prepared: whole, hash: image.hash });
    if (crops && crops.length > 0) {
      out += words.before + IMAGE_MARKER + words.between + crops.map(() => IMAGE_MARKER).join(words.separator);
      crops.forEach((crop, k) => images.push({ prepared: crop, hash: createHash('sha256').update(`${image.hash}:crop:${k}`).digest('hex') }));
    } else {
      out += IMAGE_MARKER;
    }
    out += pieces[i + 1] ?? '';
  });
  return { text: out, images };
}

/** the ids the tokenizer adds around a text (BOS, and EOS where the model adds it) */
async function specialIds(ctx: Pick<PipelineContext, 'text' | 'tokenizer'>): Promise<{ bos: number[]; eos: number[] }> {
  const specials = await ctx.text.encode('', { addSpecial: true, parseSpecial: false });
  const bosId = ctx.tokenizer.bosId;
  const bos = bosId !== undefined && specials[0] === bosId && ctx.tokenizer.addBos ? [bosId] : [];
  return { bos, eos: specials.slice(bos.length) };
}
