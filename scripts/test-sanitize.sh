#!/bin/sh
# `npm run test:sanitize`: builds the native addon with AddressSanitizer and
# UndefinedBehaviorSanitizer into build-sanitize/ (the normal build/ stays as it is), then runs
# the kernel conformance suite, the SIMD-path checks, the N-API argument checks and native
# generation on every fixture against it. node itself is not instrumented, so the ASan and
# UBSan runtimes are preloaded; leak checking is off (V8 keeps memory until exit). Any ASan
# report or undefined behaviour aborts the test process, which fails its test file.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
dir="$root/build-sanitize"
CXX=${CXX:-g++}
mkdir -p "$dir"
cp "$root/binding.gyp" "$dir/binding.gyp"
ln -sfn "$root/native" "$dir/native"
flags="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g"
if [ "${LOOM_SANITIZE_SKIP_BUILD:-}" != 1 ]; then
  (cd "$dir" && CFLAGS="$flags" CXXFLAGS="$flags" LDFLAGS="-fsanitize=address,undefined" node-gyp rebuild)
fi
(cd "$root" && npx tsc -p .)
LOOM_NATIVE_ADDON="$dir/build/Release/loom_native.node"
LD_PRELOAD="$($CXX -print-file-name=libasan.so) $($CXX -print-file-name=libubsan.so)"
ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:detect_odr_violation=0"
UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export LOOM_NATIVE_ADDON LD_PRELOAD ASAN_OPTIONS UBSAN_OPTIONS
cd "$root"
# the tests skip the native side when the addon does not load: here that is a failure
node -e "import('./dist/src/kernels/native.js').then((m) => { const r = m.nativeUnavailableReason(); if (r) { console.error('sanitized addon: ' + r); process.exit(1); } })"
exec node --enable-source-maps --test --test-concurrency=1 \
  dist/test/kernels/native-args.test.js dist/test/kernels/conformance.test.js dist/test/kernels/simd-paths.test.js dist/test/kernels/native-generate.test.js \
  dist/test/kernels/sliding-window.test.js dist/test/kernels/recurrent.test.js dist/test/tensor/quant/r16.test.js
