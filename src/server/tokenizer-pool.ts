// A few worker threads that each hold the model's tokenizer (tokenizer-worker.ts) and take
// the long texts off the serving thread: encode, decode, chat-template rendering. A job goes
// to the worker with the least text waiting. A worker that dies fails its jobs and is
// replaced once; while no worker runs, `running` is false and callers work inline.
import { Worker } from 'node:worker_threads';
import { InvalidArgumentError, LoomError } from '../errors.js';
import { ChatTemplateError } from '../tokenizer/chat-template.js';
import type { ChatMessage } from '../tokenizer/chat-template.js';
import type { TokenizerJob, TokenizerOutbound, TokenizerWorkerInit, WorkerErrorKind } from './tokenizer-protocol.js';

export interface TokenizerPoolOptions extends TokenizerWorkerInit {
  /** worker threads (≥ 1) */
  readonly size: number;
}

export interface JsonIds {
  /** the ids as a JSON array */
  readonly json: string;
  readonly count: number;
}

type Result = Int32Array | string | JsonIds;

interface Pending {
  resolve(value: Result): void;
  reject(err: Error): void;
  /** characters (or ids) of the job: what the worker has to get through */
  readonly size: number;
}

const sizeOf = (job: TokenizerJob): number =>
  job.op === 'encode' ? job.text.length : job.op === 'decode' ? job.ids.length : job.messages.reduce((n, m) => n + m.content.length, 0);

class Slot {
  readonly pending = new Map<number, Pending>();
  /** sum of the pending jobs' sizes */
  queued = 0;
  dead = false;

  constructor(readonly worker: Worker) {
    worker.unref(); // an idle pool never keeps the process alive
  }

  post(id: number, job: TokenizerJob, pending: Pending): void {
    if (this.pending.size === 0) this.worker.ref();
    this.pending.set(id, pending);
    this.queued += pending.size;
    this.worker.postMessage({ id, job }, job.op === 'decode' ? [job.ids.buffer as ArrayBuffer] : []);
  }

  settle(id: number): Pending | undefined {
    const p = this.pending.get(id);
    this.pending.delete(id);
    this.queued -= p?.size ?? 0;
    if (this.pending.size === 0) this.worker.unref();
    return p;
  }

  fail(message: string): void {
    this.dead = true;
    // not a LoomError: the request was fine, the server failed it (a 500)
    for (const p of this.pending.values()) p.reject(new Error(message));
    this.pending.clear();
    this.queued = 0;
  }
}

function spawn(init: TokenizerWorkerInit): Promise<Slot> {
  // a worker inherits node's flags; `--input-type` (node -e) stops it loading its file
  const execArgv = process.execArgv.filter((a) => !a.startsWith('--input-type'));
  const worker = new Worker(new URL('./tokenizer-worker.js', import.meta.url), { workerData: init, execArgv });
  return new Promise((resolve, reject) => {
    const onMessage = (msg: TokenizerOutbound): void => {
      worker.off('message', onMessage);
      if (msg.type === 'ready') return resolve(new Slot(worker));
      void worker.terminate();
      reject(new LoomError(`the tokenizer worker could not load ${init.modelPath}: ${msg.type === 'fatal' ? msg.message : msg.type}`));
    };
    worker.on('message', onMessage);
    worker.once('error', (err) => reject(new LoomError(`the tokenizer worker failed while loading: ${err.message}`)));
    worker.once('exit', (code) => reject(new LoomError(`the tokenizer worker exited (code ${code}) while loading`)));
  });
}

function errorOf(kind: WorkerErrorKind, message: string, param: string | null): Error {
  if (kind === 'chat-template') return new ChatTemplateError(message);
  if (kind === 'invalid-argument') return new InvalidArgumentError(message, param);
  return new Error(message); // a bug in the worker: a 500, as it would be inline
}

export class TokenizerPool {
  private nextId = 1;
  private closed = false;
  private readonly replaced = new WeakSet<Slot>();

