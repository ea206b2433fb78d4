// GGUF metadata values and typed access to them. Integers up to 2^53 are numbers;
// 64-bit integers beyond that stay bigint. Arrays are plain arrays of values.
import { ModelFormatError } from '../errors.js';

export type GGUFValue = number | bigint | boolean | string | GGUFValue[];

export type GGUFMetadata = ReadonlyMap<string, GGUFValue>;

/** Typed reads of metadata that name the file and key in their errors. */
export class MetadataReader {
  constructor(
    readonly file: string,
    readonly metadata: GGUFMetadata,
  ) {}

  has(key: string): boolean {
    return this.metadata.has(key);
  }

  number(key: string): number;
  number(key: string, fallback: number): number;
  number(key: string, fallback?: number): number {
    const v = this.metadata.get(key);
    if (v === undefined) {
      if (fallback !== undefined) return fallback;
      throw new ModelFormatError(this.file, `missing metadata key ${key}`);
    }
    if (typeof v === 'number') return v;
    if (typeof v === 'bigint' && v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= -BigInt(Number.MAX_SAFE_INTEGER)) return Number(v);
    throw new ModelFormatError(this.file, `metadata key ${key} should be a number`);
  }

  optionalNumber(key: string): number | undefined {
    return this.metadata.has(key) ? this.number(key) : undefined;
  }

  string(key: string): string;
  string(key: string, fallback: string): string;
  string(key: string, fallback?: string): string {
    const v = this.metadata.get(key);
    if (v === undefined) {
      if (fallback !== undefined) return fallback;
      throw new ModelFormatError(this.file, `missing metadata key ${key}`);
    }
    if (typeof v !== 'string') throw new ModelFormatError(this.file, `metadata key ${key} should be a string`);
    return v;
  }

  optionalString(key: string): string | undefined {
    return this.metadata.has(key) ? this.string(key) : undefined;
  }

  bool(key: string, fallback: boolean): boolean {
    const v = this.metadata.get(key);
    if (v === undefined) return fallback;
    if (typeof v !== 'boolean') throw new ModelFormatError(this.file, `metadata key ${key} should be a boolean`);
    return v;
  }

  /** an array of strings, or undefined when absent */
  strings(key: string): string[] | undefined {
    const v = this.metadata.get(key);
    if (v === undefined) return undefined;
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) {
      throw new ModelFormatError(this.file, `metadata key ${key} should be an array of strings`);
    }
    return v as string[];
  }

  /** an array of numbers, or undefined when absent */
  numbers(key: string): number[] | undefined {
    const v = this.metadata.get(key);
    if (v === undefined) return undefined;
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'number')) {
      throw new ModelFormatError(this.file, `metadata key ${key} should be an array of numbers`);
    }
    return v as number[];
  }
}
