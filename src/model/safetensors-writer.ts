// Safetensors writer for test fixtures: one file, or a folder of shards with an index.
// Tensors are written in the given order, contiguous; the JSON header is padded with
// spaces so the data starts at a multiple of 8 bytes (as the reference writer does).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { INDEX_FILE } from './safetensors-folder.js';

export type SafetensorsWriteDType = 'F32' | 'F16' | 'BF16' | 'U8';

export interface SafetensorsWriteTensor {
  readonly name: string;
  readonly dtype: SafetensorsWriteDType;
  /** row-major, outermost first (PyTorch order) */
  readonly shape: readonly number[];
  /** exactly product(shape) * elementSize bytes, little-endian */
  readonly data: Uint8Array;
}

const ELEMENT_SIZE: Readonly<Record<SafetensorsWriteDType, number>> = { F32: 4, F16: 2, BF16: 2, U8: 1 };

/** The bytes of a safetensors file holding `tensors`. */
export function encodeSafetensors(
  tensors: readonly SafetensorsWriteTensor[],
  metadata?: Readonly<Record<string, string>>,
): Uint8Array {
  const header: Record<string, unknown> = {};
  if (metadata) header['__metadata__'] = metadata;
  let offset = 0;
  for (const t of tensors) {
    const want = t.shape.reduce((p, d) => p * d, 1) * ELEMENT_SIZE[t.dtype];
    if (t.data.length !== want) {
      throw new Error(`tensor ${t.name}: ${t.data.length} bytes given, shape [${t.shape.join(', ')}] ${t.dtype} needs ${want}`);
    }
    if (t.name in header) throw new Error(`tensor ${t.name} given twice`);
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + want] };
    offset += want;
  }
  let json = JSON.stringify(header);
  const jsonBytes = (): number => Buffer.byteLength(json, 'utf8');
  while ((8 + jsonBytes()) % 8 !== 0) json += ' ';
  const headerLen = jsonBytes();
  const out = new Uint8Array(8 + headerLen + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(headerLen), true);
  out.set(Buffer.from(json, 'utf8'), 8);
  let at = 8 + headerLen;
  for (const t of tensors) {
    out.set(t.data, at);
    at += t.data.length;
  }
  return out;
}

export function writeSafetensors(
  path: string,
  tensors: readonly SafetensorsWriteTensor[],
  metadata?: Readonly<Record<string, string>>,
): void {
  writeFileSync(path, encodeSafetensors(tensors, metadata));
}

/** `model-0000i-of-0000n.safetensors`, 1-based, as transformers names shards */
export function shardFileName(index: number, count: number): string {
  const pad = (n: number): string => String(n).padStart(5, '0');
  return `model-${pad(index)}-of-${pad(count)}.safetensors`;
}

/**
 * Splits `tensors` (in order) into `numShards` contiguous groups of near-equal count,
 * writes each to `dir` under shardFileName and writes model.safetensors.index.json.
 * Returns the shard file names.
 */
export function writeShardedSafetensors(
  dir: string,
  tensors: readonly SafetensorsWriteTensor[],
  numShards: number,
  metadata?: Readonly<Record<string, string>>,
): string[] {
  if (!Number.isInteger(numShards) || numShards < 1 || numShards > tensors.length) {
    throw new Error(`cannot split ${tensors.length} tensors into ${numShards} shards`);
  }
  mkdirSync(dir, { recursive: true });
  const names: string[] = [];
  const weightMap: Record<string, string> = {};
  let totalSize = 0;
  for (let s = 0; s < numShards; s++) {
    const from = Math.floor((s * tensors.length) / numShards);
    const to = Math.floor(((s + 1) * tensors.length) / numShards);
    const group = tensors.slice(from, to);
    const name = shardFileName(s + 1, numShards);
    writeSafetensors(join(dir, name), group, metadata);
    for (const t of group) {
      weightMap[t.name] = name;
      totalSize += t.data.length;
    }
    names.push(name);
  }
  const index = { metadata: { total_size: totalSize }, weight_map: weightMap };
  writeFileSync(join(dir, INDEX_FILE), JSON.stringify(index, null, 2));
  return names;
}
