// Typed reads of a config.json's fields, shared by the family parsers.
import { ModelFormatError } from '../errors.js';

/** Typed reads of config fields; errors name the file and the field. null counts as absent. */
export class Fields {
  constructor(
    readonly file: string,
    readonly json: Record<string, unknown>,
  ) {}

  raw(key: string): unknown {
    return this.json[key];
  }

  bad(key: string, want: string): ModelFormatError {
    return new ModelFormatError(this.file, `"${key}" should be ${want}, got ${JSON.stringify(this.json[key])}`);
  }

  /** a positive integer from the first of `keys` present; else `fallback()`, or an error when none */
  count(keys: string | readonly string[], fallback?: () => number): number {
    const list = typeof keys === 'string' ? [keys] : keys;
    const key = list.find((k) => this.json[k] !== undefined && this.json[k] !== null);
    if (key === undefined) {
      if (fallback) return fallback();
      throw new ModelFormatError(this.file, `missing "${list.join('" or "')}"`);
    }
    const v = this.json[key];
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v <= 0) throw this.bad(key, 'a positive integer');
    return v;
  }

  num(key: string, fallback: number): number {
    const v = this.json[key];
    if (v === undefined || v === null) return fallback;
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) throw this.bad(key, 'a positive number');
    return v;
  }

  bool(key: string, fallback: boolean): boolean {
    const v = this.json[key];
    if (v === undefined || v === null) return fallback;
    if (typeof v !== 'boolean') throw this.bad(key, 'true or false');
    return v;
  }

  /** checks a derived size is a whole number (e.g. hidden / heads) */
  whole(key: string, value: number): number {
    if (!Number.isInteger(value)) {
      throw new ModelFormatError(this.file, `"${key}" does not divide evenly by the number of attention heads`);
    }
    return value;
  }
}

/** num_attention_heads and num_key_value_heads (default: as many), the first a multiple of the second. */
export function attentionHeads(c: Fields): { numHeads: number; numKvHeads: number } {
  const numHeads = c.count('num_attention_heads');
  const numKvHeads = c.count('num_key_value_heads', () => numHeads);
  if (numHeads % numKvHeads !== 0) {
    throw new ModelFormatError(c.file, `num_attention_heads ${numHeads} is not a multiple of num_key_value_heads ${numKvHeads}`);
  }
  return { numHeads, numKvHeads };
}
