// Array grammars: prefixItems (draft-04's items list) then items (additionalItems), the
// count kept in [minItems, maxItems] by unrolling the prefix, and contains (one element
// under both schemas, the rest under items).
import type { SchemaCompiler } from './compile.js';
import { UnsupportedSchemaError } from './leaf-rules.js';
import type { Schema } from './merge.js';

export function arrayRule(c: SchemaCompiler, s: Schema, at: string): string | undefined {
  const min = typeof s['minItems'] === 'number' ? s['minItems'] : 0;
  const max = typeof s['maxItems'] === 'number' ? s['maxItems'] : undefined;
  if (max !== undefined && max < min) return undefined;
  // draft-04..2019-09: items as a list, additionalItems for the rest
  const prefix = (Array.isArray(s['prefixItems']) ? s['prefixItems'] : Array.isArray(s['items']) ? s['items'] : []) as unknown[];
  const restSchema = Array.isArray(s['prefixItems']) ? s['items'] : Array.isArray(s['items']) ? s['additionalItems'] : s['items'];
  const rest = restSchema === undefined ? 'any' : c.value(restSchema, `${at}/items`);
  const elems = prefix.map((p, i) => c.value(p, `${at}/prefixItems/${i}`));
  if (s['contains'] !== undefined) {
    const minC = typeof s['minContains'] === 'number' ? s['minContains'] : 1;
    if (prefix.length > 0 || max !== undefined || min > 1 || minC !== 1 || s['maxContains'] !== undefined) {
      throw new UnsupportedSchemaError(`"contains" with prefixItems, maxItems, minItems > 1 or min/maxContains (at ${at}/contains) is not supported`, 'contains', at);
    }
    const hit = c.value({ allOf: [restSchema ?? {}, s['contains']] }, `${at}/contains`);
    if (hit === undefined) return undefined;
    return `"[" ws (${rest} sep)* ${hit} (sep ${rest})* ws "]"`;
  }
  // elements 0..k-1 from prefixItems, then rest; n in [min, max]
  const k = prefix.length;
  const limit = max === undefined ? undefined : max;
  const tail = (i: number): string | undefined => {
    // after i elements (i ≥ 1): end, or one more
    const canEnd = i >= min;
    if (limit !== undefined && i >= limit) return canEnd ? '""' : undefined;
    if (i >= k) {
      if (rest === undefined) return canEnd ? '""' : undefined;
      const lo = Math.max(0, min - i);
      const hi = limit === undefined ? '' : String(limit - i);
      return `(sep ${rest}){${lo},${hi}}`;
    }
    const e = elems[i];
    const more = e === undefined ? undefined : tail(i + 1);
    const alts = [...(canEnd ? ['""'] : []), ...(more !== undefined ? [`sep ${e} ${more}`] : [])];
    return alts.length === 0 ? undefined : `(${alts.join(' | ')})`;
  };
  const first = k > 0 ? elems[0] : rest;
  const after = first === undefined ? undefined : limit === 0 ? undefined : tail(1);
  const alts = [...(min === 0 ? ['""'] : []), ...(first !== undefined && after !== undefined ? [`${first} ${after}`] : [])];
  if (alts.length === 0) return undefined;
  return `"[" ws (${alts.join(' | ')}) ws "]"`;
}
