// Streaming text that may end in the first characters of a tag ("</thi" of "</think>"):
// how much of it can go out now and how much must wait for the next delta.

/** The length of the longest suffix of `text` that is a proper prefix of one of `tags`. */
export function partialTagLength(text: string, tags: readonly string[]): number {
  let best = 0;
  for (const tag of tags) {
    for (let n = Math.min(tag.length - 1, text.length); n > best; n--) {
      if (text.endsWith(tag.slice(0, n))) {
        best = n;
        break;
      }
    }
  }
  return best;
}
