// Run by `npm install` when `node-gyp rebuild` fails (no compiler, no Python, no make):
// the install goes on and loom uses its TypeScript kernels.
console.warn('loom: the native core could not be built; loom will use its slower TypeScript kernels (see docs/cli.md, "The native core: build, fallback, threads")');
