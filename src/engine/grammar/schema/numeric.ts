// Integer and number schemas to grammar: bounds (draft-04's boolean exclusive ones too),
// multipleOf on integers (a residue automaton, or the values when few) and powers of ten
// below 1 on numbers, a positive non-integer lower bound.
import type { SchemaCompiler } from './compile.js';
import { UnsupportedSchemaError } from './leaf-rules.js';
import type { Schema } from './merge.js';
import { fractionAtLeast, integerRange, multipleOfRules, numberRange } from './numbers.js';

export function numericRule(c: SchemaCompiler, integer: boolean, s: Schema, at: string): string | undefined {
  let lo = typeof s['minimum'] === 'number' ? s['minimum'] : undefined;
  let hi = typeof s['maximum'] === 'number' ? s['maximum'] : undefined;
  let loExcl = false;
  let hiExcl = false;
  // draft-04: exclusiveMinimum: true makes minimum strict
  if (s['exclusiveMinimum'] === true) loExcl = true;
  if (s['exclusiveMaximum'] === true) hiExcl = true;
  if (typeof s['exclusiveMinimum'] === 'number' && (lo === undefined || s['exclusiveMinimum'] >= lo)) [lo, loExcl] = [s['exclusiveMinimum'], true];
  if (typeof s['exclusiveMaximum'] === 'number' && (hi === undefined || s['exclusiveMaximum'] <= hi)) [hi, hiExcl] = [s['exclusiveMaximum'], true];
  const m = typeof s['multipleOf'] === 'number' ? s['multipleOf'] : undefined;
  if (integer || (m !== undefined && Number.isInteger(m))) {
    const a = lo === undefined ? undefined : BigInt(loExcl ? Math.floor(lo) + 1 : Math.ceil(lo));
    const b = hi === undefined ? undefined : BigInt(hiExcl ? Math.ceil(hi) - 1 : Math.floor(hi));
    if (m !== undefined && Number.isInteger(m) && m > 1) return multiples(c, m, a, b, at);
    if (m !== undefined && !Number.isInteger(m) && !Number.isInteger(1 / m)) throw new UnsupportedSchemaError(`"multipleOf": ${m} on integers (at ${at}/multipleOf) is not supported`, 'multipleOf', at);
    if (a === undefined && b === undefined) return 'integer';
    return integerRange(a, b, c.named) || undefined;
  }
  if (m !== undefined && !/^1e-\d+$|^0\.0*1$/.test(String(m))) throw new UnsupportedSchemaError(`"multipleOf": ${m} on numbers (at ${at}/multipleOf) is not supported (only integers and powers of ten below 1)`, 'multipleOf', at);
  const digits = m === undefined ? undefined : Math.round(-Math.log10(m));
  // a positive non-integer lower bound a: integer parts above a, or a's own with a fraction at least a's
  if (lo !== undefined && !Number.isInteger(lo) && lo > 0 && digits === undefined && !/e/i.test(String(lo)) && (hi === undefined || Number.isInteger(hi))) {
    const whole = Math.floor(lo);
    const above = numberRange(BigInt(whole + 1), hi === undefined ? undefined : BigInt(hi), false, hiExcl, undefined, c.named);
    const own = hi === undefined || hi > whole ? `${JSON.stringify(String(whole))} "." ${fractionAtLeast(String(lo).split('.')[1]!, loExcl)}` : '';
    const alts = [above, own].filter((x) => x !== '').map((x) => `(${x})`);
    return alts.length === 0 ? undefined : alts.join(' | ');
  }
  for (const [v, k] of [[lo, 'minimum'], [hi, 'maximum']] as const) {
    if (v !== undefined && !Number.isInteger(v)) throw new UnsupportedSchemaError(`a non-integer "${k}" on numbers (at ${at}/${k}) is not supported`, k, at);
  }
  const r = numberRange(lo === undefined ? undefined : BigInt(lo), hi === undefined ? undefined : BigInt(hi), loExcl, hiExcl, digits, c.named);
  return r || undefined;
}

function multiples(c: SchemaCompiler, m: number, a: bigint | undefined, b: bigint | undefined, at: string): string | undefined {
  if (a !== undefined && b !== undefined && (b - a) / BigInt(m) <= 64n) {
    const vals: string[] = [];
    for (let x = a; x <= b; x++) if (x % BigInt(m) === 0n) vals.push(JSON.stringify(x.toString()));
    return vals.length === 0 ? undefined : vals.join(' | ');
  }
  if (b !== undefined || (a !== undefined && a > 0n)) throw new UnsupportedSchemaError(`"multipleOf" with a wide range (at ${at}/multipleOf) is not supported`, 'multipleOf', at);
  if (m > 1000) throw new UnsupportedSchemaError(`"multipleOf": ${m} (at ${at}/multipleOf) is too large an automaton`, 'multipleOf', at);
  const name = c.fresh('mul');
  const [start, rules] = multipleOfRules(m, name);
  c.addRules(rules);
  const nonneg = `(${start})`;
  return a === 0n ? nonneg : `${nonneg} | "-" (${start.replace(/^"0" \| /, '')})`;
}
