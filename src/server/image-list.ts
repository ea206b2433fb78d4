// A request's images in the order of their markers, as its parser meets them: each `add…`
// returns IMAGE_MARKER for the parser to put in the text where the image was (llama-server's
// media_marker parts), inline images are decoded and checked at once, URLs are fetched when
// `images()` is awaited (all of them together, under one deadline).
import { IMAGE_MARKER } from '../pipeline/image-input.js';
import type { ImageInput } from '../pipeline/image-input.js';
import type { ChatMessage } from '../tokenizer/chat-template.js';
import { HttpError } from './errors.js';
import { base64Image } from './image-data.js';
import { IMAGE_DEFAULTS, imageOfUrl } from './image-fetch.js';
import type { ImageOptions } from './image-fetch.js';

type Pending = ImageInput | ((signal: AbortSignal) => Promise<ImageInput>);

/** fetches of one request at a time */
const FETCH_CONCURRENCY = 4;

export class ImageList {
  private readonly pending: Pending[] = [];

  constructor(readonly options: ImageOptions = IMAGE_DEFAULTS) {}

  get size(): number {
    return this.pending.length;
  }

  /** a data URL or an http(s) URL (fetched only from allowed hosts) */
  addUrl(url: string, param: string): string {
    this.pending.push(imageOfUrl(url, param, this.options));
    return IMAGE_MARKER;
  }

  /** base64 of the file (Anthropic's source.data, Ollama's images) */
  addBase64(data: string, param: string): string {
    this.pending.push(base64Image(data, param, this.options.maxImageBytes));
    return IMAGE_MARKER;
  }

  /** The images in marker order, URLs fetched (at most FETCH_CONCURRENCY at once, all within the request's deadline). */
  async images(): Promise<ImageInput[]> {
    const out: (ImageInput | undefined)[] = this.pending.map((p) => (typeof p === 'function' ? undefined : p));
    const todo = this.pending.flatMap((p, i) => (typeof p === 'function' ? [{ i, p }] : []));
    if (todo.length === 0) return out as ImageInput[];
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.options.fetchTimeoutMs);
    try {
      let next = 0;
      const worker = async (): Promise<void> => {
        while (next < todo.length) {
          const { i, p } = todo[next++]!;
          out[i] = await p(controller.signal);
        }
      };
      await Promise.all(Array.from({ length: Math.min(FETCH_CONCURRENCY, todo.length) }, worker));
    } finally {
      clearTimeout(timer);
      controller.abort(); // the first failure ends the others' fetches
    }
    return out as ImageInput[];
  }

  /**
   * The images, after checking that the messages' texts hold exactly one marker each: a text
   * that itself contains IMAGE_MARKER would shift every image after it.
   */
  async forMessages(messages: readonly ChatMessage[], param: string): Promise<ImageInput[] | undefined> {
    if (this.size === 0) return undefined;
    let markers = 0;
    for (const m of messages) markers += typeof m.content === 'string' ? m.content.split(IMAGE_MARKER).length - 1 : 0;
    if (markers !== this.size) throw new HttpError(400, `${param}: a text contains ${IMAGE_MARKER}, the marker loom puts where an image goes`, 'invalid_request_error', param);
    return this.images();
  }
}
