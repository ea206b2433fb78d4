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
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECTOR_FIXTURES, projectorFixturePath } from '../dist/test/fixtures/mmproj-fixture.js';
import { DYN_SIZE_CASES, RESIZE_CASES, TEST_IMAGES, readTestImage, writeTestImages } from '../dist/test/fixtures/test-images.js';
import { FIXTURE_DIR, ggufFixturePath } from '../dist/test/fixtures/index.js';

const llama = process.argv[2] ?? '/work/llama.cpp';
/** the prompt of the generation goldens: BOS, text, the image, text */
const GENERATION_PROMPT = 'Look: <__media__> What is it?';
const root = new URL('..', import.meta.url).pathname;
const out = join(root, 'test/fixtures/goldens/vision');
mkdirSync(out, { recursive: true });
await writeTestImages();

mkdirSync(FIXTURE_DIR, { recursive: true });
const lib = join(llama, 'build/bin');
/** builds scripts/NAME.cpp against the llama.cpp build; returns the program's path */
function build(name) {
  const exe = join(FIXTURE_DIR, name);
  const r = spawnSync('g++', [
    '-std=c++17', '-O1', join(root, `scripts/${name}.cpp`),
    `-I${llama}/tools/mtmd`, `-I${llama}/include`, `-I${llama}/ggml/include`,
    `-L${lib}`, '-lmtmd', '-lllama', '-lggml', '-lggml-base', `-Wl,-rpath,${lib}`, '-o', exe,
  ], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`building ${name} failed:\n${r.stderr}`);
  return exe;
}
const dumper = build('mtmd-embeddings');
const resizer = build('mtmd-resize');

const commit = spawnSync('git', ['-C', llama, 'log', '-1', '--format=%h'], { encoding: 'utf8' }).stdout.trim();
for (const f of PROJECTOR_FIXTURES) {
  const mmproj = projectorFixturePath(f);
  const text = ggufFixturePath(f.text);
  const images = {};
  for (const img of TEST_IMAGES) {
    const path = join(root, 'test/fixtures/images', img.file);
    const run = (fa, ...more) => {
      const file = join(FIXTURE_DIR, `${f.name}-${img.file}-${fa}.json`);
      const r = spawnSync(dumper, [text, mmproj, path, file, '--threads', '2', '--flash-attn', fa, ...more], { encoding: 'utf8' });
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
    // the whole path: a prompt around the image, evaluated as llama-mtmd-cli does, its last
    // logits and greedy tokens (the fixture's successor head decides those; the logits carry the image)
    const gen = run('auto', '--no-pixels', '--prompt', GENERATION_PROMPT, '--generate', '8');
    images[img.file] = {
      chunks: auto.chunks.map((c) => (c.type === 'text' ? c : { type: 'image', n_tokens: c.n_tokens, nx: c.nx, ny: c.ny, n_pos: c.n_pos })),
      non_causal: auto.non_causal,
      // llama-mtmd-cli's default (flash attention "auto": on, on a CPU)
      embeddings: imageChunks[0].embeddings,
      embeddings_no_flash_attn: off.chunks.find((c) => c.type === 'image').embeddings,
      generation: { prompt: GENERATION_PROMPT, chunks: gen.chunks.map((c) => (c.type === 'text' ? c : { type: 'image', n_tokens: c.n_tokens })), n_past: gen.n_past, logits: gen.logits, tokens: gen.tokens },
      ...(px ? { pixels: { nx: px.nx, ny: px.ny, sha256: createHash('sha256').update(Buffer.from(px.data, 'base64')).digest('hex'), head: [...new Float32Array(Buffer.from(px.data, 'base64').buffer.slice(0, 4 * 24))] } } : {}),
    };
    console.log(`${f.name} ${img.file}: ${imageChunks[0].n_tokens} tokens of ${auto.n_embd}`);
  }
  const golden = {
    source: `scripts/mtmd-embeddings.cpp against llama.cpp ${commit} (libmtmd: mtmd_tokenize, mtmd_encode_chunk; pixels: its preprocessor); floats are base64 of little-endian f32`,
    projector: f.name,
    projector_sha256: createHash('sha256').update(readFileSync(mmproj)).digest('hex'),
    text: f.text.name,
    text_sha256: createHash('sha256').update(readFileSync(text)).digest('hex'),
    n_embd: f.shape.projection,
    images,
  };
  writeFileSync(join(out, `${f.name}.json`), JSON.stringify(golden, null, 1) + '\n');
}

// llama.cpp's resize of each test image in each case: the sha256 of its RGB bytes
const resize = {};
for (const img of TEST_IMAGES) {
  const rgb = await readTestImage(img.file);
  const input = join(FIXTURE_DIR, `${img.file}.rgb`);
  writeFileSync(input, rgb.data);
  for (const c of RESIZE_CASES) {
    const output = join(FIXTURE_DIR, `${img.file}.resized.rgb`);
    const r = spawnSync(resizer, [input, rgb.width, rgb.height, output, c.width, c.height, c.algo, c.pad, ...(c.color ?? [])].map(String), { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`mtmd-resize ${img.file} ${JSON.stringify(c)}: ${r.stderr}`);
    const bytes = readFileSync(output);
    if (bytes.length !== c.width * c.height * 3) throw new Error(`mtmd-resize wrote ${bytes.length} bytes`);
    resize[`${img.file} ${c.name}`] = createHash('sha256').update(bytes).digest('hex');
    rmSync(output);
  }
  rmSync(input);
}
// the dyn-size preprocessor's choice of size (Gemma 4's limits: 70..1120 tokens of 24 × 24 pixels)
const gemma4v = PROJECTOR_FIXTURES.find((f) => f.kind === 'gemma4v');
const sizesIn = DYN_SIZE_CASES.flat();
const dyn = spawnSync(resizer, ['--dyn-size', projectorFixturePath(gemma4v), ...sizesIn.map(String)], { encoding: 'utf8' });
if (dyn.status !== 0) throw new Error(`mtmd-resize --dyn-size: ${dyn.stderr.slice(-1000)}`);
const dynSizes = dyn.stdout.trim().split('\n').map((l) => l.split(' ').map(Number));
if (dynSizes.length !== DYN_SIZE_CASES.length) throw new Error(`mtmd-resize --dyn-size gave ${dynSizes.length} sizes`);
const dynamic = { projector: gemma4v.name, sizes: DYN_SIZE_CASES.map(([w, h], i) => ({ in: [w, h], out: dynSizes[i] })) };
writeFileSync(join(out, 'resize.json'), JSON.stringify({ source: `scripts/mtmd-resize.cpp against llama.cpp ${commit} (img_tool::resize; sha256 of the RGB bytes; mtmd_image_preprocessor_dyn_size's sizes)`, resize, dynamic }, null, 1) + '\n');
console.log(`resize.json: ${Object.keys(resize).length} cases`);
