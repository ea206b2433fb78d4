// A few worker threads (image-worker.ts) that make request images ready off the serving
// thread: decode, limits, hash, and the projector's prepare (resize, normalize). A job goes
// to the worker with the fewest images waiting; a worker that dies fails its jobs (a 500), the
// others go on, and it is replaced once (a worker that keeps dying leaves its place empty).
import { Worker } from 'node:worker_threads';
import { InvalidArgumentError, LoomError } from '../errors.js';
import type { ModelConfig } from '../model/weights.js';
import type { VisionProjector } from '../model/vision/projector.js';
import type { ImageInput } from '../pipeline/image-input.js';
import type { ImageLimits, ReadyImage, VisionContext } from '../pipeline/images.js';

export interface ImageWorkerInit {
  readonly mmproj: string;
  readonly textConfig: ModelConfig;
  readonly limits: ImageLimits;
}

export interface ImageJob {
  readonly id: number;
  readonly input: ImageInput;
}

export type ImageWorkerOutbound =
  | { readonly type: 'ready' }
  | { readonly type: 'fatal'; readonly message: string }
  | { readonly type: 'ready-image'; readonly id: number; readonly ready: ReadyImage }
  | { readonly type: 'error'; readonly id: number; readonly message: string; readonly param: string | null; readonly invalid: boolean };

interface Pending {
  resolve(r: ReadyImage): void;
  reject(err: Error): void;
}

class Slot {
  readonly pending = new Map<number, Pending>();
  dead = false;
  constructor(
    readonly worker: Worker,
    onDeath: (slot: Slot) => void = () => {},
  ) {
    worker.unref();
    worker.on('message', (msg: ImageWorkerOutbound) => {
      if (msg.type !== 'ready-image' && msg.type !== 'error') return;
      const p = this.pending.get(msg.id);
      this.pending.delete(msg.id);
      if (this.pending.size === 0) worker.unref();
      if (msg.type === 'ready-image') p?.resolve(msg.ready);
      else p?.reject(msg.invalid ? new InvalidArgumentError(msg.message, msg.param) : new Error(msg.message));
    });
    const die = (why: string): void => {
      if (this.dead) return;
      this.dead = true;
      for (const p of this.pending.values()) p.reject(new Error(why));
      this.pending.clear();
      onDeath(this);
    };
    worker.on('error', (err) => die(`the image worker failed: ${err.message}`));
    worker.on('exit', (code) => die(`the image worker exited (code ${code})`));
  }
}

function spawn(init: ImageWorkerInit, onDeath?: (slot: Slot) => void): Promise<Slot> {
  const execArgv = process.execArgv.filter((a) => !a.startsWith('--input-type'));
  const worker = new Worker(new URL('./image-worker.js', import.meta.url), { workerData: init, execArgv });
  return new Promise((resolve, reject) => {
    const onMessage = (msg: ImageWorkerOutbound): void => {
      worker.off('message', onMessage);
      if (msg.type === 'ready') return resolve(new Slot(worker, onDeath));
      void worker.terminate();
      reject(new LoomError(`the image worker could not load ${init.mmproj}: ${msg.type === 'fatal' ? msg.message : msg.type}`));
    };
    worker.on('message', onMessage);
    worker.once('error', (err) => reject(new LoomError(`the image worker failed while loading: ${err.message}`)));
  });
}

export class ImagePool implements VisionContext {
  private nextId = 1;
  private closed = false;
  private readonly slots: Slot[] = [];
  private readonly replacements = new WeakSet<Slot>();

  private constructor(
    readonly projector: VisionProjector,
    private readonly init: ImageWorkerInit,
  ) {}

  get limits(): ImageLimits {
    return this.init.limits;
  }

  /** workers running now */
  get size(): number {
    return this.slots.filter((s) => !s.dead).length;
  }

  /** Starts `size` workers, each with the projector `projector` was read from. */
  static async start(projector: VisionProjector, init: ImageWorkerInit, size: number): Promise<ImagePool> {
    const pool = new ImagePool(projector, init);
    const started = await Promise.allSettled(Array.from({ length: Math.max(1, size) }, () => spawn(init, (s) => void pool.replace(s))));
    pool.slots.push(...started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : [])));
    const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) {
      await pool.close();
      throw failed.reason;
    }
    return pool;
  }

  /** one replacement per original worker, so a worker that keeps dying cannot loop */
  private async replace(dead: Slot): Promise<void> {
    if (this.closed || this.replacements.has(dead)) return;
    try {
      const fresh = await spawn(this.init, (s) => void this.replace(s));
      if (this.closed) return void (await fresh.worker.terminate());
      const at = this.slots.indexOf(dead);
      if (at < 0) return void (await fresh.worker.terminate());
      this.replacements.add(fresh);
      this.slots[at] = fresh;
    } catch {
      // its place stays empty; the other workers go on
    }
  }

  prepare(input: ImageInput): Promise<ReadyImage> {
    const live = this.slots.filter((s) => !s.dead);
    if (this.closed || live.length === 0) return Promise.reject(new Error('the image workers are not running'));
    const slot = live.reduce((a, b) => (b.pending.size < a.pending.size ? b : a));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (slot.pending.size === 0) slot.worker.ref();
      slot.pending.set(id, { resolve, reject });
      slot.worker.postMessage({ id, input } satisfies ImageJob);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.slots.map((s) => s.worker.terminate()));
  }
}
