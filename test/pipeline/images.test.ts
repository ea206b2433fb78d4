// Images in the pipeline: decoding as stb_image's 3-channel load (alpha dropped, grey
// replicated, a GIF's first frame), the limits (bytes, pixels, images a request) as
// InvalidArgumentErrors naming the field, the content hash (the picture, not its file), and the
// prompt laid out as llama.cpp's mtmd_tokenize lays it out.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import sharp from 'sharp';
import { InvalidArgumentError } from '../../src/errors.js';
import { IMAGE_TOKEN_ID } from '../../src/engine/image-spans.js';
import { inlineText } from '../../src/pipeline/context.js';
import { IMAGE_MARKER } from '../../src/pipeline/image-input.js';
import { tokenizeImagePrompt } from '../../src/pipeline/image-prompt.js';
import { DEFAULT_IMAGE_LIMITS, decodeImage, imageHash } from '../../src/pipeline/images.js';
import type { VisionContext } from '../../src/pipeline/images.js';
import { fixtureModel } from '../fixtures/engine-run.js';

/** w × h RGB pixels where pixel i is (i, 2i, 3i) mod 256 */
function pixels(w: number, h: number): Buffer {
  const b = Buffer.alloc(w * h * 3);
  for (let i = 0; i < w * h; i++) [b[3 * i], b[3 * i + 1], b[3 * i + 2]] = [i % 256, (2 * i) % 256, (3 * i) % 256];
  return b;
}
const raw = (b: Buffer, w: number, h: number, channels: 1 | 3 | 4 = 3) => sharp(b, { raw: { width: w, height: h, channels } });
const input = (bytes: Uint8Array, param = 'messages[0].content[1]') => ({ bytes, param });

async function refused(p: Promise<unknown>, pattern: RegExp, param = 'messages[0].content[1]'): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof InvalidArgumentError, `not an InvalidArgumentError: ${String(err)}`);
    assert.equal(err.param, param);
    assert.match(err.message, pattern);
    return true;
  });
}

describe('decoding images', () => {
  it('PNG, lossless WebP, GIF and JPEG decode to their RGB pixels; the hash is the picture\'s, not the file\'s', async () => {
    const rgb = pixels(7, 5);
    const png = await decodeImage(input(await raw(rgb, 7, 5).png().toBuffer()));
    assert.deepEqual([png.width, png.height], [7, 5]);
    assert.deepEqual(Buffer.from(png.data), rgb);
    const webp = await decodeImage(input(await raw(rgb, 7, 5).webp({ lossless: true }).toBuffer()));
    assert.equal(imageHash(webp), imageHash(png));
    const jpeg = await decodeImage(input(await raw(rgb, 7, 5).jpeg({ quality: 100 }).toBuffer()));
    assert.deepEqual([jpeg.width, jpeg.height], [7, 5]);
    assert.notEqual(imageHash(jpeg), imageHash(png), 'a lossy file is another picture');
    // the same pixels at another size is another picture
    const flat = await decodeImage(input(await raw(rgb, 35, 1).png().toBuffer()));
    assert.notEqual(imageHash(flat), imageHash(png));
  });

  it('alpha is dropped, not composited, and grey becomes three equal channels (stb_image\'s 3-channel load)', async () => {
    const rgba = Buffer.from([10, 20, 30, 0, 40, 50, 60, 128]);
    const a = await decodeImage(input(await raw(rgba, 2, 1, 4).png().toBuffer()));
    assert.deepEqual([...a.data], [10, 20, 30, 40, 50, 60]);
    const grey = await decodeImage(input(await raw(Buffer.from([7, 200]), 2, 1, 1).png().toBuffer()));
    assert.deepEqual([...grey.data], [7, 7, 7, 200, 200, 200]);
  });

  it('a GIF gives its first frame', async () => {
    const frames = Buffer.alloc(4 * 2 * 2 * 3);
    for (let i = 0; i < 8; i++) [frames[3 * i], frames[3 * (8 + i) + 2]] = [200, 200];
    const gif = await sharp(frames, { raw: { width: 4, height: 4, channels: 3, pageHeight: 2 } }).gif().toBuffer();
    const first = await decodeImage(input(gif));
    assert.deepEqual([first.width, first.height], [4, 2]);
    assert.deepEqual([...first.data.subarray(0, 3)], [200, 0, 0]);
  });

  it('a broken, foreign, huge or oversized image is a clear refusal naming its field', async () => {
    await refused(decodeImage(input(new Uint8Array(0))), /empty/);
    await refused(decodeImage(input(Buffer.from('not an image at all'))), /could not be read/);
    await refused(decodeImage(input(await raw(pixels(4, 4), 4, 4).tiff().toBuffer())), /tiff.*JPEG, PNG, WebP and GIF/);
    const png = await raw(pixels(64, 64), 64, 64).png().toBuffer();
    await refused(decodeImage(input(png.subarray(0, png.length >> 1))), /could not be (read|decoded)/);
    await refused(decodeImage(input(png), { ...DEFAULT_IMAGE_LIMITS, maxBytes: 100 }), /more than the 100 .*--max-image-bytes/);
    // a decompression bomb is a small file of many pixels: refused from its header (here 4096 pixels against 1000)
    const bomb = await sharp({ create: { width: 64, height: 64, channels: 3, background: 'white' } }).png({ compressionLevel: 9 }).toBuffer();
    assert.ok(bomb.length < 300);
    await refused(decodeImage(input(bomb, 'images[0]'), { ...DEFAULT_IMAGE_LIMITS, maxPixels: 1000 }), /pixel limit|--max-image-pixels/, 'images[0]');
  });
});

