// Inline images (base64, data URLs) decoded and checked at parse time: strict base64, the
// byte bound before decoding, the data URL's media type, the file's magic bytes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HttpError } from '../../src/server/errors.js';
import { base64Image, dataUrlImage, imageFormat } from '../../src/server/image-data.js';
import { GIF_1X1, PNG_1X1, bytesOf, pngDataUrl, sameBytes } from '../fixtures/api-images.js';

const refused = (status: number, message: RegExp, param = 'p') => (e: unknown) => e instanceof HttpError && e.status === status && message.test(e.message) && e.param === param;

describe('image-data', () => {
  it('reads the four formats by their magic bytes, nothing else', () => {
    assert.equal(imageFormat(bytesOf(PNG_1X1)), 'png');
    assert.equal(imageFormat(bytesOf(GIF_1X1)), 'gif');
    assert.equal(imageFormat(new Uint8Array([0xff, 0xd8, 0xff, 0xe0])), 'jpeg');
    assert.equal(imageFormat(new Uint8Array([...Buffer.from('RIFF'), 0, 0, 0, 0, ...Buffer.from('WEBPVP8 ')])), 'webp');
    assert.equal(imageFormat(new Uint8Array(Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>'))), undefined);
    assert.equal(imageFormat(new Uint8Array(Buffer.from('BM'))), undefined);
  });

  it('base64: the file bytes exactly; line breaks and the URL-safe alphabet accepted', () => {
    assert.ok(sameBytes(base64Image(PNG_1X1, 'p', 1000).bytes, bytesOf(PNG_1X1)));
    assert.equal(base64Image(PNG_1X1, 'p', 1000).param, 'p');
    const wrapped = PNG_1X1.replace(/(.{20})/g, '$1\n');
    assert.ok(sameBytes(base64Image(wrapped, 'p', 1000).bytes, bytesOf(PNG_1X1)));
    const urlSafe = Buffer.from(bytesOf(PNG_1X1)).toString('base64url');
    assert.ok(sameBytes(base64Image(urlSafe, 'p', 1000).bytes, bytesOf(PNG_1X1)));
  });

  it('base64: bad characters, a bad length, not an image, empty: 400', () => {
    assert.throws(() => base64Image('iVBOR*w0KGgo', 'p', 1000), refused(400, /not valid base64/));
    assert.throws(() => base64Image(`${PNG_1X1}A`, 'p', 1000), refused(400, /not valid base64/));
    assert.throws(() => base64Image(Buffer.from('hello world, no image').toString('base64'), 'p', 1000), refused(400, /PNG, JPEG, GIF or WebP/));
    assert.throws(() => base64Image('', 'p', 1000), refused(400, /empty/));
  });

  it('over the byte bound: 413, decided on the base64 length before decoding', () => {
    const n = bytesOf(PNG_1X1).length;
    assert.equal(base64Image(PNG_1X1, 'p', n).bytes.length, n);
    assert.throws(() => base64Image(PNG_1X1, 'p', n - 1), refused(413, new RegExp(`${n} bytes, over the limit of ${n - 1}`)));
    // 40 MB of base64 that is not even valid: refused by size, not by decoding it
    assert.throws(() => base64Image('!'.repeat(40 << 20), 'p', 10 << 20), refused(413, /over the limit/));
  });

  it('data URLs: an image media type, base64; the rest refused', () => {
    assert.ok(sameBytes(dataUrlImage(pngDataUrl, 'p', 1000).bytes, bytesOf(PNG_1X1)));
    // a mislabelled type is fine as long as it is an image type: the bytes decide the format
    assert.ok(sameBytes(dataUrlImage(`data:image/jpeg;base64,${PNG_1X1}`, 'p', 1000).bytes, bytesOf(PNG_1X1)));
    assert.throws(() => dataUrlImage(`data:text/plain;base64,${PNG_1X1}`, 'p', 1000), refused(400, /"text\/plain" is not an image/));
    assert.throws(() => dataUrlImage('data:,hello', 'p', 1000), refused(400, /"text\/plain" is not an image/));
    assert.throws(() => dataUrlImage('data:image/png,rawbytes', 'p', 1000), refused(400, /must be base64/));
    assert.throws(() => dataUrlImage('data:image/png;base64', 'p', 1000), refused(400, /comma/));
    assert.throws(() => dataUrlImage('data:image/svg+xml;base64,' + Buffer.from('<svg/>').toString('base64'), 'p', 1000), refused(400, /PNG, JPEG, GIF or WebP/));
  });
});
