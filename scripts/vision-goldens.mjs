#!/usr/bin/env node
// Builds scripts/mtmd-embeddings.cpp against a llama.cpp build (its libmtmd and libllama) and
// asks it what llama.cpp makes of the test images with each tiny projector fixture
// (test/fixtures/mmproj-fixture.ts) and its text fixture: the image embeddings (flash attention
// as llama-mtmd-cli runs it, "auto", and off), the text around them, and a hash of the
// preprocessed pixels. Writes test/fixtures/goldens/vision/<fixture>.json, which
// test/model/vision/gemma3.test.ts compares loom against. Also writes the test images
// (test/fixtures/images/) when they are missing.
//   node scripts/vision-goldens.mjs [LLAMA_CPP_DIR]      (after `npx tsc -p .`; default /work/llama.cpp)
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECTOR_FIXTURES, projectorFixturePath } from '../dist/test/fixtures/mmproj-fixture.js';
import { QWEN3VL_PROJECTOR_FIXTURES, qwen3vlFixturePath } from '../dist/test/fixtures/mmproj-qwen3vl.js';
import { TEST_IMAGES, writeTestImages } from '../dist/test/fixtures/test-images.js';
import { FIXTURE_DIR, ggufFixturePath } from '../dist/test/fixtures/index.js';

const llama = process.argv[2] ?? '/work/llama.cpp';
const root = new URL('..', import.meta.url).pathname;
const out = join(root, 'test/fixtures/goldens/vision');
mkdirSync(out, { recursive: true });
await writeTestImages();

mkdirSync(FIXTURE_DIR, { recursive: true });
const dumper = join(FIXTURE_DIR, 'mtmd-embeddings');
const lib = join(llama, 'build/bin');
const build = spawnSync('g++', [
  '-std=c++17', '-O1', join(root, 'scripts/mtmd-embeddings.cpp'),
  `-I${llama}/tools/mtmd`, `-I${llama}/include`, `-I${llama}/ggml/include`,
  `-L${lib}`, '-lmtmd', '-lllama', '-lggml', '-lggml-base', `-Wl,-rpath,${lib}`, '-o', dumper,
], { encoding: 'utf8' });
if (build.status !== 0) throw new Error(`building the dumper failed:\n${build.stderr}`);

const commit = spawnSync('git', ['-C', llama, 'log', '-1', '--format=%h'], { encoding: 'utf8' }).stdout.trim();
// every family's fixtures with their writers; ONLY=<prefix> regenerates those whose name starts with it
const FIXTURES = [
  ...PROJECTOR_FIXTURES.map((f) => [f, projectorFixturePath]),
  ...QWEN3VL_PROJECTOR_FIXTURES.map((f) => [f, qwen3vlFixturePath]),
].filter(([f]) => f.name.startsWith(process.env.ONLY ?? ''));
for (const [f, fixturePath] of FIXTURES) {
  const mmproj = fixturePath(f);
  const text = ggufFixturePath(f.text);
  const images = {};
  for (const img of TEST_IMAGES) {
    const path = join(root, 'test/fixtures/images', img.file);
    const run = (fa) => {
      const file = join(FIXTURE_DIR, `${f.name}-${img.file}-${fa}.json`);
      const r = spawnSync(dumper, [text, mmproj, path, file, '--threads', '2', '--flash-attn', fa], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`mtmd-embeddings ${f.name} ${img.file}: ${r.stderr.slice(-2000)}`);
      const j = JSON.parse(readFileSync(file, 'utf8'));
      rmSync(file);
      return j;
    };
    const auto = run('auto');
    const off = run('off');
    const imageChunks = auto.chunks.filter((c) => c.type === 'image');
    if (imageChunks.length !== 1) throw new Error(`${f.name} ${img.file}: ${imageChunks.length} image chunks`);
    const px = auto.pixels?.[0];
    images[img.file] = {
      chunks: auto.chunks.map((c) => (c.type === 'text' ? c : { type: 'image', n_tokens: c.n_tokens, nx: c.nx, ny: c.ny, n_pos: c.n_pos })),
      non_causal: auto.non_causal,
      // llama-mtmd-cli's default (flash attention "auto": on, on a CPU)
      embeddings: imageChunks[0].embeddings,
      embeddings_no_flash_attn: off.chunks.find((c) => c.type === 'image').embeddings,
      ...(px ? { pixels: { nx: px.nx, ny: px.ny, sha256: createHash('sha256').update(Buffer.from(px.data, 'base64')).digest('hex'), head: [...new Float32Array(Buffer.from(px.data, 'base64').buffer.slice(0, 4 * 24))] } } : {}),
    };
    console.log(`${f.name} ${img.file}: ${imageChunks[0].n_tokens} tokens of ${auto.n_embd}`);
  }
  const golden = {
    source: `scripts/mtmd-embeddings.cpp against llama.cpp ${commit} (libmtmd: mtmd_tokenize, mtmd_encode_chunk; pixels: its preprocessor); floats are base64 of little-endian f32`,
    projector: f.name,
    text: f.text.name,
    n_embd: f.shape.projection,
    images,
  };
  writeFileSync(join(out, `${f.name}.json`), JSON.stringify(golden, null, 1) + '\n');
}
if (!existsSync(dumper)) throw new Error('unreachable');
