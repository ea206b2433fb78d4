// The weight bytes one decode step of one sequence reads: every matrix of the model once
// (the lm_head included: the output matrix, or token_embd when the output is tied to it),
// plus one row of each embedding table (read by token id, not swept). Of a layer's routed
// experts (3-D *_exps tensors) a token reads its k of the E experts: k/E of their bytes.
// Layers a file carries beyond the model's own (multi-token-prediction layers) are not run,
// so not counted.
import { GGUFFile } from '../model/gguf.js';
import type { LoadedModel } from '../model/load.js';

/** token-indexed tables: token_embd (unless it is the tied output) and Gemma's per-layer ones */
const EMBEDDING_TABLE = /(^|\.)(per_layer_)?token_embd\.weight$/;

export function decodeWeightBytes(model: LoadedModel): number | undefined {
  if (!(model.tensors instanceof GGUFFile)) return undefined; // HF folders: sizes not listed up front
  const infos = [...model.tensors.tensorInfos.values()];
  const tied = !infos.some((t) => t.name === 'output.weight');
  const moe = model.config.moe;
  const activeShare = moe ? moe.numExpertsUsed / moe.numExperts : 1;
  let bytes = 0;
  for (const t of infos) {
    const layer = /^blk\.(\d+)\./.exec(t.name);
    if (layer && Number(layer[1]) >= model.config.numLayers) continue;
    const rows = t.dims.slice(1).reduce((a, d) => a * d, 1);
    if (rows <= 1) continue; // vectors: norms, biases
    const table = EMBEDDING_TABLE.test(t.name) && !(tied && t.name === 'token_embd.weight');
    const experts = /_exps\.weight$/.test(t.name);
    bytes += table ? t.byteLength / rows : experts ? t.byteLength * activeShare : t.byteLength;
  }
  return bytes;
}
