// A tiny byte-pair-encoding trainer: the most frequent adjacent symbol pairs of a word
// list, merged in turn. Used by the test fixtures' vocabularies and by `bench make-model`.

/** BPE training over words (each a list of symbols): `numMerges` most frequent adjacent pairs, ties by text. */
export function trainMerges(words: Map<string, number>, split: (w: string) => string[], numMerges: number): [string, string][] {
  const corpus = [...words].map(([w, count]) => ({ syms: split(w), count }));
  const merges: [string, string][] = [];
  for (let m = 0; m < numMerges; m++) {
    const counts = new Map<string, number>();
    for (const { syms, count } of corpus) {
      for (let i = 0; i + 1 < syms.length; i++) {
        const key = syms[i] + '\u0000' + syms[i + 1];
        counts.set(key, (counts.get(key) ?? 0) + count);
      }
    }
    let best: string | undefined;
    let bestCount = 0;
    for (const [key, c] of counts) if (c > bestCount || (c === bestCount && best !== undefined && key < best)) [best, bestCount] = [key, c];
    if (best === undefined) break;
    const [l, r] = best.split('\u0000') as [string, string];
    merges.push([l, r]);
    for (const w of corpus) {
      const out: string[] = [];
      for (let i = 0; i < w.syms.length; i++) {
        if (i + 1 < w.syms.length && w.syms[i] === l && w.syms[i + 1] === r) {
          out.push(l + r);
          i++;
        } else out.push(w.syms[i]!);
      }
      w.syms = out;
    }
  }
  return merges;
}

/** word → occurrences */
export function countWords(words: readonly string[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const w of words) m.set(w, (m.get(w) ?? 0) + 1);
  return m;
}
