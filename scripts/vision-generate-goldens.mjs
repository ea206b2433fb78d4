#!/usr/bin/env node
// Builds scripts/mtmd-generate.cpp against a llama.cpp build and records what llama.cpp generates
// for prompts with an image, for the Qwen3.5 projector fixtures (test/fixtures/mmproj-qwen3vl.ts)
// and their qwen35 text fixture: the prompt's chunks, the position after the prompt (M-RoPE: an
// image advances it by max(rows, cols)), the greedy tokens with their margins and every step's
// logits. Writes test/fixtures/goldens/vision/generate-<projector>.json for the end-to-end tests
// (the engine with images, once it takes them).
//   node scripts/vision-generate-goldens.mjs [LLAMA_CPP_DIR]      (after `npx tsc -p .`; default /work/llama.cpp)
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { QWEN3VL_PROJECTOR_FIXTURES, qwen3vlFixturePath } from '../dist/test/fixtures/mmproj-qwen3vl.js';
import { FIXTURE_DIR, ggufFixturePath } from '../dist/test/fixtures/index.js';
import { writeTestImages } from '../dist/test/fixtures/test-images.js';

const llama = process.argv[2] ?? '/work/llama.cpp';
const root = new URL('..', import.meta.url).pathname;
await writeTestImages();
mkdirSync(FIXTURE_DIR, { recursive: true });
const tool = join(FIXTURE_DIR, 'mtmd-generate');
const lib = join(llama, 'build/bin');
const build = spawnSync('g++', [
  '-std=c++17', '-O1', join(root, 'scripts/mtmd-generate.cpp'),
  `-I${llama}/tools/mtmd`, `-I${llama}/include`, `-I${llama}/ggml/include`,
  `-L${lib}`, '-lmtmd', '-lllama', '-lggml', '-lggml-base', `-Wl,-rpath,${lib}`, '-o', tool,
], { encoding: 'utf8' });
if (build.status !== 0) throw new Error(`building the tool failed:\n${build.stderr}`);

// text after the image too, so its positions (after the M-RoPE advance) matter
const PROMPTS = ['Look at <__media__> and tell', '<__media__>'];
const IMAGES = ['wide-97x53.png', 'tall-23x31.png', 'square-64.png'];
const commit = spawnSync('git', ['-C', llama, 'log', '-1', '--format=%h'], { encoding: 'utf8' }).stdout.trim();
for (const f of QWEN3VL_PROJECTOR_FIXTURES.filter((x) => x.weightType !== 'F32')) {
  const runs = [];
  for (const prompt of PROMPTS) {
    for (const image of IMAGES) {
      const out = join(FIXTURE_DIR, `generate-${f.name}.json`);
      const r = spawnSync(tool, [ggufFixturePath(f.text), qwen3vlFixturePath(f), join(root, 'test/fixtures/images', image), prompt, out, '-n', '8', '--threads', '2'], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`mtmd-generate ${f.name} ${image}: ${r.stderr.slice(-2000)}`);
      const j = JSON.parse(readFileSync(out, 'utf8'));
      rmSync(out);
      runs.push({ prompt, image, ...j });
      console.log(`${f.name} ${image} ${JSON.stringify(prompt)}: n_past ${j.n_past}, tokens ${j.tokens.join(' ')}, smallest margin ${Math.min(...j.margins).toFixed(3)}`);
    }
  }
  const golden = {
    source: `scripts/mtmd-generate.cpp against llama.cpp ${commit} (mtmd_tokenize, mtmd_helper_eval_chunks; encoder flash attention auto as llama-mtmd-cli; text: f16 KV cache, no flash attention; greedy); logits are base64 of little-endian f32`,
    projector: f.name,
    text: f.text.name,
    runs,
  };
  writeFileSync(join(root, 'test/fixtures/goldens/vision', `generate-${f.name}.json`), JSON.stringify(golden, null, 1) + '\n');
}
