// Code-point ranges as UTF-8 byte sequences: a character class over code points becomes
// alternatives of byte-range sequences ([C2-DF][80-BF] and so on), so a byte-level automaton
// matches exactly the valid UTF-8 encodings of the class (never a surrogate, never an
// overlong form) and a token may end in the middle of a character.

/** one byte range per position of the encoding: [[lo, hi], ...] */
export type ByteRangeSeq = ReadonlyArray<readonly [number, number]>;

export const MAX_CODE_POINT = 0x10ffff;
const SURROGATES: readonly [number, number] = [0xd800, 0xdfff];
/** the last code point of each encoded length */
const LENGTH_ENDS = [0x7f, 0x7ff, 0xffff, MAX_CODE_POINT];

/** The UTF-8 encoding of one code point (no surrogates). */
export function encodeUtf8(cp: number): number[] {
  if (cp < 0x80) return [cp];
  if (cp < 0x800) return [0xc0 | (cp >> 6), 0x80 | (cp & 0x3f)];
  if (cp < 0x10000) return [0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f)];
  return [0xf0 | (cp >> 18), 0x80 | ((cp >> 12) & 0x3f), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f)];
}

/** Sorted, merged, within [0, MAX_CODE_POINT]. */
export function normalizeRanges(ranges: ReadonlyArray<readonly [number, number]>): Array<[number, number]> {
  const sorted = ranges.filter(([lo, hi]) => lo <= hi).map(([lo, hi]): [number, number] => [Math.max(0, lo), Math.min(MAX_CODE_POINT, hi)]);
  sorted.sort((a, b) => a[0] - b[0]);
  const out: Array<[number, number]> = [];
  for (const r of sorted) {
    const last = out[out.length - 1];
    if (last && r[0] <= last[1] + 1) last[1] = Math.max(last[1], r[1]);
    else out.push([r[0], r[1]]);
  }
  return out;
}

/** The code points not in the ranges. */
export function complementRanges(ranges: ReadonlyArray<readonly [number, number]>): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  let next = 0;
  for (const [lo, hi] of normalizeRanges(ranges)) {
    if (lo > next) out.push([next, lo - 1]);
    next = hi + 1;
  }
  if (next <= MAX_CODE_POINT) out.push([next, MAX_CODE_POINT]);
  return out;
}

/** The byte-range sequences whose union is exactly the UTF-8 encodings of the ranges. */
export function utf8Sequences(ranges: ReadonlyArray<readonly [number, number]>): ByteRangeSeq[] {
  const out: ByteRangeSeq[] = [];
  for (const [lo, hi] of normalizeRanges(ranges)) {
    // surrogates have no UTF-8 encoding
    if (lo <= SURROGATES[1] && hi >= SURROGATES[0]) {
      if (lo < SURROGATES[0]) splitByLength(lo, SURROGATES[0] - 1, out);
      if (hi > SURROGATES[1]) splitByLength(SURROGATES[1] + 1, hi, out);
    } else splitByLength(lo, hi, out);
  }
  return out;
}

function splitByLength(lo: number, hi: number, out: ByteRangeSeq[]): void {
  let start = lo;
  for (const end of LENGTH_ENDS) {
    if (start > hi) return;
    if (start <= end) {
      splitByContinuation(start, Math.min(hi, end), out);
      start = end + 1;
    }
  }
}

/** Splits a same-length range until every byte position is an independent range. */
function splitByContinuation(lo: number, hi: number, out: ByteRangeSeq[]): void {
  const n = encodeUtf8(lo).length;
  for (let i = 1; i < n; i++) {
    const m = (1 << (6 * i)) - 1;
    if ((lo & ~m) !== (hi & ~m)) {
      if ((lo & m) !== 0) {
        splitByContinuation(lo, lo | m, out);
        splitByContinuation((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) !== m) {
        splitByContinuation(lo, (hi & ~m) - 1, out);
        splitByContinuation(hi & ~m, hi, out);
        return;
      }
    }
  }
  const a = encodeUtf8(lo);
  const b = encodeUtf8(hi);
  out.push(a.map((x, k) => [x, b[k]!] as const));
}
