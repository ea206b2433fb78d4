// What a loaded model is, in the terms model lists use (Ollama's /api/tags, /api/show):
// format, family, parameter count, quantization, size on disk, when it was written.
import { createHash } from 'node:crypto';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { typeName } from '../tensor/weight-types.js';
import { GGUFFile } from './gguf.js';
import type { LoadedModel } from './load.js';
import type { ModelConfig } from './weights.js';

export interface ModelDescription {
  readonly path: string;
  readonly format: 'gguf' | 'safetensors';
  readonly family: string;
  /** total weights, when the file says (GGUF); 0 when unknown */
  readonly parameterCount: number;
  /** the type most of the weights are stored in ("Q8_0", "F16"); '' when unknown */
  readonly quantization: string;
  readonly sizeBytes: number;
  readonly modifiedAt: Date;
  /** identifies this copy (path, size, time): a hash of the bytes would read the whole model at start */
  readonly digest: string;
  readonly config: ModelConfig;
  readonly chatTemplate: string | undefined;
}

function folderStats(dir: string): { bytes: number; mtime: Date } {
  let bytes = 0;
  let mtime = new Date(0);
  for (const f of readdirSync(dir, { withFileTypes: true })) {
    if (!f.isFile()) continue;
    const s = statSync(join(dir, f.name));
    bytes += s.size;
    if (s.mtime > mtime) mtime = s.mtime;
  }
  return { bytes, mtime };
}

export function describeModel(model: LoadedModel): ModelDescription {
  let parameterCount = 0;
  let quantization = '';
  if (model.tensors instanceof GGUFFile) {
    const elementsByType = new Map<string, number>();
    for (const t of model.tensors.tensorInfos.values()) {
      const n = t.dims.reduce((a, b) => a * b, 1);
      parameterCount += n;
      if (t.dims.length >= 2) elementsByType.set(typeName(t.type), (elementsByType.get(typeName(t.type)) ?? 0) + n);
    }
    quantization = [...elementsByType].sort((a, b) => b[1] - a[1])[0]?.[0] ?? '';
  }
  const s = statSync(model.path);
  const { bytes, mtime } = s.isDirectory() ? folderStats(model.path) : { bytes: s.size, mtime: s.mtime };
  return {
    path: model.path,
    format: model.format === 'gguf' ? 'gguf' : 'safetensors',
    family: model.config.arch,
    parameterCount,
    quantization,
    sizeBytes: bytes,
    modifiedAt: mtime,
    digest: createHash('sha256').update(`${model.path}\0${bytes}\0${mtime.getTime()}`).digest('hex'),
    config: model.config,
    chatTemplate: model.tokenizer.chatTemplate,
  };
}

/** 260K, 135M, 7.6B: as Ollama writes parameter sizes */
export function humanCount(n: number): string {
  if (n <= 0) return '';
  for (const [unit, size] of [['T', 1e12], ['B', 1e9], ['M', 1e6], ['K', 1e3]] as const) {
    if (n >= size) return `${Number((n / size).toFixed(n >= 10 * size ? 0 : 1))}${unit}`;
  }
  return String(n);
}
