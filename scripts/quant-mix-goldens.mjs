#!/usr/bin/env node
// Asks llama-quantize which type each tensor of a bench shape gets in Q4_K_M / Q5_K_M, and
// writes its answers as goldens (test/fixtures/goldens/quant-mix/<shape>-<ftype>.json), which
// test/bench/quant-mix.test.ts compares src/bench/quant-mix.ts against. Each shape is written
// as an F16 GGUF whose tensor data is a hole (a sparse file of the full size), and
// `llama-quantize --dry-run` reads only the tensor infos.
//   node scripts/quant-mix-goldens.mjs LLAMA_QUANTIZE SHAPE[:LAYERS] ...   (after `npx tsc -p .`)
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchModelContents } from '../dist/src/bench/make-model.js';
import { writeGGUFStream } from '../dist/src/bench/gguf-stream.js';

const [quantize, ...shapes] = process.argv.slice(2);
if (!quantize || shapes.length === 0) {
  console.error('usage: node scripts/quant-mix-goldens.mjs LLAMA_QUANTIZE SHAPE[:LAYERS] ...');
  process.exit(2);
}
const out = new URL('../test/fixtures/goldens/quant-mix/', import.meta.url).pathname;
mkdirSync(out, { recursive: true });
const dir = mkdtempSync(join(tmpdir(), 'quant-mix-'));
try {
  for (const arg of shapes) {
    const [shape, layersArg] = arg.split(':');
    const layers = layersArg === undefined ? undefined : Number(layersArg);
    const { metadata, tensors } = benchModelContents({ shape, type: 'f16', seed: 1, ...(layers !== undefined && { layers }) });
    const file = join(dir, `${shape}.gguf`);
    writeGGUFStream(file, metadata, tensors, true);
    for (const ftype of ['Q4_K_M', 'Q5_K_M']) {
      const run = spawnSync(quantize, ['--dry-run', file, ftype], { encoding: 'utf8', maxBuffer: 1 << 26 });
      if (run.status !== 0) throw new Error(`llama-quantize exited with ${run.status}: ${run.stderr.slice(-500)}`);
      const log = run.stdout + run.stderr;
      const types = parseDryRun(log);
      if (Object.keys(types).length !== tensors.length) throw new Error(`${shape} ${ftype}: llama-quantize listed ${Object.keys(types).length} tensors of ${tensors.length}`);
      const name = `${shape}${layers !== undefined ? `-l${layers}` : ''}-${ftype.toLowerCase()}.json`;
      writeFileSync(join(out, name), JSON.stringify({ source: 'llama-quantize --dry-run (llama.cpp of node-llama-cpp\'s bundle)', shape, layers: layers ?? null, ftype, types }, null, 1) + '\n');
      console.log(`${name}: ${Object.keys(types).length} tensors`);
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

/** tensor name → type name, from llama-quantize's per-tensor lines */
function parseDryRun(log) {
  const types = {};
  for (const line of log.split('\n')) {
    // "[   8/ 147] blk.0.attn_v.weight  - [ 2048, 512, 1, 1], type =    f16, size =     2.00 MiB ->     0.82 MiB (q6_K)"
    // (a tensor kept as it is ends at its size)
    const m = /^\[\s*\d+\/\s*\d+\]\s+(\S+)\s+-\s+\[[^\]]*\],\s+type =\s+(\S+?),.*?(?:\((\w+)\))?\s*$/.exec(line);
    if (m) types[m[1]] = (m[3] ?? m[2]).toUpperCase();
  }
  return types;
}