  private constructor(
    private readonly init: TokenizerWorkerInit,
    private readonly slots: Slot[],
  ) {
    for (const slot of slots) this.watch(slot);
  }

  /** Starts `size` workers and resolves once each has loaded the tokenizer. */
  static async start(opts: TokenizerPoolOptions): Promise<TokenizerPool> {
    const init: TokenizerWorkerInit = { modelPath: opts.modelPath, ...(opts.chatTemplate !== undefined && { chatTemplate: opts.chatTemplate }) };
    const started = await Promise.allSettled(Array.from({ length: Math.max(1, opts.size) }, () => spawn(init)));
    const slots = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) {
      await Promise.all(slots.map((s) => s.worker.terminate()));
      throw failed.reason;
    }
    return new TokenizerPool(init, slots);
  }

  /** some worker is running */
  get running(): boolean {
    return !this.closed && this.slots.some((s) => !s.dead);
  }

  /** characters (or ids) queued before a new job on the least busy worker */
  get backlog(): number {
    const live = this.slots.filter((s) => !s.dead);
    return live.length === 0 ? 0 : Math.min(...live.map((s) => s.queued));
  }

  get size(): number {
    return this.slots.filter((s) => !s.dead).length;
  }

  async encode(text: string, addSpecial: boolean, parseSpecial: boolean): Promise<Int32Array> {
    return (await this.submit({ op: 'encode', text, addSpecial, parseSpecial })) as Int32Array;
  }

  /** the ids as JSON text, serialized in the worker (a million ids take tens of ms to stringify) */
  async encodeJson(text: string, addSpecial: boolean, parseSpecial: boolean): Promise<JsonIds> {
    return (await this.submit({ op: 'encode', text, addSpecial, parseSpecial, json: true })) as JsonIds;
  }

  /** `ids` is transferred: the caller's copy is emptied */
  async decode(ids: Int32Array, skipSpecial: boolean): Promise<string> {
    return (await this.submit({ op: 'decode', ids, skipSpecial })) as string;
  }

  async render(messages: readonly ChatMessage[], addGenerationPrompt: boolean, extra?: Readonly<Record<string, unknown>>): Promise<string> {
    return (await this.submit({ op: 'render', messages, addGenerationPrompt, ...(extra && { extra }) })) as string;
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.slots.map((s) => s.worker.terminate()));
  }

  private submit(job: TokenizerJob): Promise<Result> {
    const live = this.slots.filter((s) => !s.dead);
    if (this.closed || live.length === 0) return Promise.reject(new Error('the tokenizer workers are not running'));
    const slot = live.reduce((a, b) => (b.queued < a.queued ? b : a));
    const id = this.nextId++;
    return new Promise((resolve, reject) => slot.post(id, job, { resolve, reject, size: sizeOf(job) }));
  }

  private watch(slot: Slot): void {
    slot.worker.on('message', (msg: TokenizerOutbound) => {
      if (msg.type === 'ready' || msg.type === 'fatal') return;
      const p = slot.settle(msg.id);
      if (msg.type === 'error') p?.reject(errorOf(msg.kind, msg.message, msg.param));
      else p?.resolve(msg.type === 'ids' ? msg.ids : msg.type === 'text' ? msg.text : { json: msg.json, count: msg.count });
    });
    const die = (why: string): void => {
      if (slot.dead) return;
      slot.fail(why);
      if (!this.closed) void this.replace(slot);
    };
    slot.worker.on('error', (err) => die(`the tokenizer worker failed: ${err.message}`));
    slot.worker.on('exit', (code) => die(`the tokenizer worker exited (code ${code})`));
  }

  /** one replacement per original worker: a worker that keeps dying leaves its place empty */
  private async replace(slot: Slot): Promise<void> {
    if (this.replaced.has(slot)) return;
    try {
      const fresh = await spawn(this.init);
      if (this.closed) return void (await fresh.worker.terminate());
      this.replaced.add(fresh);
      this.slots[this.slots.indexOf(slot)] = fresh;
      this.watch(fresh);
    } catch {
      // stays dead; the callers work inline
    }
  }
}
