// N-API wrapper of moe_experts (native/moe.h).
#include <string>
#include <vector>

#include "moe.h"
#include "napi-args.h"
#include "napi-kernels.h"
#include "quant.h"
#include "r16.h"
#include "weight-types.h"

namespace loom::napi {

namespace {

// An expert tensor kind's per-expert data: argument i is either one Uint8Array holding all E
// experts' matrices back to back (a GGUF file's 3-D tensor) or an Array of E Uint8Arrays (a
// folder's per-expert tensors; only the experts in `active` are read). Each matrix is `rows`
// rows of `cols` values of `type`.
std::vector<const uint8_t*> expert_data(const Napi::CallbackInfo& info, size_t i, int type, int64_t cols, int64_t rows,
                                        int E, const std::vector<char>& active, const char* name) {
  const WeightTraits* t = weight_traits(type);
  if (!t) throw Napi::TypeError::New(info.Env(), std::string(name) + ": unsupported weight type " + std::to_string(type));
  if (cols % t->block_values != 0)
    throw Napi::RangeError::New(info.Env(), std::string(name) + ": row length " + std::to_string(cols) + " is not a whole number of blocks");
  if (r16_plain_type(type) >= 0 && rows % kR16Rows != 0)
    throw Napi::RangeError::New(info.Env(), std::string(name) + ": an interleaved matrix needs a multiple of 16 rows");
  const int64_t bytes = product(info, {cols / t->block_values, t->block_bytes, rows}, name);
  std::vector<const uint8_t*> out(E, nullptr);
  const Napi::Value v = info[i];
  if (v.IsTypedArray()) {
    auto all = u8_array(info, i, name);
    need(info, all.length, product(info, {bytes, E}, name), name);
    for (int e = 0; e < E; e++) out[e] = all.data + static_cast<size_t>(bytes) * e;
    return out;
  }
  if (!v.IsArray() || v.As<Napi::Array>().Length() != static_cast<uint32_t>(E))
    throw Napi::TypeError::New(info.Env(), std::string(name) + " must be a Uint8Array or an Array of one per expert");
  const Napi::Array arr = v.As<Napi::Array>();
  for (int e = 0; e < E; e++) {
    if (!active[e]) continue;
    const Napi::Value d = arr.Get(static_cast<uint32_t>(e));
    napi_typedarray_type kind;
    size_t length = 0;
    void* data = nullptr;
    if (!d.IsTypedArray() || napi_get_typedarray_info(info.Env(), d, &kind, &length, &data, nullptr, nullptr) != napi_ok ||
        kind != napi_uint8_array)
      throw Napi::TypeError::New(info.Env(), std::string(name) + "[" + std::to_string(e) + "] must be a Uint8Array");
    need(info, length, bytes, name);
    out[e] = static_cast<const uint8_t*>(data);
  }
  return out;
}

// a Float32Array of at least n values, or nullptr for null/undefined
const float* optional_f32(const Napi::CallbackInfo& info, size_t i, int64_t n, const char* name) {
  if (info[i].IsNull() || info[i].IsUndefined()) return nullptr;
  auto a = f32_array(info, i, name);
  need(info, a.length, n, name);
  return a.data;
}

}  // namespace

// (out, x, tokens, k, ids, weights, experts, hidden, ffn, act, alpha, limit, gate, gateType, up | null,
//  upType, down, downType, gateBias | null, upBias | null, downBias | null, downScale | null): moe_experts
Napi::Value MoeExperts(const Napi::CallbackInfo& info) {
  if (info.Length() < 22) throw Napi::TypeError::New(info.Env(), "moeExperts takes 22 arguments");
  auto out = f32_array(info, 0, "out");
  auto x = f32_array(info, 1, "x");
  const int64_t T = integer(info, 2, "tokens", 0);
  const int64_t K = integer(info, 3, "k", 1, 64);
  auto ids = i32_array(info, 4, "ids");
  auto weights = f32_array(info, 5, "weights");
  const int64_t E = integer(info, 6, "experts", 1, 1 << 16);
  const int64_t D = integer(info, 7, "hidden", 1);
  const int64_t F = integer(info, 8, "ffn", 1);
  const int64_t act = integer(info, 9, "act", 0, 2);
  const double alpha = number(info, 10, "alpha"), limit = number(info, 11, "limit");
  need(info, x.length, product(info, {T, D}, "x"), "x");
  need(info, out.length, T * D, "out");
  need(info, ids.length, product(info, {T, K}, "ids"), "ids");
  need(info, weights.length, T * K, "weights");
  std::vector<char> active(E, 0);
  for (int64_t p = 0; p < T * K; p++) {
    if (ids.data[p] < 0 || ids.data[p] >= E)
      throw Napi::RangeError::New(info.Env(), "expert id " + std::to_string(ids.data[p]) + " outside [0, " + std::to_string(E) + ")");
    active[ids.data[p]] = 1;
  }
  product(info, {T, K, 2 * F + 2 * D}, "the experts' activations");  // sizes that fit
  const bool fused = info[14].IsNull() || info[14].IsUndefined();
  const int gate_type = static_cast<int>(integer(info, 13, "gateType", 0, 255));
  const int up_type = fused ? gate_type : static_cast<int>(integer(info, 15, "upType", 0, 255));
  const int down_type = static_cast<int>(integer(info, 17, "downType", 0, 255));
  const int e = static_cast<int>(E);
  const auto gate = expert_data(info, 12, gate_type, D, fused ? 2 * F : F, e, active, "gate");
  const auto up = fused ? std::vector<const uint8_t*>() : expert_data(info, 14, up_type, D, F, e, active, "up");
  const auto down = expert_data(info, 16, down_type, F, D, e, active, "down");
  ExpertWeights w{gate.data(), fused ? nullptr : up.data(), down.data(), gate_type, up_type, down_type,
                  optional_f32(info, 18, E * F, "gateBias"), optional_f32(info, 19, E * F, "upBias"),
                  optional_f32(info, 20, E * D, "downBias"), optional_f32(info, 21, E, "downScale")};
  const MoeShape s{static_cast<int>(T), static_cast<int>(K), e, static_cast<int>(D), static_cast<int>(F),
                   static_cast<ExpertAct>(act), static_cast<float>(alpha), static_cast<float>(limit)};
  moe_experts(out.data, x.data, ids.data, weights.data, s, w);
  return info.Env().Undefined();
}

}  // namespace loom::napi
