// Where a model's weights live, as llama.cpp's --no-mmap and --mlock choose: by default each
// model file is mapped read-only and tensors are views of it (start-up reads no tensor bytes,
// the resident set counts the pages touched); a tensor that needs its own layout (the 16-row
// Q4_0/Q8_0 layouts) or a model loaded with mmap off is read into the weight arena. A tensor
// read by rows (Gemma 4's per-layer token table, GBs of which a token reads a few KB) is
// mapped even with mmap off, as llama.cpp maps its lazily read tensors: reading it whole would
// cost its size in RAM and start-up for rows most prompts never touch.
import { fstatSync } from 'node:fs';
import { ModelFormatError } from '../errors.js';
import { allocateLarge, nativeFileMapper } from '../kernels/native.js';
import type { FileMapper } from '../kernels/native.js';
import { WeightArena } from './weight-arena.js';

export interface LoadOptions {
  /** map the model's files and use tensors in place (default true); false reads them into memory (--no-mmap) */
  readonly mmap?: boolean;
  /** lock the weights in RAM (--mlock); a failure (RLIMIT_MEMLOCK) is a warning, as in llama.cpp */
  readonly mlock?: boolean;
  /** where warnings go (default: a line on stderr) */
  readonly warn?: (line: string) => void;
}

/** A tensor the format reader is about to serve: its file (open as fd) and byte range. */
export interface TensorRange {
  readonly path: string;
  readonly fd: number;
  readonly fileSize: number;
  readonly name: string;
  readonly offset: number;
  readonly length: number;
  /** the reader would rewrite it into a load-time layout (the 16-row ones) given bytes of its own */
  readonly relayout?: boolean;
}

/** A view of the tensor's bytes in place, or undefined when they are to be read into memory. */
export type InPlaceBytes = (range: TensorRange) => Uint8Array | undefined;

/** Tensors read by rows, mapped whatever --no-mmap says and never locked (llama.cpp's TENSOR_READ_LAZY). */
const READ_BY_ROWS = new Set(['per_layer_token_embd.weight']);

interface Mapped {
  readonly mapping: object;
  readonly views: ArrayBuffer[];
}

export class ModelMemory {
  readonly arena: WeightArena;
  private readonly mapper: FileMapper | undefined;
  private readonly mappings = new Map<string, Mapped>();
  private lockFailed = false;
  private released = false;

  constructor(private readonly opts: LoadOptions = {}) {
    this.mapper = nativeFileMapper();
    this.arena = new WeightArena((bytes) => {
      const buf = allocateLarge(bytes);
      if (opts.mlock) this.lock(new Uint8Array(buf));
      return buf;
    });
    if (opts.mlock && !this.mapper) this.warn('warning: --mlock needs the native core; weights are not locked');
  }

  /** whether tensors are used in place (mmap on and the native core able to map) */
  get mapsFiles(): boolean {
    return this.opts.mmap !== false && this.mapper !== undefined;
  }

  /** bytes taken by `take`, zeroed, 64-byte aligned, locked with --mlock */
  take = (bytes: number): Uint8Array => this.arena.take(bytes);

  /** the format readers' hook: a tensor's bytes in place where the options allow it */
  inPlace: InPlaceBytes = (r) => {
    const rows = READ_BY_ROWS.has(r.name);
    // a measured layout pays for its copy, except where a token reads one row of the tensor
    if (this.released || !this.mapper || (!rows && (this.opts.mmap === false || r.relayout === true))) return undefined;
    // the readers checked every range against the file's size at open; a file cut shorter
    // since would fault (SIGBUS) on its first missing page instead of failing here
    const size = fstatSync(r.fd).size;
    if (r.offset + r.length > size) {
      throw new ModelFormatError(r.path, `file is truncated: tensor ${r.name} needs bytes ${r.offset}..${r.offset + r.length} but the file now has ${size} bytes`);
    }
    let m = this.mappings.get(r.path);
    if (!m) {
      let mapping: object;
      try {
        mapping = this.mapper.map(r.fd, r.fileSize);
      } catch (e) {
        throw new ModelFormatError(r.path, `cannot map the file (${e instanceof Error ? e.message : String(e)}); --no-mmap reads it instead`);
      }
      m = { mapping, views: [] };
      this.mappings.set(r.path, m);
    }
    const buf = this.mapper.view(m.mapping, r.offset, r.length);
    m.views.push(buf);
    const bytes = new Uint8Array(buf);
    // rows are read one token at a time: read-ahead around each would fetch pages no one asked for
    if (rows) this.mapper.advise(bytes, 'random');
    else if (this.opts.mlock) this.lock(bytes);
    return bytes;
  };

  /** Unmaps every file now; the tensors viewing them read as empty afterwards (never freed memory). */
  release(): void {
    this.released = true;
    for (const m of this.mappings.values()) this.mapper?.unmap(m.mapping, m.views);
    this.mappings.clear();
  }

  private lock(bytes: Uint8Array): void {
    if (this.lockFailed || !this.mapper) return;
    const why = this.mapper.lock(bytes);
    if (why === '') return;
    this.lockFailed = true; // as llama.cpp: one warning, then no more tries
    this.warn(`warning: ${why}; the weights are not locked in RAM`);
  }

  private warn(line: string): void {
    (this.opts.warn ?? ((l: string) => process.stderr.write(`loom: ${l}\n`)))(line);
  }
}
