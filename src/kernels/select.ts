// Which kernels a command runs with: `native` (the C++ core), `reference` (TypeScript), or
// `auto` (native when it loads, else the reference after native.ts's one-line notice).
import { InvalidArgumentError } from '../errors.js';
import type { Kernels } from './index.js';
import { loadNativeKernels, nativeUnavailableReason, setThreads } from './native.js';
import { referenceKernels } from './reference.js';

export type Backend = 'native' | 'reference' | 'auto';
export const BACKENDS: readonly Backend[] = ['native', 'reference', 'auto'];

/** threads sizes the native pool (default: the hardware threads); the reference ignores it. */
export function selectKernels(backend: Backend = 'auto', threads?: number): Kernels {
  if (threads !== undefined && (!Number.isInteger(threads) || threads < 1)) {
    throw new InvalidArgumentError(`threads must be an integer ≥ 1, got ${threads}`);
  }
  if (backend === 'reference') return referenceKernels;
  if (backend !== 'native' && backend !== 'auto') {
    throw new InvalidArgumentError(`unknown backend "${String(backend)}" (expected ${BACKENDS.join(', ')})`);
  }
  const reason = nativeUnavailableReason();
  if (reason !== undefined && backend === 'native') {
    throw new InvalidArgumentError(
      `the native backend is unavailable (${reason}); build it with \`npm run build:native\` or use --backend reference`,
    );
  }
  const native = loadNativeKernels(); // on `auto`, says once that the reference stands in
  if (!native) return referenceKernels;
  if (threads !== undefined) setThreads(threads);
  return native;
}
