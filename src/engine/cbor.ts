// The few CBOR items the KV-event block hash needs, in RFC 8949's deterministic encoding
// (§4.2.1: shortest argument, definite lengths). Enough for integers in [−2^64, 2^64 − 1],
// text strings, arrays and null.

export type CborValue = number | bigint | string | null | readonly CborValue[];

export function encodeCbor(value: CborValue): Uint8Array {
  const out: number[] = [];
  write(value, out);
  return Uint8Array.from(out);
}

function write(value: CborValue, out: number[]): void {
  if (value === null) out.push(0xf6);
  else if (typeof value === 'number' || typeof value === 'bigint') {
    // a negative integer n is major type 1 with argument −1 − n (an image position's cache key, engine/image-spans.ts)
    const n = BigInt(value);
    if (n < 0n) head(1, -1n - n, out);
    else head(0, n, out);
  }
  else if (typeof value === 'string') {
    const bytes = new TextEncoder().encode(value);
    head(3, BigInt(bytes.length), out);
    for (const b of bytes) out.push(b);
  } else {
    head(4, BigInt(value.length), out);
    for (const item of value) write(item, out);
  }
}

/** major type and argument: the argument in the fewest bytes (0–23 inline, else 1/2/4/8 bytes) */
function head(major: number, arg: bigint, out: number[]): void {
  if (arg < 0n || arg > 0xffffffffffffffffn) throw new RangeError(`CBOR argument out of range: ${arg}`);
  const m = major << 5;
  if (arg < 24n) return void out.push(m | Number(arg));
  const width = arg < 0x100n ? 1 : arg < 0x10000n ? 2 : arg < 0x100000000n ? 4 : 8;
  out.push(m | { 1: 24, 2: 25, 4: 26, 8: 27 }[width]!);
  for (let i = width - 1; i >= 0; i--) out.push(Number((arg >> BigInt(8 * i)) & 0xffn));
}
