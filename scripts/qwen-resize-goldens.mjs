#!/usr/bin/env node
// Builds scripts/mtmd-resize.cpp against a llama.cpp build (its libmtmd) and asks it (--dyn-size)
// what size mtmd resizes images of many sizes to for a Qwen-VL projector, at patch 16 (Qwen3-VL,
// Qwen3.5) and 14 (Qwen2-VL, Qwen2.5-VL), both merged 2×2: small images pushed up to the 8-token
// floor, large ones brought under the 4096-token ceiling, extreme aspect ratios, halves that
// round. Writes test/fixtures/goldens/vision/qwen-resize-sizes.json, which
// test/model/vision/qwen-resize.test.ts compares loom's qwenTargetSize against.
//   node scripts/qwen-resize-goldens.mjs [LLAMA_CPP_DIR]      (after `npx tsc -p .`; default /work/llama.cpp)
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { QWEN3VL_PROJECTOR_FIXTURES, writeQwen3vlGGUF } from '../dist/test/fixtures/mmproj-qwen3vl.js';
import { FIXTURE_DIR } from '../dist/test/fixtures/index.js';

const llama = process.argv[2] ?? '/work/llama.cpp';
const root = new URL('..', import.meta.url).pathname;
mkdirSync(FIXTURE_DIR, { recursive: true });
const tool = join(FIXTURE_DIR, 'mtmd-resize');
const lib = join(llama, 'build/bin');
const build = spawnSync('g++', [
  '-std=c++17', '-O1', join(root, 'scripts/mtmd-resize.cpp'),
  `-I${llama}/tools/mtmd`, `-I${llama}/include`, `-I${llama}/ggml/include`,
  `-L${lib}`, '-lmtmd', '-lllama', '-lggml', '-lggml-base', `-Wl,-rpath,${lib}`, '-o', tool,
], { encoding: 'utf8' });
if (build.status !== 0) throw new Error(`building the tool failed:\n${build.stderr}`);

const SIZES = [
  [1, 1], [7, 13], [16, 16], [23, 31], [33, 33], [47, 47], [48, 48], [64, 64], [80, 80], [90, 91], [97, 53], [100, 100],
  [1, 1000], [1000, 1], [5000, 100], [100, 5000], [300, 7], [640, 480], [800, 600], [896, 896], [1000, 1000],
  [1024, 768], [1280, 720], [1920, 1080], [1080, 1920], [2048, 2048], [2560, 1440], [3000, 2000], [3840, 2160], [4032, 3024],
];
const base = QWEN3VL_PROJECTOR_FIXTURES[0];
const cases = [];
for (const patchSize of [16, 14]) {
  const f = { ...base, name: `mmproj-qwen3vl-p${patchSize}-sizes`, shape: { ...base.shape, patchSize, imageSize: 4 * patchSize } };
  const path = join(FIXTURE_DIR, `${f.name}.gguf`);
  writeQwen3vlGGUF(path, f);
  const r = spawnSync(tool, ['--dyn-size', path, ...SIZES.flat().map(String)], { encoding: 'utf8', maxBuffer: 1 << 24 });
  if (r.status !== 0) throw new Error(`mtmd-resize --dyn-size: ${r.stderr.slice(-2000)}`);
  const out = r.stdout.trim().split('\n').map((l) => l.split(' ').map(Number));
  if (out.length !== SIZES.length) throw new Error(`mtmd-resize --dyn-size gave ${out.length} sizes for ${SIZES.length}`);
  // the token grid: sides in merged patches (clip_n_output_tokens_x/_y for these projectors)
  const align = 2 * patchSize;
  cases.push({ patchSize, mergeSize: 2, sizes: SIZES.map((s, i) => ({ in: s, out: out[i], grid: [out[i][0] / align, out[i][1] / align], tokens: (out[i][0] / align) * (out[i][1] / align) })) });
  console.log(`patch ${patchSize}: ${SIZES.length} sizes`);
}
const commit = spawnSync('git', ['-C', llama, 'log', '-1', '--format=%h'], { encoding: 'utf8' }).stdout.trim();
// one size a line
const lines = cases.map((c) => `  {"patchSize": ${c.patchSize}, "mergeSize": ${c.mergeSize}, "sizes": [\n${c.sizes.map((x) => `   ${JSON.stringify(x)}`).join(',\n')}\n  ]}`);
const source = `scripts/mtmd-resize.cpp --dyn-size against llama.cpp ${commit} (mtmd_image_preprocessor_dyn_size's sizes; grid = sides / (patch · 2))`;
writeFileSync(join(root, 'test/fixtures/goldens/vision/qwen-resize-sizes.json'), `{\n "source": ${JSON.stringify(source)},\n "cases": [\n${lines.join(',\n')}\n ]\n}\n`);
