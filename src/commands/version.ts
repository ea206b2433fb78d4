// `loom --version`: the version, the kernels this machine runs (AVX-512, AVX2, portable C++,
// or the TypeScript reference when the native core does not load) and the thread count.
import { cpuFeatures, nativeThreads, nativeUnavailableReason } from '../kernels/native.js';
import { PACKAGE_NAME, PACKAGE_VERSION } from '../package-info.js';

const KERNEL_NAMES: Record<string, string> = { avx512: 'AVX-512', avx2: 'AVX2', portable: 'portable C++' };

export function versionText(): string {
  const lines = [`${PACKAGE_NAME} ${PACKAGE_VERSION} (node ${process.version}, ${process.platform}-${process.arch})`];
  const reason = nativeUnavailableReason();
  if (reason !== undefined) {
    lines.push(`kernels: TypeScript reference (native core unavailable: ${reason})`, 'threads: 1');
  } else {
    const isa = cpuFeatures()?.kernels ?? 'unknown';
    const forced = process.env.LOOM_NO_SIMD ? ` (LOOM_NO_SIMD=${process.env.LOOM_NO_SIMD})` : '';
    lines.push(`kernels: native, ${KERNEL_NAMES[isa] ?? isa}${forced}`, `threads: ${nativeThreads() ?? 1} (--threads N to change)`);
  }
  return lines.join('\n');
}
