// Images from the APIs to the engine: decoded (sharp, on libuv's pool: JPEG, PNG, WebP, GIF's
// first frame) to 8-bit RGB with alpha dropped (stb_image's 3-channel load, which llama.cpp's
// mtmd helper uses: no compositing, no EXIF rotation, no colour profile), within the limits
// (bytes, pixels, images a request), hashed by content (the same picture re-sent hashes the
// same, whatever its file), and prepared by the projector (resize, normalize) off the serving
// thread. A broken, huge or hostile image is an InvalidArgumentError naming its field.
import { createHash } from 'node:crypto';
import sharp from 'sharp';
import { InvalidArgumentError } from '../errors.js';
import type { PreparedImage, RgbImage, VisionProjector } from '../model/vision/projector.js';
import type { ImageInput } from './image-input.js';

export interface ImageLimits {
  /** bytes of one image file (--max-image-bytes) */
  readonly maxBytes: number;
  /** width × height of one decoded image (--max-image-pixels) */
  readonly maxPixels: number;
  /** images in one request (--max-images-per-request) */
  readonly maxImages: number;
}

export const DEFAULT_IMAGE_LIMITS: ImageLimits = Object.freeze({
  maxBytes: 10 * 1024 * 1024, // the server's --max-image-bytes default (llama-server's download bound)
  maxPixels: 40_000_000, // a 40 MP photo; sharp's own default (268 MP) would take ~800 MB decoded
  maxImages: 16,
});

/** What the pipeline knows of the served model's projector: its layout facts and how images are made ready. */
export interface VisionContext {
  readonly projector: Pick<VisionProjector, 'source' | 'kind' | 'imageBegin' | 'imageEnd' | 'nonCausalImage' | 'positions' | 'panAndScanText'>;
  readonly limits: ImageLimits;
  /** decode, check, hash and prepare one image, off the serving thread */
  prepare(input: ImageInput): Promise<ReadyImage>;
  /** stops its workers, when it has any */
  close?(): Promise<void>;
}

export interface ReadyImage {
  readonly prepared: PreparedImage;
  /** hex sha256 of the decoded size and pixels */
  readonly hash: string;
}

const FORMATS = new Set(['jpeg', 'png', 'webp', 'gif']);

/** The image's bytes decoded to RGB, within the limits; an InvalidArgumentError naming input.param otherwise. */
export async function decodeImage(input: ImageInput, limits: ImageLimits = DEFAULT_IMAGE_LIMITS): Promise<RgbImage> {
  const { bytes, param } = input;
  if (bytes.length === 0) throw new InvalidArgumentError('the image is empty', param);
  if (bytes.length > limits.maxBytes) throw new InvalidArgumentError(`the image is ${bytes.length} bytes, more than the ${limits.maxBytes} this server takes (--max-image-bytes)`, param);
  let image: ReturnType<typeof sharp>;
  let format: string | undefined;
  try {
    // sharp checks the pixel limit from the header, before decoding
    image = sharp(bytes, { limitInputPixels: limits.maxPixels, pages: 1, failOn: 'error' });
    format = (await image.metadata()).format;
  } catch (err) {
    throw refusal(err, limits, param, 'the image could not be read', ' (JPEG, PNG, WebP and GIF are supported)');
  }
  if (!format || !FORMATS.has(format)) throw new InvalidArgumentError(`the image is ${format ?? 'of an unknown format'}; JPEG, PNG, WebP and GIF are supported`, param);
  try {
    const { data, info } = await image.toColourspace('srgb').removeAlpha().raw({ depth: 'uchar' }).toBuffer({ resolveWithObject: true });
    if (info.channels !== 3) throw new Error(`${info.channels} channels after conversion to RGB`);
    return { width: info.width, height: info.height, data: new Uint8Array(data.buffer, data.byteOffset, data.length) };
  } catch (err) {
    throw refusal(err, limits, param, 'the image could not be decoded', '');
  }
}

/** sharp's error as the caller's: the pixel limit said as the flag, anything else as what went wrong */
function refusal(err: unknown, limits: ImageLimits, param: string, what: string, hint: string): InvalidArgumentError {
  const message = err instanceof Error ? err.message : String(err);
  if (/pixel limit/i.test(message)) return new InvalidArgumentError(`the image has more pixels than the ${limits.maxPixels} this server takes (--max-image-pixels)`, param);
  return new InvalidArgumentError(`${what}: ${message}${hint}`, param);
}

/** sha256 over the width, height (u32 little-endian) and RGB bytes: the picture, not its file. */
export function imageHash(image: RgbImage): string {
  const size = new Uint8Array(8);
  const view = new DataView(size.buffer);
  view.setUint32(0, image.width, true);
  view.setUint32(4, image.height, true);
  return createHash('sha256').update(size).update(image.data).digest('hex');
}

/**
 * A vision context that prepares on this thread (decoding stays on libuv's pool): for the
 * library and `loom generate`, whose caller waits for the image anyway. The server prepares
 * in its image workers (server/image-pool.ts).
 */
export function inlineVision(projector: VisionProjector, limits: ImageLimits = DEFAULT_IMAGE_LIMITS): VisionContext {
  return {
    projector,
    limits,
    async prepare(input) {
      const image = await decodeImage(input, limits);
      return { prepared: projector.prepare(image), hash: imageHash(image) };
    },
  };
}
