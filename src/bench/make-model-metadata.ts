// The metadata keys of a bench model (make-model.ts): general.*, the architecture's sizes as
// its GGUF carries them, and a byte-level BPE tokenizer; Gemma 4, gpt-oss, the encoders and the
// routed experts add keys of their own (make-model-*.ts).
import { longropeAttnFactor } from '../tensor/rope-scaling.js';
import { gemma4BenchMetadata } from './make-model-gemma4.js';
import { gptOssBenchMetadata } from './make-model-gptoss.js';
import { moeBenchMetadata } from './make-model-moe.js';
import { BENCH_POOLING } from './make-model-embed.js';
import { entry as kv } from './gguf-stream.js';
import type { StreamEntry } from './gguf-stream.js';
import type { ModelVocab } from './model-vocab.js';
import type { BenchShape } from './bench-shapes.js';
import { BENCH_FILE_TYPE } from './bench-types.js';
import type { BenchWeightOptions } from './bench-types.js';

/** Phi-4-mini's original_max_position_embeddings */
const PHI_ORIG_CONTEXT = 4096;

export function modelMetadata(s: BenchShape, o: BenchWeightOptions): StreamEntry[] {
  const experts = s.moe ? moeBenchMetadata(s.arch, s.moe) : [];
  if (s.gemma4) {
    const common = commonMetadata(s, o).filter((e) => !/\.(feed_forward_length|attention\.head_count_kv)$/.test(e.key));
    return [...common, ...gemma4BenchMetadata(s, s.gemma4), ...experts];
  }
  if (s.gptOss) return [...commonMetadata(s, o), ...gptOssBenchMetadata(s, s.gptOss)];
  return [...commonMetadata(s, o), ...experts];
}

export function generalMetadata(s: BenchShape, o: BenchWeightOptions): StreamEntry[] {
  return [
    kv.str('general.architecture', s.arch),
    kv.str('general.name', `${s.name} (random weights, loom bench, seed ${o.seed})`),
    kv.u32('general.file_type', BENCH_FILE_TYPE[o.type]),
    kv.u32('general.quantization_version', 2),
  ];
}

function commonMetadata(s: BenchShape, o: BenchWeightOptions): StreamEntry[] {
  const a = s.arch;
  return [
    ...generalMetadata(s, o),
    ...(s.pooling ? [kv.u32(`${a}.pooling_type`, BENCH_POOLING[s.pooling])] : []),
    ...(s.dense
      ? [kv.u32(`${a}.dense_2_feat_in`, s.hidden), kv.u32(`${a}.dense_2_feat_out`, s.dense), kv.u32(`${a}.dense_3_feat_in`, s.dense), kv.u32(`${a}.dense_3_feat_out`, s.hidden)]
      : []),
    kv.u32(`${a}.context_length`, s.context),
    kv.u32(`${a}.embedding_length`, s.hidden),
    kv.u32(`${a}.block_count`, s.layers),
    kv.u32(`${a}.feed_forward_length`, s.ffn),
    kv.u32(`${a}.attention.head_count`, s.heads),
    kv.u32(`${a}.attention.head_count_kv`, s.kvHeads),
    kv.f32(`${a}.attention.layer_norm_rms_epsilon`, s.rmsEps),
    kv.f32(`${a}.rope.freq_base`, s.ropeBase),
    ...(a === 'qwen3' || a === 'qwen3moe' ? [kv.u32(`${a}.attention.key_length`, s.headDim), kv.u32(`${a}.attention.value_length`, s.headDim)] : []),
    ...(a === 'llama' ? [kv.u32(`${a}.rope.dimension_count`, s.headDim), kv.u32(`${a}.vocab_size`, s.vocab)] : []),
    ...(a === 'phi3'
      ? [
          kv.u32(`${a}.rope.dimension_count`, s.ropeDim ?? s.headDim),
          kv.u32(`${a}.rope.scaling.original_context_length`, PHI_ORIG_CONTEXT),
          kv.f32(`${a}.rope.scaling.attn_factor`, longropeAttnFactor(s.context, PHI_ORIG_CONTEXT)),
          kv.u32(`${a}.attention.sliding_window`, 0),
        ]
      : []),
    ...(s.linear
      ? [
          kv.u32(`${a}.attention.key_length`, s.headDim),
          kv.u32(`${a}.attention.value_length`, s.headDim),
          kv.u32(`${a}.rope.dimension_count`, s.ropeDim ?? s.headDim),
          kv.i32s(`${a}.rope.dimension_sections`, [...s.linear.ropeSections]),
          kv.u32(`${a}.ssm.conv_kernel`, s.linear.convKernel),
          kv.u32(`${a}.ssm.state_size`, s.linear.stateSize),
          kv.u32(`${a}.ssm.group_count`, s.linear.kHeads),
          kv.u32(`${a}.ssm.time_step_rank`, s.linear.vHeads),
          kv.u32(`${a}.ssm.inner_size`, s.linear.vHeads * s.linear.stateSize),
          kv.u32(`${a}.full_attention_interval`, s.linear.interval),
        ]
      : []),
    ...(s.slidingWindow
      ? [
          kv.u32(`${a}.attention.key_length`, s.headDim),
          kv.u32(`${a}.attention.value_length`, s.headDim),
          kv.u32(`${a}.attention.sliding_window`, s.slidingWindow.size),
          kv.f32(`${a}.rope.freq_base_swa`, s.slidingWindow.ropeBase),
        ]
      : []),
  ];
}

export function tokenizerMetadata(s: BenchShape, v: ModelVocab): StreamEntry[] {
  return [
    kv.str('tokenizer.ggml.model', 'gpt2'),
    kv.str('tokenizer.ggml.pre', s.pre),
    kv.strings('tokenizer.ggml.tokens', v.tokens),
    kv.i32s('tokenizer.ggml.token_type', v.tokenTypes),
    kv.strings('tokenizer.ggml.merges', v.merges),
    kv.u32('tokenizer.ggml.bos_token_id', v.bosId),
    kv.u32('tokenizer.ggml.eos_token_id', v.eosId),
    kv.u32('tokenizer.ggml.padding_token_id', v.eosId),
    kv.bool('tokenizer.ggml.add_bos_token', false),
    kv.str('tokenizer.chat_template', v.chatTemplate),
  ];
}
