// The routed-expert keys of a GGUF file (Qwen3-MoE) → MoeParams, as llama.cpp reads them:
// `expert_count` and `expert_used_count` (llama-model.cpp's generic loader; the used count may
// be one per layer), `expert_feed_forward_length` (llama_model_qwen3moe::load_arch_hparams;
// absent: feed_forward_length / expert_used_count). llama.cpp's qwen3moe graph always divides
// the chosen experts' probabilities by their sum (build_moe_ffn's norm_w = true), whatever the
// checkpoint's norm_topk_prob was, and reads no expert_weights_scale: so does loom.
// qwen35moe (Qwen3.5/3.6 MoE) adds a shared expert per layer: `expert_shared_feed_forward_length`
// (absent: feed_forward_length), tensors ffn_{gate,up,down}_shexp and its gate ffn_gate_inp_shexp.
// Gate and up may be fused per expert (ffn_gate_up_exps [hidden, 2·F, E]: Gemma 4's converter,
// or --fuse-gate-up-exps). A file whose experts are missing or disagree with these keys is
// refused here, in one line.
import { ModelFormatError, UnsupportedModelError } from '../errors.js';
import type { MetadataReader } from './gguf-metadata.js';
import type { MoeParams, TensorSource } from './weights.js';

/** llama.cpp's LLAMA_MAX_EXPERTS */
export const MAX_EXPERTS = 512;

/** The tensor names of layer li's routed FFN, in GGUF naming. */
export function moeTensorNames(li: number): { router: string; gate: string; up: string; down: string } {
  const p = `blk.${li}.`;
  return { router: `${p}ffn_gate_inp.weight`, gate: `${p}ffn_gate_exps.weight`, up: `${p}ffn_up_exps.weight`, down: `${p}ffn_down_exps.weight` };
}

/** The tensor names of layer li's shared expert (qwen35moe), in GGUF naming: gate is its [hidden] sigmoid gate. */
export function sharedExpertTensorNames(li: number): { gateInp: string; gate: string; up: string; down: string } {
  const p = `blk.${li}.`;
  return { gateInp: `${p}ffn_gate_inp_shexp.weight`, gate: `${p}ffn_gate_shexp.weight`, up: `${p}ffn_up_shexp.weight`, down: `${p}ffn_down_shexp.weight` };
}

/** One expert's matrix under its own name (`blk.N.ffn_gate_exps.E.weight`), as HF checkpoints
 *  keep them (mlp.experts.E.gate_proj), where a GGUF file has one 3-D tensor per layer. */
export function expertTensorName(li: number, which: 'gate' | 'up' | 'down', e: number): string {
  return `blk.${li}.ffn_${which}_exps.${e}.weight`;
}