describe('prompts with images', () => {
  const model = fixtureModel('llama-f32');
  const text = inlineText(model.tokenizer);
  const vision = (limits = DEFAULT_IMAGE_LIMITS): VisionContext => ({
    projector: { source: 'test', kind: 'gemma3', imageBegin: '<img>', imageEnd: '</img>', nonCausalImage: true, positions: 'linear' },
    limits,
    prepare: async (i) => ({ hash: `h${i.bytes[0]}`, prepared: { pixels: new Float32Array(12), width: 2, height: 2, numTokens: i.bytes[0]!, gridRows: 1, gridCols: i.bytes[0]! } }),
  });
  const img = (n: number) => ({ bytes: Uint8Array.of(n), param: `images[${n}]` });

  it('each piece, begin and end text tokenized on its own; numTokens image positions between; BOS first', async () => {
    const ctx = { text, tokenizer: model.tokenizer, vision: vision() };
    const prompt = `Look at ${IMAGE_MARKER} and ${IMAGE_MARKER}: same?`;
    const got = await tokenizeImagePrompt(ctx, prompt, [img(3), img(2)], { addSpecial: true, parseSpecial: true, param: 'prompt' });
    const enc = (s: string) => model.tokenizer.encode(s, { addSpecial: false, parseSpecial: true });
    const bos = model.tokenizer.addBos ? [model.tokenizer.bosId!] : [];
    const expected = [...bos, ...enc('Look at '), ...enc('<img>'), 0, 0, 0, ...enc('</img>'), ...enc(' and '), ...enc('<img>'), 0, 0, ...enc('</img>'), ...enc(': same?')];
    assert.deepEqual(got.ids, expected.map((t, i) => (t === 0 && i > 0 ? IMAGE_TOKEN_ID : t)));
    const first = bos.length + enc('Look at ').length + enc('<img>').length;
    assert.deepEqual(got.images.map((i) => [i.offset, i.prepared.numTokens, i.hash]), [[first, 3, 'h3'], [first + 3 + enc('</img>').length + enc(' and ').length + enc('<img>').length, 2, 'h2']]);
  });

  it('pan and scan: an image with crops becomes the original, then its crops, in the projector\'s words, each crop its own image and hash', async () => {
    const words = { before: 'Here: ', between: ' and crops ', separator: ' ' };
    const prepared = (n: number) => ({ pixels: new Float32Array(12), width: 2, height: 2, numTokens: n, gridRows: 1, gridCols: n });
    const v: VisionContext = {
      ...vision(),
      projector: { ...vision().projector, panAndScanText: words },
      // byte 2 has two crops of 1 token; others none
      prepare: async (i) => ({ hash: `h${i.bytes[0]}`, prepared: i.bytes[0] === 2 ? { ...prepared(2), crops: [prepared(1), prepared(1)] } : prepared(i.bytes[0]!) }),
    };
    const got = await tokenizeImagePrompt({ text, tokenizer: model.tokenizer, vision: v }, `A ${IMAGE_MARKER} B ${IMAGE_MARKER} C`, [img(2), img(3)], { addSpecial: false, parseSpecial: true, param: 'prompt' });
    const enc = (s: string) => model.tokenizer.encode(s, { addSpecial: false, parseSpecial: true });
    const span = (n: number) => [...enc('<img>'), ...Array<number>(n).fill(IMAGE_TOKEN_ID), ...enc('</img>')];
    assert.deepEqual(got.ids, [...enc('A Here: '), ...span(2), ...enc(' and crops '), ...span(1), ...enc(' '), ...span(1), ...enc(' B '), ...span(3), ...enc(' C')]);
    assert.deepEqual(got.images.map((i) => i.prepared.numTokens), [2, 1, 1, 3]);
    assert.ok(got.images.every((i) => i.prepared.crops === undefined), 'the engine gets no crops inside an image');
    const hashes = got.images.map((i) => i.hash);
    assert.equal(hashes[0], 'h2');
    assert.equal(hashes[3], 'h3');
    assert.equal(new Set(hashes).size, 4, 'each crop hashed apart');
    assert.match(hashes[1]!, /^[0-9a-f]{64}$/);
  });

  it('markers that do not match the images, too many images, or no projector are refused', async () => {
    const ctx = { text, tokenizer: model.tokenizer, vision: vision({ ...DEFAULT_IMAGE_LIMITS, maxImages: 2 }) };
    const opts = { addSpecial: true, parseSpecial: true, param: 'messages' };
    await refused(tokenizeImagePrompt(ctx, `one ${IMAGE_MARKER}`, [img(1), img(2)], opts), /1 image marker .* for 2 images/, 'messages');
    await refused(tokenizeImagePrompt(ctx, `${IMAGE_MARKER}${IMAGE_MARKER}${IMAGE_MARKER}`, [img(1), img(2), img(3)], opts), /3 images, more than the 2 .*--max-images-per-request/, 'messages');
    await refused(tokenizeImagePrompt({ ...ctx, vision: undefined }, `${IMAGE_MARKER}`, [img(1)], opts), /--mmproj/, 'messages');
  });
});
