import { InvalidArgumentError } from '../errors.js';

/** commander argParser for numeric flags, with a message naming the flag */
export const numberOption =
  (name: string, integer: boolean) =>
  (value: string): number => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n) || (integer && !Number.isInteger(n))) {
      throw new InvalidArgumentError(`--${name} expects ${integer ? 'an integer' : 'a number'}, got "${value}"`);
    }
    return n;
  };
