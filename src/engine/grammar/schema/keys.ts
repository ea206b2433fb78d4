// Keys of further properties: a JSON string that is none of the listed names and starts with
// none of the literal prefixes patternProperties claim (the complement of a trie). Each trie
// node costs xgrammar one pass over the vocabulary when it compiles (its "any other
// character" branch takes nearly every token), so the caller bounds the node count.
import type { SchemaCompiler } from './compile.js';

/** a JSON string's raw characters (escapes are not written in further keys: narrower, never wider) */
const RAW = '[^"\\\\\\0-\\x1f]';

interface Node {
  readonly kids: Map<string, Node>;
  /** a listed name ends here */
  name: boolean;
  /** a claimed prefix ends here: nothing below is a further key */
  dead: boolean;
}

function buildTrie(names: readonly string[], prefixes: readonly string[]): Node {
  const node = (): Node => ({ kids: new Map(), name: false, dead: false });
  const root = node();
  const insert = (x: string, dead: boolean): void => {
    let n = root;
    for (const ch of x) {
      if (n.dead) return;
      let k = n.kids.get(ch);
      if (!k) n.kids.set(ch, (k = node()));
      n = k;
    }
    if (dead) n.dead = true;
    else n.name = true;
  };
  for (const x of names) insert(x, false);
  for (const x of prefixes) insert(x, true);
  return root;
}

/** the trie nodes keyExcept writes for these names and prefixes (its compile cost) */
export function keyTrieSize(names: readonly string[], prefixes: readonly string[] = []): number {
  let count = 0;
  const walk = (n: Node): void => {
    if (n.dead) return;
    count++;
    for (const k of n.kids.values()) walk(k);
  };
  walk(buildTrie(names, prefixes));
  return count;
}

/** one or more raw characters, then the closing quote: a rule calling itself after its first character, which xgrammar compiles without a vocabulary pass */
export const KEY_TAIL_RULE = `keytail ::= ${RAW} keytail | ${RAW} "\\""`;

/** any raw characters, then the closing quote: one rule every trie node's escape shares, so a lazy mask computed below it serves all of them */
export const KEY_REST_RULE = `keyrest ::= ${RAW}* "\\""`;

/** a first character past ASCII, then the rest: shared by the trie nodes whose names go on in ASCII */
export const KEY_WIDE_RULE = 'keywide ::= [^\\0-\\x7f] keyrest';

/**
 * The rule of a quoted key that is none of `names` and starts with none of `prefixes`, or
 * undefined when no key is left (a prefix of "" claims every key). Names with characters
 * JSON must escape are left out of the trie: a further key never has escapes, so it never
 * equals them. Nodes with the same rule body are one rule (the trie minimized from its
 * leaves up), and the same complement is written once per schema.
 */
export function keyExcept(c: SchemaCompiler, names: readonly string[], prefixes: readonly string[]): string | undefined {
  const plain = (x: string): boolean => !/["\\\u0000-\u001f]/.test(x);
  const root = buildTrie(names.filter(plain), prefixes.filter(plain));
  if (root.dead) return undefined;
  // no name to avoid: any JSON string, escapes too
  if (root.kids.size === 0) return 'string';
  const emit = (n: Node): string => {
    const alts: string[] = [];
    if (!n.name) alts.push('"\\""');
    for (const [ch, k] of n.kids) if (!k.dead) alts.push(`${JSON.stringify(ch)} ${emit(k)}`);
    // a character no name continues with: the key is no name whatever follows
    const taken = [...n.kids.keys()].map(classChar).join('');
    if (taken === '') alts.push('keytail');
    else if (/^[\x00-\x7f]*$/.test(taken)) alts.push(`[^${taken}"\\\\\\0-\\x1f\\x80-\\U0010ffff] keyrest`, 'keywide');
    else alts.push(`[^${taken}"\\\\\\0-\\x1f] keyrest`);
    return alts.length === 1 && alts[0] === 'keytail' ? 'keytail' : c.shared(alts.join(' | '), 'key');
  };
  return `"\\"" ${emit(root)}`;
}

function classChar(ch: string): string {
  return /[\]\[\\^\-]/.test(ch) ? `\\${ch}` : ch;
}
