// Images as the APIs send them inline: base64 (Anthropic's `source.data`, Ollama's `images`)
// and data URLs (OpenAI's `image_url.url`), decoded to the file's bytes at parse time. The
// checks are the cheap ones, before anything is decoded: strict base64, a byte bound per image
// (measured on the base64 length, so a huge image is refused without being decoded), a data
// URL's media type, and the file's magic bytes (PNG, JPEG, GIF, WebP: what the pipeline's
// decoder reads; anything else, SVG included, never reaches it).
import type { ImageInput } from '../pipeline/image-input.js';
import { HttpError } from './errors.js';

/** llama-server's bound on a downloaded image (common_remote_params.max_size in its handle_media) */
export const DEFAULT_MAX_IMAGE_BYTES = 10 * 2 ** 20;

export type ImageFormat = 'png' | 'jpeg' | 'gif' | 'webp';

/** The file's format by its magic bytes, or undefined when it is none loom reads. */
export function imageFormat(b: Uint8Array): ImageFormat | undefined {
  const at = (i: number, s: string): boolean => [...s].every((c, k) => b[i + k] === c.charCodeAt(0));
  if (b.length >= 8 && b[0] === 0x89 && at(1, 'PNG\r\n\x1a\n')) return 'png';
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'jpeg';
  if (b.length >= 6 && (at(0, 'GIF87a') || at(0, 'GIF89a'))) return 'gif';
  if (b.length >= 12 && at(0, 'RIFF') && at(8, 'WEBP')) return 'webp';
  return undefined;
}

const tooBig = (param: string, bytes: number, max: number): HttpError =>
  new HttpError(413, `${param}: the image is ${bytes} bytes, over the limit of ${max} bytes a image (--max-image-bytes)`, 'invalid_request_error', param);

/** The image's bytes checked: within the bound and a PNG, JPEG, GIF or WebP file. */
export function checkedImage(bytes: Uint8Array, param: string, maxBytes: number): ImageInput {
  if (bytes.length > maxBytes) throw tooBig(param, bytes.length, maxBytes);
  if (bytes.length === 0) throw new HttpError(400, `${param}: the image is empty`, 'invalid_request_error', param);
  if (imageFormat(bytes) === undefined) throw new HttpError(400, `${param}: not an image loom reads (PNG, JPEG, GIF or WebP)`, 'invalid_request_error', param);
  return { bytes, param };
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const BASE64URL = /^[A-Za-z0-9_-]*={0,2}$/;

/** Strict base64 (standard or URL-safe alphabet, padding optional, line breaks allowed) to the image's bytes. */
export function base64Image(data: string, param: string, maxBytes: number): ImageInput {
  const s = /\s/.test(data) ? data.replace(/\s+/g, '') : data;
  // the decoded size, known before decoding: a huge image costs no allocation
  const padding = s.endsWith('==') ? 2 : s.endsWith('=') ? 1 : 0;
  const size = Math.floor(((s.length - padding) * 3) / 4);
  if (size > maxBytes) throw tooBig(param, size, maxBytes);
  const urlSafe = !BASE64.test(s);
  if ((urlSafe && !BASE64URL.test(s)) || s.length % 4 === 1 || (padding > 0 && s.length % 4 !== 0)) {
    throw new HttpError(400, `${param}: the image is not valid base64`, 'invalid_request_error', param);
  }
  return checkedImage(Buffer.from(s, urlSafe ? 'base64url' : 'base64'), param, maxBytes);
}

/** `data:image/…;base64,…` to the image's bytes (llama-server's rules: an image media type, base64). */
export function dataUrlImage(url: string, param: string, maxBytes: number): ImageInput {
  const comma = url.indexOf(',');
  const head = comma < 0 ? url : url.slice(0, comma);
  if (comma < 0) throw new HttpError(400, `${param}: a data URL needs a comma before its data`, 'invalid_request_error', param);
  const parts = head.slice('data:'.length).split(';');
  const mediaType = parts[0]!.trim().toLowerCase();
  if (!mediaType.startsWith('image/')) {
    throw new HttpError(400, `${param}: a data URL of type ${JSON.stringify(mediaType || 'text/plain')} is not an image (data:image/png;base64,…)`, 'invalid_request_error', param);
  }
  if (!parts.slice(1).some((p) => p.trim().toLowerCase() === 'base64')) throw new HttpError(400, `${param}: an image data URL must be base64 encoded (data:${mediaType};base64,…)`, 'invalid_request_error', param);
  return base64Image(url.slice(comma + 1), param, maxBytes);
}
