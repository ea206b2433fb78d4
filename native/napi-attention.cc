// N-API wrappers for the paged KV cache: writeKv and attention.
#include "attention.h"
#include "napi-args.h"
#include "napi-kernels.h"

namespace loom::napi {

namespace {

// Arguments i..i+6: (k, v, dtype, numBlocks, blockSize, numKvHeads, headDim); dtype "f32",
// "f16", "q8_0" or "q4_0"; k and v must be a Float32Array, a Uint16Array (f16 bits) or a
// Uint8Array (q8_0 / q4_0 blocks, headDim a multiple of 32) of numBlocks·blockSize·numKvHeads·headDim values.
KvCacheView cache_args(const Napi::CallbackInfo& info, size_t i) {
  KvCacheView c;
  const Napi::Value dtype = info[i + 2];
  const std::string name = dtype.IsString() ? dtype.As<Napi::String>().Utf8Value() : "";
  if (name == "f32") c.type = KvType::kF32;
  else if (name == "f16") c.type = KvType::kF16;
  else if (name == "q8_0") c.type = KvType::kQ8_0;
  else if (name == "q4_0") c.type = KvType::kQ4_0;
  else throw Napi::TypeError::New(info.Env(), "dtype must be \"f32\", \"f16\", \"q8_0\" or \"q4_0\"");
  c.num_blocks = static_cast<int>(integer(info, i + 3, "numBlocks", 0));
  c.block_size = static_cast<int>(integer(info, i + 4, "blockSize", 1));
  c.num_kv_heads = static_cast<int>(integer(info, i + 5, "numKvHeads", 1));
  c.head_dim = static_cast<int>(integer(info, i + 6, "headDim", 1));
  const int64_t size = product(info, {c.num_blocks, c.block_size, c.num_kv_heads, c.head_dim}, "the KV cache");
  if (c.type == KvType::kF16) {
    auto k = u16_array(info, i, "cache k (f16)");
    auto v = u16_array(info, i + 1, "cache v (f16)");
    need(info, k.length, size, "cache k");
    need(info, v.length, size, "cache v");
    c.k = k.data;
    c.v = v.data;
  } else if (c.type == KvType::kQ8_0 || c.type == KvType::kQ4_0) {
    const std::string type = c.type == KvType::kQ8_0 ? "q8_0" : "q4_0";
    if (c.head_dim % kKvQ8Block != 0)
      throw Napi::RangeError::New(info.Env(), "a " + type + " cache needs headDim a multiple of 32, got " + std::to_string(c.head_dim));
    auto k = u8_array(info, i, ("cache k (" + type + ")").c_str());
    auto v = u8_array(info, i + 1, ("cache v (" + type + ")").c_str());
    need(info, k.length, kv_bytes(c.type, size), "cache k");
    need(info, v.length, kv_bytes(c.type, size), "cache v");
    c.k = k.data;
    c.v = v.data;
  } else {
    auto k = f32_array(info, i, "cache k (f32)");
    auto v = f32_array(info, i + 1, "cache v (f32)");
    need(info, k.length, size, "cache k");
    need(info, v.length, size, "cache v");
    c.k = k.data;
    c.v = v.data;
  }
  return c;
}

}  // namespace

// (kc, vc, dtype, numBlocks, blockSize, numKvHeads, headDim, k, v, slotMapping)
Napi::Value WriteKv(const Napi::CallbackInfo& info) {
  const KvCacheView c = cache_args(info, 0);
  auto k = f32_array(info, 7, "k");
  auto v = f32_array(info, 8, "v");
  auto slots = i32_array(info, 9, "slotMapping");
  const int64_t n = static_cast<int64_t>(slots.length);
  const int64_t kv_size = product(info, {n, c.num_kv_heads, c.head_dim}, "k");
  need(info, k.length, kv_size, "k");
  need(info, v.length, kv_size, "v");
  const int64_t capacity = product(info, {c.num_blocks, c.block_size}, "the KV cache");
  for (int64_t t = 0; t < n; t++)
    if (slots.data[t] < 0 || slots.data[t] >= capacity)
      throw Napi::RangeError::New(info.Env(), "KV slot " + std::to_string(slots.data[t]) + " outside the cache (" +
                                                  std::to_string(capacity) + " slots)");
  write_kv(c, k.data, v.data, slots.data, n);
  return info.Env().Undefined();
}

// (out, q, kc, vc, dtype, numBlocks, blockSize, numKvHeads, headDim,
//  seqStarts, positions, blockTables, maxBlocksPerSeq, numHeads, scale[, window, softcap, sinks, firstPositions, windowPositions])
Napi::Value Attention(const Napi::CallbackInfo& info) {
  auto out = f32_array(info, 0, "out");
  auto q = f32_array(info, 1, "q");
  const KvCacheView c = cache_args(info, 2);
  auto seq_starts = i32_array(info, 9, "seqStarts");
  auto positions = i32_array(info, 10, "positions");
  auto tables = i32_array(info, 11, "blockTables");
  const int64_t max_blocks = integer(info, 12, "maxBlocksPerSeq", 0);
  const int64_t heads = integer(info, 13, "numHeads", 1);
  const double scale = number(info, 14, "scale");
  const int64_t window = info.Length() > 15 ? integer(info, 15, "window", 0) : 0;
  const double softcap = info.Length() > 16 ? number(info, 16, "softcap") : 0.0;
  if (!(softcap >= 0)) throw Napi::RangeError::New(info.Env(), "softcap must be >= 0");
  const bool has_sinks = info.Length() > 17 && !info[17].IsNull() && !info[17].IsUndefined();
  Span<float> sinks{nullptr, 0};
  if (has_sinks) {
    sinks = f32_array(info, 17, "sinks");
    need(info, sinks.length, heads, "sinks");
  }
  const bool has_firsts = info.Length() > 18 && !info[18].IsNull() && !info[18].IsUndefined();
  Span<int32_t> firsts{nullptr, 0};
  if (has_firsts) {
    firsts = i32_array(info, 18, "firstPositions");
    need(info, firsts.length, static_cast<int64_t>(positions.length), "firstPositions");
  }
  const bool has_window_positions = info.Length() > 19 && !info[19].IsNull() && !info[19].IsUndefined();
  Span<int32_t> window_positions{nullptr, 0};
  if (has_window_positions) window_positions = i32_array(info, 19, "windowPositions");
  if (heads % c.num_kv_heads != 0) throw Napi::RangeError::New(info.Env(), "numHeads must be a multiple of numKvHeads");
  if (seq_starts.length < 1) throw Napi::RangeError::New(info.Env(), "seqStarts needs numSeqs + 1 entries");
  const int64_t num_seqs = static_cast<int64_t>(seq_starts.length) - 1;
  const int64_t n = static_cast<int64_t>(positions.length);
  need(info, tables.length, product(info, {num_seqs, max_blocks}, "blockTables"), "blockTables");
  const int64_t q_size = product(info, {n, heads, c.head_dim}, "q");
  need(info, q.length, q_size, "q");
  need(info, out.length, q_size, "out");
  if (has_window_positions) need(info, window_positions.length, n, "windowPositions");
  AttentionBatchView b{seq_starts.data, static_cast<int>(num_seqs), positions.data, tables.data, static_cast<int>(max_blocks),
                       has_firsts ? firsts.data : nullptr, has_window_positions ? window_positions.data : nullptr};
  if (const char* problem = check_attention_batch(b, n, c.num_blocks, c.block_size, static_cast<int>(window)))
    throw Napi::RangeError::New(info.Env(), std::string("attention: ") + problem);
  attention(out.data, q.data, c, b, n, static_cast<int>(heads), static_cast<float>(scale), static_cast<int>(window),
            static_cast<float>(softcap), has_sinks ? sinks.data : nullptr);
  return info.Env().Undefined();
}

}  // namespace loom::napi
