// Image URLs: fetched only from the hosts the operator allows, hop by hop through redirects,
// within the byte bound (declared or streamed) and the request's deadline; ImageList keeps the
// images in marker order whatever order the fetches finish in.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { IMAGE_MARKER } from '../../src/pipeline/image-input.js';
import { HttpError } from '../../src/server/errors.js';
import { allowedUrl } from '../../src/server/image-fetch.js';
import type { ImageOptions } from '../../src/server/image-fetch.js';
import { ImageList } from '../../src/server/image-list.js';
import { GIF_1X1, PNG_1X1, bytesOf, pngDataUrl, sameBytes } from '../fixtures/api-images.js';

const refused = (status: number, message: RegExp) => (e: unknown) => e instanceof HttpError && e.status === status && message.test(e.message);

describe('image URLs', () => {
  let server: Server;
  let base: string;
  let port: number;
  const requests: string[] = [];
  before(async () => {
    server = createServer((req, res) => {
      requests.push(req.url ?? '');
      const send = (type: string, body: Uint8Array) => res.writeHead(200, { 'content-type': type }).end(body);
      switch (req.url) {
        case '/a.png':
          return setTimeout(() => send('image/png', bytesOf(PNG_1X1)), 50); // finishes after b.gif
        case '/b.gif':
          return send('image/gif', bytesOf(GIF_1X1));
        case '/text':
          return send('text/html', new Uint8Array(Buffer.from('<html>not an image</html>')));
        case '/declared-big':
          return res.writeHead(200, { 'content-length': String(1 << 20) }).end(Buffer.alloc(1 << 20));
        case '/streamed-big':
          res.writeHead(200, { 'content-type': 'image/png' });
          res.write(bytesOf(PNG_1X1));
          for (let i = 0; i < 8; i++) res.write(Buffer.alloc(64 << 10));
          return res.end();
        case '/to-a':
          return res.writeHead(302, { location: '/a.png' }).end();
        case '/to-localhost':
          return res.writeHead(302, { location: `http://localhost:${port}/a.png` }).end();
        case '/loop':
          return res.writeHead(302, { location: '/loop' }).end();
        case '/slow':
          return; // never answers
        default:
          return res.writeHead(404).end();
      }
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
    base = `http://127.0.0.1:${port}`;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  const opts = (o: Partial<ImageOptions> = {}): ImageOptions => ({ maxImageBytes: 100_000, allowedMediaDomains: ['127.0.0.1'], fetchTimeoutMs: 2_000, ...o });
  const fetchAll = async (urls: string[], o?: Partial<ImageOptions>) => {
    const list = new ImageList(opts(o));
    urls.forEach((u, i) => assert.equal(list.addUrl(u, `img${i}`), IMAGE_MARKER));
    return list.images();
  };

  it('no allowed hosts (the default): every http(s) URL refused before anything is fetched', async () => {
    const before = requests.length;
    assert.throws(() => new ImageList(opts({ allowedMediaDomains: [] })).addUrl(`${base}/a.png`, 'p'), refused(400, /does not fetch image URLs: send the image inline as a data URL/));
    assert.throws(() => allowedUrl('http://example.com/x.png', 'p', ['127.0.0.1']), refused(400, /from example.com is not allowed/));
    assert.throws(() => allowedUrl('file:///etc/passwd', 'p', ['*']), refused(400, /scheme file/));
    assert.throws(() => allowedUrl('not a url', 'p', ['*']), refused(400, /neither a data URL nor a valid http\(s\) URL/));
    assert.equal(allowedUrl('http://EXAMPLE.com/x', 'p', ['*']).hostname, 'example.com');
    assert.equal(requests.length, before);
  });

  it('allowed: the bytes, in marker order (a data URL among them), though the first fetch ends last', async () => {
    const images = await fetchAll([`${base}/a.png`, pngDataUrl, `${base}/b.gif`]);
    assert.deepEqual(images.map((i) => i.param), ['img0', 'img1', 'img2']);
    assert.ok(sameBytes(images[0]!.bytes, bytesOf(PNG_1X1)));
    assert.ok(sameBytes(images[1]!.bytes, bytesOf(PNG_1X1)));
    assert.ok(sameBytes(images[2]!.bytes, bytesOf(GIF_1X1)));
  });

  it('redirects: followed within the allowed hosts, refused out of them, at most 3', async () => {
    assert.ok(sameBytes((await fetchAll([`${base}/to-a`]))[0]!.bytes, bytesOf(PNG_1X1)));
    await assert.rejects(fetchAll([`${base}/to-localhost`]), refused(400, /from localhost is not allowed/));
    await assert.rejects(fetchAll([`${base}/loop`]), refused(400, /more than 3 redirects/));
  });

  it('too big (declared or streamed): 413; not an image, an HTTP error, too slow: 400', async () => {
    await assert.rejects(fetchAll([`${base}/declared-big`]), refused(413, /1048576 bytes, over the limit of 100000/));
    await assert.rejects(fetchAll([`${base}/streamed-big`]), refused(413, /over the limit of 100000/));
    await assert.rejects(fetchAll([`${base}/text`]), refused(400, /not an image loom reads/));
    await assert.rejects(fetchAll([`${base}/missing.png`]), refused(400, /answered HTTP 404/));
    const t0 = Date.now();
    await assert.rejects(fetchAll([`${base}/slow`], { fetchTimeoutMs: 200 }), refused(400, /took longer than 0.2 s \(--media-fetch-timeout\)/));
    assert.ok(Date.now() - t0 < 1_500);
  });
});
