// EBNF of one JSON value exactly (an enum's or const's), with the bounded whitespace the
// rest of the grammar allows between its tokens.
import { isObject } from './merge.js';

/** EBNF of exactly the JSON value `v` (whitespace allowed between its tokens, keys in its order) */
export function jsonLiteral(v: unknown): string {
  if (Array.isArray(v)) return v.length === 0 ? '"[" ws "]"' : `"[" ws ${v.map(jsonLiteral).join(' sep ')} ws "]"`;
  if (isObject(v)) {
    const entries = Object.entries(v).map(([k, x]) => `${JSON.stringify(JSON.stringify(k))} colon ${jsonLiteral(x)}`);
    return entries.length === 0 ? '"{" ws "}"' : `"{" ws ${entries.join(' sep ')} ws "}"`;
  }
  return JSON.stringify(JSON.stringify(v));
}
