// `loom serve`'s image flags: sizes and host lists read as documented, bad values refused
// naming the flag, and the body bound that leaves room for two images at the byte bound.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Command } from 'commander';
import { addImageFlags, bodyLimitFor, imageOptionsOf } from '../../src/commands/image-flags.js';
import type { ImageFlags } from '../../src/commands/image-flags.js';

const parse = (args: string[]): ImageFlags => addImageFlags(new Command().exitOverride()).parse(args, { from: 'user' }).opts<ImageFlags>();

describe('image flags', () => {
  it('defaults: 10 MiB an image, no hosts, 10 s; the body bound 8 MiB plus two such images in base64', () => {
    const o = imageOptionsOf(parse([]));
    assert.deepEqual(o, { maxImageBytes: 10 * 2 ** 20, allowedMediaDomains: [], fetchTimeoutMs: 10_000 });
    assert.equal(bodyLimitFor(o), 8 * 2 ** 20 + 2 * Math.ceil((10 * 2 ** 20) / 3) * 4);
  });

  it('sizes, host lists (comma-separated or JSON, lower-cased), seconds', () => {
    assert.deepEqual(imageOptionsOf(parse(['--max-image-bytes', '500KB', '--allowed-media-domains', 'Images.Example.com, cdn.example.org', '--media-fetch-timeout', '2.5'])), {
      maxImageBytes: 500_000,
      allowedMediaDomains: ['images.example.com', 'cdn.example.org'],
      fetchTimeoutMs: 2500,
    });
    assert.deepEqual(imageOptionsOf(parse(['--allowed-media-domains', '["*"]'])).allowedMediaDomains, ['*']);
  });

  it('bad values name the flag', () => {
    assert.throws(() => imageOptionsOf(parse(['--max-image-bytes', 'lots'])), /--max-image-bytes: cannot read "lots"/);
    assert.throws(() => imageOptionsOf(parse(['--media-fetch-timeout', '0'])), /--media-fetch-timeout: expected seconds above 0/);
    assert.throws(() => parse(['--allowed-media-domains', '[1]']), /--allowed-media-domains: expected host names/);
  });
});
