// What loom does not run is refused at load in one line that names the file, what it is
// (architecture, tensor type, mixture of experts, RoPE scaling kind) and what loom runs.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { UnsupportedModelError } from '../../../src/errors.js';
import { createArchitecture } from '../../../src/model/arch/index.js';
import { GGMLType } from '../../../src/tensor/weight-types.js';
import { kv, writeGGUF } from '../../../src/model/gguf-writer.js';
import type { GGUFEntry } from '../../../src/model/gguf-writer.js';
import { loadModel } from '../../../src/model/load.js';

const dir = mkdtempSync(join(tmpdir(), 'loom-unsupported-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** a tiny GGUF without tokenizer keys: the config (and its first tensor) is read before the tokenizer */
function file(name: string, arch: string, extra: GGUFEntry[], tensorType = GGMLType.F32): string {
  const path = join(dir, `${name}.gguf`);
  const n = 256;
  const bytes = tensorType === GGMLType.F32 ? n * 4 : (n / 256) * 66; // IQ2_XXS: 66 bytes per 256
  writeGGUF(path, {
    version: 3,
    metadata: [
      kv.str('general.architecture', arch),
      kv.u32(`${arch}.context_length`, 64),
      kv.u32(`${arch}.embedding_length`, n),
      kv.u32(`${arch}.block_count`, 1),
      kv.u32(`${arch}.feed_forward_length`, n),
      kv.u32(`${arch}.attention.head_count`, 4),
      kv.f32(`${arch}.attention.layer_norm_rms_epsilon`, 1e-5),
      ...extra,
    ],
    tensors: [{ name: 'token_embd.weight', type: tensorType, dims: [n, 1], data: new Uint8Array(bytes) }],
  });
  return path;
}

function refused(path: string, ...parts: (string | RegExp)[]): void {
  assert.throws(
    () => {
      const m = loadModel(path);
      createArchitecture(m.config, m.tensors);
    },
    (e: unknown) => {
      assert.ok(e instanceof UnsupportedModelError, `${String(e)}`);
      const line = e.message;
      assert.ok(!line.includes('\n'), 'one line');
      assert.ok(line.includes(path), `names the file: ${line}`);
      for (const p of parts) assert.ok(typeof p === 'string' ? line.includes(p) : p.test(line), `mentions ${String(p)}: ${line}`);
      return true;
    },
  );
}

describe('what loom does not run is refused in one line', () => {
  it('an architecture: names it and lists the ones loom runs', () => {
    refused(file('mamba', 'mamba', []), '"mamba"', 'loom runs', 'llama', 'phi3', 'smollm3');
  });

  it('mixture of experts (a Mixtral-style llama file)', () => {
    refused(file('mixtral', 'llama', [kv.u32('llama.expert_count', 8)]), 'mixture-of-experts', 'expert_count', 'loom runs');
  });

  it('a RoPE scaling kind llama.cpp does not know either', () => {
    refused(file('rope', 'llama', [kv.str('llama.rope.scaling.type', 'dynamic')]), '"dynamic"', 'loom runs');
  });

  it('a tensor type: names the tensor and type and lists the types loom runs', () => {
    refused(file('iq2', 'llama', [], GGMLType.IQ2_XXS), 'token_embd.weight', 'IQ2_XXS', 'loom runs', 'Q8_0');
  });
});
