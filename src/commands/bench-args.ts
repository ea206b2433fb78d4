// Argument parsers shared by the `loom bench` subcommands: bad values are InvalidArgumentErrors.
import { InvalidArgumentError } from '../errors.js';

export const intArg = (name: string, min = 1) => (value: string): number => {
  const n = Number(value);
  if (value.trim() === '' || !Number.isInteger(n) || n < min) throw new InvalidArgumentError(`--${name} expects an integer ≥ ${min}, got "${value}"`);
  return n;
};

/** a finite number in [min, max] */
export const numberArg = (name: string, min = -Infinity, max = Infinity) => (value: string): number => {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < min || n > max) {
    throw new InvalidArgumentError(`--${name} expects a number in [${min}, ${max}], got "${value}"`);
  }
  return n;
};

/** "64,256" → [64, 256] */
export const intListArg = (name: string, min = 1) => (value: string): number[] => value.split(',').map((v) => intArg(name, min)(v.trim()));

/** a flag's space-separated words ("--no-mmap -fa off" → ["--no-mmap", "-fa", "off"]); none when not given */
export const flagWords = (s: string | undefined): string[] => (s ?? '').split(/\s+/).filter(Boolean);