export function ggufMoeParams(meta: MetadataReader, arch: string, numLayers: number, hiddenSize: number, tensors: TensorSource): MoeParams {
  const key = (k: string): string => `${arch}.${k}`;
  const fail = (problem: string): never => {
    throw new ModelFormatError(meta.file, problem);
  };
  const numExperts = meta.optionalNumber(key('expert_count')) ?? 0;
  if (!Number.isInteger(numExperts) || numExperts < 1) fail(`${key('expert_count')} is ${numExperts}: a ${arch} file needs at least one expert`);
  if (numExperts > MAX_EXPERTS) fail(`${key('expert_count')} is ${numExperts}, more than ${MAX_EXPERTS}`);
  const numExpertsUsed = sameInEveryLayer(meta, key('expert_used_count'), numLayers);
  if (numExpertsUsed === undefined || !Number.isInteger(numExpertsUsed) || numExpertsUsed < 1 || numExpertsUsed > numExperts) {
    fail(`${key('expert_used_count')} is ${numExpertsUsed}: it should be 1 to ${key('expert_count')} (${numExperts})`);
  }
  const used = numExpertsUsed!;
  const expertFfnSize = sameInEveryLayer(meta, key('expert_feed_forward_length'), numLayers) ?? Math.floor(meta.number(key('feed_forward_length')) / used);
  if (!Number.isInteger(expertFfnSize) || expertFfnSize < 1) fail(`${key('expert_feed_forward_length')} is ${expertFfnSize}`);

  const shared = arch === 'qwen35moe';
  const sharedFfnSize = shared ? meta.optionalNumber(key('expert_shared_feed_forward_length')) ?? meta.number(key('feed_forward_length')) : 0;
  if (shared && (!Number.isInteger(sharedFfnSize) || sharedFfnSize < 1)) fail(`${key('expert_shared_feed_forward_length')} is ${sharedFfnSize}`);

  const dims = tensorDims(tensors);
  for (let li = 0; li < numLayers; li++) {
    const names = moeTensorNames(li);
    const fused = `blk.${li}.ffn_gate_up_exps.weight`;
    // per-expert scales of gate/up (NVFP4 conversions) would multiply what loom computes: refused, not ignored
    for (const which of ['gate', 'up', 'gate_up']) {
      const scale = `blk.${li}.ffn_${which}_exps.scale`;
      if (tensors.has(scale)) throw new UnsupportedModelError(meta.file, `${scale} (a per-expert scale of the ${which} projection) is not supported; loom reads ffn_down_exps.scale only`);
    }
    const want: [string, number[]][] = [
      [names.router, [hiddenSize, numExperts]],
      ...(tensors.has(fused)
        ? ([[fused, [hiddenSize, 2 * expertFfnSize, numExperts]]] as [string, number[]][])
        : ([
            [names.gate, [hiddenSize, expertFfnSize, numExperts]],
            [names.up, [hiddenSize, expertFfnSize, numExperts]],
          ] as [string, number[]][])),
      [names.down, [expertFfnSize, hiddenSize, numExperts]],
    ];
    if (shared) {
      const sh = sharedExpertTensorNames(li);
      want.push([sh.gateInp, [hiddenSize]], [sh.gate, [hiddenSize, sharedFfnSize]], [sh.up, [hiddenSize, sharedFfnSize]], [sh.down, [sharedFfnSize, hiddenSize]]);
    }
    for (const [name, shape] of want) {
      if (!tensors.has(name)) fail(`mixture-of-experts layer ${li} has no tensor ${name}`);
      const got = dims?.(name);
      // trailing 1s are no dimension (llama.cpp compares ne padded with 1s): a [hidden, 1] gate is a [hidden] one
      const trimmed = got && got.length > shape.length && got.slice(shape.length).every((d) => d === 1) ? got.slice(0, shape.length) : got;
      if (got && trimmed && (trimmed.length !== shape.length || trimmed.some((d, i) => d !== shape[i]))) {
        fail(`tensor ${name} has dims [${got.join(', ')}], but ${numExperts} experts of ${expertFfnSize} over ${hiddenSize} need [${shape.join(', ')}]`);
      }
    }
  }
  return { numExperts, numExpertsUsed: used, expertFfnSize, normTopK: true, ...(shared ? { sharedFfnSize } : {}) };
}

/** a key given once or per layer (llama.cpp's get_key_or_arr); loom runs one value for every layer */
function sameInEveryLayer(meta: MetadataReader, k: string, numLayers: number): number | undefined {
  const v = meta.metadata.get(k);
  if (v === undefined) return undefined;
  if (!Array.isArray(v)) return meta.number(k);
  const values = v.slice(0, numLayers);
  if (values.length < numLayers || !values.every((x) => typeof x === 'number')) {
    throw new ModelFormatError(meta.file, `${k} should hold ${numLayers} numbers`);
  }
  if (values.some((x) => x !== values[0])) throw new UnsupportedModelError(meta.file, `${k} varies by layer; loom runs one value per model`);
  return values[0] as number;
}

/** the dims of a tensor from the file's header, without reading its bytes (GGUF sources have them) */
function tensorDims(tensors: TensorSource): ((name: string) => readonly number[] | undefined) | undefined {
  const infos = (tensors as { tensorInfos?: unknown }).tensorInfos;
  if (!(infos instanceof Map)) return undefined;
  return (name) => (infos.get(name) as { dims?: readonly number[] } | undefined)?.dims;
}
