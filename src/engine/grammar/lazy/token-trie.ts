// The vocabulary as a byte trie laid out in depth-first order: node i has its byte, its
// depth and the index just past its subtree, so a walk is one forward pass that skips a
// subtree with one assignment when the grammar rejects its prefix.

export class TokenTrie {
  /** per node (node 0 is the root, the empty prefix) */
  readonly byte: Uint8Array;
  readonly depth: Uint16Array;
  /** the node after this one's subtree */
  readonly subtreeEnd: Int32Array;
  /** tokens ending at node i: tokenIds[tokenStart[i] .. tokenStart[i + 1]) */
  readonly tokenStart: Int32Array;
  readonly tokenIds: Int32Array;
  readonly maxDepth: number;

  /** tokens[id]: the token's bytes; empty ones (special tokens) are left out */
  constructor(tokens: readonly Uint8Array[]) {
    const ids = tokens.map((_, id) => id).filter((id) => tokens[id]!.length > 0);
    ids.sort((a, b) => compareBytes(tokens[a]!, tokens[b]!));
    const byte: number[] = [0];
    const depth: number[] = [0];
    const subtreeEnd: number[] = [0];
    const owner: number[] = [];
    const path: number[] = [0];
    let prev: Uint8Array = new Uint8Array(0);
    for (const id of ids) {
      const bytes = tokens[id]!;
      let common = 0;
      while (common < prev.length && common < bytes.length && prev[common] === bytes[common]) common++;
      while (path.length - 1 > common) subtreeEnd[path.pop()!] = byte.length;
      for (let k = common; k < bytes.length; k++) {
        path.push(byte.length);
        byte.push(bytes[k]!);
        depth.push(k + 1);
        subtreeEnd.push(0);
      }
      owner.push(path[bytes.length]!);
      prev = bytes;
    }
    while (path.length > 0) subtreeEnd[path.pop()!] = byte.length;
    this.byte = Uint8Array.from(byte);
    this.depth = Uint16Array.from(depth);
    this.subtreeEnd = Int32Array.from(subtreeEnd);
    // ids are in node order already (a prefix sorts before its extensions)
    this.tokenStart = new Int32Array(byte.length + 1);
    for (const node of owner) this.tokenStart[node + 1]!++;
    for (let i = 0; i < byte.length; i++) this.tokenStart[i + 1]! += this.tokenStart[i]!;
    this.tokenIds = Int32Array.from(ids);
    this.maxDepth = depth.reduce((m, d) => Math.max(m, d), 0);
  }

  get nodes(): number {
    return this.byte.length;
  }
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}
