// Images given by http(s) URL: fetched only from the hosts the operator allows
// (--allowed-media-domains, vLLM's flag; none by default, so a request cannot make the
// server reach into its own network), with a byte bound (--max-image-bytes, checked on
// Content-Length and again while reading) and a time bound (--media-fetch-timeout, for all of
// a request's fetches together). Redirects are followed by hand, at most 3, each hop's host
// checked against the same list. Fetching is asynchronous I/O; nothing blocks the thread.
import { HttpError } from './errors.js';
import { DEFAULT_MAX_IMAGE_BYTES, base64Image, checkedImage, dataUrlImage } from './image-data.js';
import type { ImageInput } from '../pipeline/image-input.js';

export interface ImageOptions {
  /** bytes of one image file (inline or fetched) */
  readonly maxImageBytes: number;
  /** hosts image URLs may be fetched from (exact host names, `*` for any); empty: no fetching */
  readonly allowedMediaDomains: readonly string[];
  /** all of a request's fetches end within this */
  readonly fetchTimeoutMs: number;
  /** the fetch used (tests give their own); default globalThis.fetch */
  readonly fetch?: typeof fetch;
}

export const IMAGE_DEFAULTS: ImageOptions = { maxImageBytes: DEFAULT_MAX_IMAGE_BYTES, allowedMediaDomains: [], fetchTimeoutMs: 10_000 };

const MAX_REDIRECTS = 3;

const bad = (param: string, message: string, status = 400): HttpError => new HttpError(status, `${param}: ${message}`, 'invalid_request_error', param);

/** The URL parsed and allowed, or the reason it is not. */
export function allowedUrl(url: string, param: string, allowed: readonly string[]): URL {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw bad(param, 'the image URL is neither a data URL nor a valid http(s) URL');
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw bad(param, `image URLs of scheme ${u.protocol.replace(/:$/, '')} are not accepted (data: or http(s):)`);
  if (allowed.length === 0) throw bad(param, 'this server does not fetch image URLs: send the image inline as a data URL (the operator allows hosts with --allowed-media-domains)');
  const host = u.hostname.toLowerCase().replace(/^\[|\]$/g, '');
  if (!allowed.includes('*') && !allowed.some((d) => d.toLowerCase() === host)) throw bad(param, `fetching images from ${host} is not allowed on this server (--allowed-media-domains)`);
  return u;
}

/** The body read up to `max` bytes; more is an error and the rest is not read. */
async function boundedBody(res: Response, param: string, max: number): Promise<Uint8Array> {
  const declared = Number(res.headers.get('content-length') ?? NaN);
  if (declared > max) throw bad(param, `the image at the URL is ${declared} bytes, over the limit of ${max} bytes a image (--max-image-bytes)`, 413);
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = res.body?.getReader();
  if (!reader) return new Uint8Array(0);
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > max) {
      await reader.cancel().catch(() => undefined);
      throw bad(param, `the image at the URL is over the limit of ${max} bytes a image (--max-image-bytes)`, 413);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

/** One allowed URL fetched (redirects checked hop by hop) into checked image bytes. */
export async function fetchImage(url: string, param: string, opts: ImageOptions, signal: AbortSignal): Promise<ImageInput> {
  const get = opts.fetch ?? fetch;
  let u = allowedUrl(url, param, opts.allowedMediaDomains);
  for (let hop = 0; ; hop++) {
    let res: Response;
    try {
      res = await get(u, { redirect: 'manual', signal, headers: { accept: 'image/*' } });
    } catch (err) {
      if (signal.aborted) throw bad(param, `fetching the image took longer than ${opts.fetchTimeoutMs / 1000} s (--media-fetch-timeout)`);
      throw bad(param, `fetching the image failed: ${(err as Error).message}`);
    }
    if (res.status >= 300 && res.status < 400 && res.headers.has('location')) {
      await res.body?.cancel().catch(() => undefined);
      if (hop >= MAX_REDIRECTS) throw bad(param, `more than ${MAX_REDIRECTS} redirects fetching the image`);
      u = allowedUrl(new URL(res.headers.get('location')!, u).href, param, opts.allowedMediaDomains);
      continue;
    }
    if (res.status < 200 || res.status >= 300) {
      await res.body?.cancel().catch(() => undefined);
      throw bad(param, `fetching the image answered HTTP ${res.status}`);
    }
    try {
      return checkedImage(await boundedBody(res, param, opts.maxImageBytes), param, opts.maxImageBytes);
    } catch (err) {
      if (signal.aborted && !(err instanceof HttpError)) throw bad(param, `fetching the image took longer than ${opts.fetchTimeoutMs / 1000} s (--media-fetch-timeout)`);
      throw err;
    }
  }
}

/**
 * A data URL (or, as llama-server takes, bare base64: no scheme) decoded now, or an http(s)
 * URL to fetch later (a thunk, so nothing starts before the request is parsed).
 */
export function imageOfUrl(url: string, param: string, opts: ImageOptions): ImageInput | ((signal: AbortSignal) => Promise<ImageInput>) {
  if (/^data:/i.test(url)) return dataUrlImage(url, param, opts.maxImageBytes);
  if (!url.includes(':')) return base64Image(url, param, opts.maxImageBytes);
  allowedUrl(url, param, opts.allowedMediaDomains);
  return (signal) => fetchImage(url, param, opts, signal);
}
