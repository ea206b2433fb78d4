// xgrammar 0.1.27 matches UTF-8 leniently: it lets through bytes no UTF-8 text holds (C0,
// C1, F5–FF) and second bytes out of range after E0, ED, F0 and F4 (overlong forms,
// surrogates, code points past U+10FFFF). On a byte-level vocabulary a random model finds
// them ("\xF4" "\x95" …), the detokenizer turns them into U+FFFD, and a string of 8
// code points becomes 11 (breaking maxLength). This guard keeps a sequence's output valid
// UTF-8: tokens that hold an invalid byte or pair are never allowed, and after a token that
// ends on one of those four lead bytes only tokens starting with a valid second byte are.

/** the second bytes each restricted lead byte allows (RFC 3629); other leads take 80–BF */
const SECOND: ReadonlyMap<number, readonly [number, number]> = new Map([
  [0xe0, [0xa0, 0xbf]],
  [0xed, [0x80, 0x9f]],
  [0xf0, [0x90, 0xbf]],
  [0xf4, [0x80, 0x8f]],
]);

const neverValid = (b: number) => b === 0xc0 || b === 0xc1 || b >= 0xf5;

function clearBit(mask: Int32Array, id: number): void {
  mask[id >> 5]! &= ~(1 << (id & 31));
}

/** whether a token's own bytes hold a byte or a lead/second pair no UTF-8 text has */
function holdsInvalid(bytes: Uint8Array): boolean {
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (neverValid(b)) return true;
    const range = SECOND.get(b);
    const next = bytes[i + 1];
    if (range && next !== undefined && (next < range[0] || next > range[1])) return true;
  }
  return false;
}

export class Utf8Guard {
  /** [maskWords] tokens free of invalid bytes and pairs */
  readonly valid: Int32Array;
  /** lead byte → [maskWords] tokens that may follow a token ending on it */
  private readonly after = new Map<number, Int32Array>();
  /** per token: the restricted lead byte it ends on, or 0 */
  private readonly trailingLead: Uint8Array;

  constructor(tokens: readonly Uint8Array[], maskWords: number) {
    this.valid = new Int32Array(maskWords).fill(-1);
    this.trailingLead = new Uint8Array(tokens.length);
    for (const lead of SECOND.keys()) this.after.set(lead, new Int32Array(maskWords).fill(-1));
    tokens.forEach((bytes, id) => {
      if (holdsInvalid(bytes)) clearBit(this.valid, id);
      const last = bytes[bytes.length - 1];
      if (last !== undefined && SECOND.has(last)) this.trailingLead[id] = last;
      const first = bytes[0];
      if (first === undefined) return;
      for (const [lead, [lo, hi]] of SECOND) if (first < lo || first > hi) clearBit(this.after.get(lead)!, id);
    });
  }

  /** the lead byte pending after `id` (0: none), for `restrictAfter` at the next step */
  leadAfter(id: number): number {
    return this.trailingLead[id] ?? 0;
  }

  /** ANDs into `mask` what may follow a pending lead byte */
  restrictAfter(lead: number, mask: Int32Array): void {
    const allowed = this.after.get(lead);
    if (allowed) for (let w = 0; w < mask.length; w++) mask[w]! &= allowed[w]!;
  }
}
