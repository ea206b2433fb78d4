/**
 * Where a model's weights live: tensors carved 64-byte-aligned out of large chunks from
 * `allocate` (the native core's huge-page buffers, see native/huge-pages.h), so that a
 * decode step's weight stream crosses 2 MiB pages, not thousands of 4 KiB ones. A tensor
 * of half a chunk or more gets a chunk of its own. Untouched chunk tails cost address
 * space only. The arena never frees a tensor on its own: chunks go when nothing holds them.
 */
export type AllocateBytes = (bytes: number) => ArrayBuffer;

const ALIGN = 64;

export class WeightArena {
  private chunk: ArrayBuffer | undefined;
  private used = 0;

  constructor(
    private readonly allocate: AllocateBytes,
    private readonly chunkBytes = 64 << 20,
  ) {}

  /** `bytes` zeroed bytes of their own */
  take(bytes: number): Uint8Array {
    if (bytes >= this.chunkBytes / 2) return new Uint8Array(this.allocate(bytes));
    const at = Math.ceil(this.used / ALIGN) * ALIGN;
    if (!this.chunk || at + bytes > this.chunk.byteLength) {
      this.chunk = this.allocate(this.chunkBytes);
      this.used = bytes;
      return new Uint8Array(this.chunk, 0, bytes);
    }
    this.used = at + bytes;
    return new Uint8Array(this.chunk, at, bytes);
  }
}
