// `loom serve`'s flags for images in requests (#43): the byte bound per image, which hosts
// image URLs may be fetched from (none unless the operator says so), and the fetch deadline;
// and the request body bound they imply.
import type { Command } from 'commander';
import { Option } from 'commander';
import { parseDiskSize } from '../engine/options.js';
import { InvalidArgumentError } from '../errors.js';
import { IMAGE_DEFAULTS } from '../server/image-fetch.js';
import type { ImageOptions } from '../server/image-fetch.js';
import { numberOption } from './parse.js';

export interface ImageFlags {
  maxImageBytes: string;
  allowedMediaDomains: string[];
  mediaFetchTimeout: number;
}

/** a JSON body without images: what the server always took */
const TEXT_BODY_BYTES = 8 * 2 ** 20;

function parseHosts(value: string): string[] {
  const text = value.trim();
  const list: unknown = text.startsWith('[') ? JSON.parse(text) : text.split(',');
  if (!Array.isArray(list) || !list.every((h) => typeof h === 'string')) throw new InvalidArgumentError('--allowed-media-domains: expected host names, comma-separated or a JSON list');
  return list.map((h: string) => h.trim().toLowerCase()).filter((h) => h.length > 0);
}

export function addImageFlags(cmd: Command): Command {
  return cmd
    .option('--max-image-bytes <size>', 'largest image file a request may carry or have fetched (10MiB, 500KB or bytes); more is a 413', '10MiB')
    .option('--allowed-media-domains <hosts>', 'hosts image URLs (http, https) are fetched from, comma-separated or a JSON list ("*" for any); default none: images come inline as data URLs or base64', parseHosts, [])
    .addOption(new Option('--media-fetch-timeout <s>', "seconds all of a request's image fetches may take").default(IMAGE_DEFAULTS.fetchTimeoutMs / 1000).argParser(numberOption('media-fetch-timeout', false)));
}

export function imageOptionsOf(flags: ImageFlags): ImageOptions {
  let maxImageBytes: number;
  try {
    maxImageBytes = parseDiskSize(flags.maxImageBytes);
  } catch {
    throw new InvalidArgumentError(`--max-image-bytes: cannot read "${flags.maxImageBytes}" (try 10MiB or 500KB)`);
  }
  if (!(flags.mediaFetchTimeout > 0)) throw new InvalidArgumentError(`--media-fetch-timeout: expected seconds above 0, got ${flags.mediaFetchTimeout}`);
  return { maxImageBytes, allowedMediaDomains: flags.allowedMediaDomains, fetchTimeoutMs: flags.mediaFetchTimeout * 1000 };
}

/** The request body bound: a text body's 8 MiB and room for two images at the bound, base64 (4 characters a 3 bytes). */
export function bodyLimitFor(images: ImageOptions): number {
  return TEXT_BODY_BYTES + 2 * Math.ceil(images.maxImageBytes / 3) * 4;
}
