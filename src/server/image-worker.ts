// An image worker thread: holds the vision projector (its file mapped, as the engine's) and
// makes request images ready: decode (sharp), check the limits, hash, and the projector's
// resize and normalize, so the serving thread never runs a 4000 × 3000 photo's resize.
import { parentPort, workerData } from 'node:worker_threads';
import { InvalidArgumentError } from '../errors.js';
import { loadProjector } from '../model/vision/projector-file.js';
import { inlineVision } from '../pipeline/images.js';
import type { ImageJob, ImageWorkerInit, ImageWorkerOutbound } from './image-pool.js';

const port = parentPort!;
try {
  const init = workerData as ImageWorkerInit;
  const vision = inlineVision(loadProjector(init.mmproj, init.textConfig), init.limits);
  // one image at a time: a decoded 40 MP photo is 120 MB, so a request's 16 are never all in memory at once
  let queue: Promise<void> = Promise.resolve();
  port.on('message', ({ id, input }: ImageJob) => {
    queue = queue.then(() => vision.prepare(input)).then(
      (ready) => port.postMessage({ type: 'ready-image', id, ready } satisfies ImageWorkerOutbound, [ready.prepared, ...(ready.prepared.crops ?? [])].map((p) => p.pixels.buffer as ArrayBuffer)),
      (err: unknown) => {
        const message = err instanceof Error ? err.message : String(err);
        const param = err instanceof InvalidArgumentError ? err.param : null;
        port.postMessage({ type: 'error', id, message, param, invalid: err instanceof InvalidArgumentError } satisfies ImageWorkerOutbound);
      },
    );
  });
  port.postMessage({ type: 'ready' } satisfies ImageWorkerOutbound);
} catch (err) {
  port.postMessage({ type: 'fatal', message: err instanceof Error ? err.message : String(err) } satisfies ImageWorkerOutbound);
  port.close();
}
