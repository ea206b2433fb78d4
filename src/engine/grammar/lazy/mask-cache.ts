// What mask walks leave behind, kept within a size: per grammar, and per vocabulary for
// configurations whose signature (signatures.ts) says they mean the same in every grammar
// (a string's inside, a key's rest, a number), so a new schema starts with them walked.

export interface MaskEntry {
  /** the tokens allowed whatever the stack */
  readonly mask: Int32Array;
  /** the tokens to check against the configuration's own stack */
  readonly unsure: Int32Array;
}

/** the tokens under one first byte, walked from the configuration that byte leads to */
export interface SubtreeEntry {
  readonly ids: Int32Array;
  readonly unsure: Int32Array;
}

/** the tokens under a set of first bytes (trie nodes) a configuration leads to */
export interface GroupEntry {
  readonly tops: ReadonlySet<number>;
  readonly mask: Int32Array;
}

/** A map that forgets its oldest entries past `limit` (in the units `size` counts): first in, first out, so a hit costs one lookup. */
export class BoundedCache<K, V> {
  private readonly entries = new Map<K, V>();
  private used = 0;

  constructor(
    private readonly limit: number,
    private readonly size: (v: V) => number,
  ) {}

  get(key: K): V | undefined {
    return this.entries.get(key);
  }

  set(key: K, v: V): void {
    const old = this.entries.get(key);
    if (old !== undefined) {
      this.used -= this.size(old);
      this.entries.delete(key);
    }
    this.entries.set(key, v);
    this.used += this.size(v);
    if (this.used <= this.limit) return;
    for (const [k, x] of this.entries) {
      if (this.used <= this.limit || this.entries.size === 1) break;
      this.entries.delete(k);
      this.used -= this.size(x);
    }
  }

  clear(): void {
    this.entries.clear();
    this.used = 0;
  }
}

export const maskEntryBytes = (e: MaskEntry): number => 4 * (e.mask.length + e.unsure.length);
export const groupEntryBytes = (e: GroupEntry): number => 4 * e.mask.length + 8 * e.tops.size;
export const subtreeEntryBytes = (e: SubtreeEntry): number => 4 * (e.ids.length + e.unsure.length);

/**
 * One vocabulary's walks shared by all its grammars, keyed by configuration signature ids
 * (subtrees: id × trie nodes + node), and the ids of rule and configuration signatures.
 */
export class SharedWalks {
  readonly ruleIds = new Map<string, number>();
  private readonly configIds = new Map<string, number>();
  readonly masks: BoundedCache<number, MaskEntry>;
  readonly subtrees: BoundedCache<number, SubtreeEntry>;
  readonly groups: BoundedCache<number, GroupEntry>;

  constructor(bytes = 64 << 20) {
    this.masks = new BoundedCache(bytes / 4, maskEntryBytes);
    this.subtrees = new BoundedCache(bytes / 2, subtreeEntryBytes);
    this.groups = new BoundedCache(bytes / 4, groupEntryBytes);
  }

  configId(signature: string): number {
    let id = this.configIds.get(signature);
    if (id === undefined) this.configIds.set(signature, (id = this.configIds.size));
    return id;
  }

  ruleId(signature: string): number {
    let id = this.ruleIds.get(signature);
    if (id === undefined) this.ruleIds.set(signature, (id = this.ruleIds.size));
    return id;
  }
}
