// The image workers: the same prepared pixels and hash as preparing on this thread, refusals
// as InvalidArgumentErrors naming the field, several images at once.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { after, before, describe, it } from 'node:test';
import { InvalidArgumentError } from '../../src/errors.js';
import { loadProjector } from '../../src/model/vision/projector-file.js';
import type { LoadedProjector } from '../../src/model/vision/projector-file.js';
import { DEFAULT_IMAGE_LIMITS, inlineVision } from '../../src/pipeline/images.js';
import { ImagePool } from '../../src/server/image-pool.js';
import { fixtureModel } from '../fixtures/engine-run.js';
import { gemma3PanAndScanFolder } from '../fixtures/hf-gemma3-vision.js';
import { loadModel } from '../../src/model/load.js';
import { PROJECTOR_FIXTURES, projectorFixturePath } from '../fixtures/mmproj-fixture.js';
import { IMAGE_DIR, TEST_IMAGES } from '../fixtures/test-images.js';

describe('image workers', () => {
  const text = fixtureModel('gemma3-q8_0');
  const mmproj = projectorFixturePath(PROJECTOR_FIXTURES.find((p) => p.name === 'mmproj-gemma3-q8_0')!);
  let projector: LoadedProjector;
  let pool: ImagePool;
  before(async () => {
    projector = loadProjector(mmproj, text.config);
    pool = await ImagePool.start(projector, { mmproj, textConfig: text.config, limits: { ...DEFAULT_IMAGE_LIMITS, maxPixels: 5000 } }, 2);
  });
  after(async () => {
    await pool.close();
    projector.dispose();
  });

  it('prepare as this thread does, several at once', async () => {
    const inputs = TEST_IMAGES.filter((i) => i.width * i.height <= 5000).map((i, k) => ({ bytes: readFileSync(join(IMAGE_DIR, i.file)), param: `images[${k}]` }));
    const here = await Promise.all(inputs.map((i) => inlineVision(projector).prepare(i)));
    const there = await Promise.all(inputs.map((i) => pool.prepare(i)));
    there.forEach((r, k) => {
      assert.equal(r.hash, here[k]!.hash);
      assert.equal(r.prepared.numTokens, here[k]!.prepared.numTokens);
      assert.deepEqual(r.prepared.pixels, here[k]!.prepared.pixels);
    });
  });

  it('a worker that dies fails its jobs and is replaced once', async () => {
    const input = { bytes: readFileSync(join(IMAGE_DIR, TEST_IMAGES[0]!.file)), param: 'images[0]' };
    const slots = (pool as unknown as { slots: { worker: Worker; dead: boolean }[] }).slots;
    const first = slots[0]!.worker;
    const job = Promise.all([pool.prepare(input), pool.prepare(input), pool.prepare(input)]);
    await first.terminate();
    await assert.rejects(job, /image worker exited/);
    for (let i = 0; i < 400 && pool.size < 2; i++) await new Promise((r) => setTimeout(r, 25));
    assert.equal(pool.size, 2, 'a replacement worker runs');
    assert.notEqual(slots[0]!.worker, first);
    const here = await inlineVision(projector).prepare(input);
    for (let k = 0; k < 3; k++) assert.equal((await pool.prepare(input)).hash, here.hash);
    // the replacement is not replaced again: a worker that keeps dying leaves its place empty
    await slots[0]!.worker.terminate();
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(pool.size, 1);
    assert.equal((await pool.prepare(input)).hash, here.hash);
  });

  it('a broken or too large image is an InvalidArgumentError naming its field', async () => {
    await assert.rejects(pool.prepare({ bytes: Buffer.from('nope'), param: 'messages[1].content[0]' }), (e: unknown) => e instanceof InvalidArgumentError && e.param === 'messages[1].content[0]');
    // wide-97x53 has 5141 pixels, over this pool's 5000
    const big = { bytes: readFileSync(join(IMAGE_DIR, 'wide-97x53.png')), param: 'images[0]' };
    await assert.rejects(pool.prepare(big), (e: unknown) => e instanceof InvalidArgumentError && e.param === 'images[0]' && /--max-image-pixels/.test(e.message));
  });
});

describe('image workers on a Gemma 3 folder with pan and scan', () => {
  it('the crops come back too, as this thread prepares them', async () => {
    const folder = gemma3PanAndScanFolder();
    const model = loadModel(folder);
    const projector = loadProjector(folder, model.config);
    const pool = await ImagePool.start(projector, { mmproj: folder, textConfig: model.config, limits: DEFAULT_IMAGE_LIMITS }, 1);
    try {
      const input = { bytes: readFileSync(join(IMAGE_DIR, 'wide-97x53.png')), param: 'images[0]' };
      const [here, there] = [await inlineVision(projector).prepare(input), await pool.prepare(input)];
      assert.equal(there.prepared.crops?.length, 2);
      assert.deepEqual(there, here);
    } finally {
      await pool.close();
      projector.dispose();
      model.dispose();
    }
  });
});
