// Two builds of the native addon, bit for bit: matmul (every weight type, the R16 layouts too,
// rows 1-13, 16, 17, 33: the dot kernels and every GEMM family), a mixed matmulSet and
// embedRows, on the tier LOOM_NO_SIMD leaves (run it three times: unset, avx512, 1).
//   node scripts/compare-addons.mjs old-addon/loom_native.node build/Release/loom_native.node
// (dist/ must be built: npx tsc -p .)
import { createRequire } from 'node:module';
const root = new URL('..', import.meta.url).pathname;
const req = createRequire(import.meta.url);
const [oldPath, newPath] = process.argv.slice(2).map((p) => new URL(p, `file://${process.cwd()}/`).pathname);
const A = req(oldPath), B = req(newPath);
const { quantize } = await import(root + '/dist/src/tensor/quant/quantize.js');
const { GGMLType } = await import(root + '/dist/src/tensor/weight-types.js');
let seed = 12345;
const rnd = () => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed / 0x7fffffff - 0.5; };
const fill = (n) => { const a = new Float32Array(n); for (let i = 0; i < n; i++) a[i] = rnd() * 2; return a; };
const TYPES = { F32: [37, 577], F16: [37, 577], BF16: [38, 578], Q8_0: [96, 544], Q4_0: [96, 992], Q4_1: [96, 544], Q5_0: [96, 992], Q5_1: [96, 544], IQ4_NL: [96, 992], Q2_K: [256, 768], Q3_K: [256, 768], Q4_K: [256, 768], Q5_K: [256, 768], Q6_K: [256, 768], IQ4_XS: [256, 768] };
const ROWS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16, 17, 33];
let checked = 0, bad = 0;
const same = (a, b) => Buffer.compare(Buffer.from(a.buffer), Buffer.from(b.buffer)) === 0;
for (const [name, Ks] of Object.entries(TYPES)) {
  for (const K of Ks) {
    const N = 112;
    const types = [[GGMLType[name], quantize(GGMLType[name], fill(K * N), K)]];
    if (name === 'Q4_0' || name === 'Q8_0') {
      const t = name === 'Q4_0' ? 128 : 129; const d = types[0][1].slice();
      A.interleaveR16(d, t, K, N); types.push([t, d]);
    }
    for (const [type, data] of types) {
      for (const rows of ROWS) {
        const x = fill(rows * K);
        const oa = new Float32Array(rows * N), ob = new Float32Array(rows * N);
        A.matmul(oa, x, rows, data, type, K, N); B.matmul(ob, x, rows, data, type, K, N);
        checked++; if (!same(oa, ob)) { bad++; console.log(`DIFF matmul ${name}/${type} K=${K} rows=${rows}`); }
      }
      const ids = new Int32Array([0, 5, 17, 111]);
      const ea = new Float32Array(4 * K), eb = new Float32Array(4 * K);
      A.embedRows(ea, data, type, K, N, ids); B.embedRows(eb, data, type, K, N, ids);
      checked++; if (!same(ea, eb)) { bad++; console.log(`DIFF embed ${name}/${type} K=${K}`); }
    }
  }
}
// a mixed set (q/k/v-like) at several row counts
{
  const K = 512;
  const parts = [['Q4_K', 64], ['Q6_K', 32], ['Q8_0', 48], ['F16', 16], ['Q4_0', 32]].map(([n, N]) => [GGMLType[n], quantize(GGMLType[n], fill(K * N), K), N]);
  for (const rows of [1, 3, 8, 9, 12, 20]) {
    const x = fill(rows * K);
    const outsA = parts.map(([, , N]) => new Float32Array(rows * N)), outsB = parts.map(([, , N]) => new Float32Array(rows * N));
    A.matmulSet(x, rows, K, ...parts.flatMap(([t, d, N], i) => [outsA[i], d, t, N]));
    B.matmulSet(x, rows, K, ...parts.flatMap(([t, d, N], i) => [outsB[i], d, t, N]));
    checked++; if (!outsA.every((o, i) => same(o, outsB[i]))) { bad++; console.log(`DIFF matmulSet rows=${rows}`); }
  }
}
console.log(`${A.features().kernels} vs ${B.features().kernels}: ${checked} cases, ${bad} differ`);
process.exit(bad ? 1 : 0);
