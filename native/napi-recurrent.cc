// N-API wrappers for the Gated DeltaNet kernels: convSilu and gatedDeltaRule.
#include "napi-args.h"
#include "napi-kernels.h"
#include "recurrent.h"

namespace loom::napi {

namespace {

// seqStarts must run 0 = s[0] ≤ s[1] ≤ … ≤ s[numSeqs] = numTokens, slots in [0, numSlots)
void check_seqs(const Napi::CallbackInfo& info, Span<int32_t> starts, Span<int32_t> slots, int64_t tokens, int64_t num_slots) {
  if (starts.length < 1 || slots.length != starts.length - 1)
    throw Napi::RangeError::New(info.Env(), "slots must hold one entry per sequence (seqStarts.length - 1)");
  if (starts.data[0] != 0 || starts.data[starts.length - 1] != tokens)
    throw Napi::RangeError::New(info.Env(), "seqStarts must run from 0 to the number of tokens");
  for (size_t s = 0; s + 1 < starts.length; s++) {
    if (starts.data[s + 1] < starts.data[s]) throw Napi::RangeError::New(info.Env(), "seqStarts must not decrease");
    if (slots.data[s] < 0 || slots.data[s] >= num_slots) throw Napi::RangeError::New(info.Env(), "a state slot is outside the state");
    // two sequences in one slot would race on it
    for (size_t r = 0; r < s; r++)
      if (slots.data[r] == slots.data[s]) throw Napi::RangeError::New(info.Env(), "two sequences share a state slot");
  }
}

}  // namespace

// (out, x, weight, state, slots, seqStarts, channels, kernel)
Napi::Value ConvSilu(const Napi::CallbackInfo& info) {
  auto out = f32_array(info, 0, "out");
  auto x = f32_array(info, 1, "x");
  auto w = f32_array(info, 2, "weight");
  auto state = f32_array(info, 3, "state");
  auto slots = i32_array(info, 4, "slots");
  auto starts = i32_array(info, 5, "seqStarts");
  const int64_t channels = integer(info, 6, "channels", 1);
  const int64_t kernel = integer(info, 7, "kernel", 2, 64);
  if (starts.length < 1) throw Napi::RangeError::New(info.Env(), "seqStarts must not be empty");
  const int64_t tokens = starts.data[starts.length - 1];
  need(info, x.length, product(info, {tokens, channels}, "x"), "x");
  need(info, out.length, tokens * channels, "out");
  need(info, w.length, product(info, {channels, kernel}, "weight"), "weight");
  const int64_t slot_size = (kernel - 1) * channels;
  check_seqs(info, starts, slots, tokens, static_cast<int64_t>(state.length) / slot_size);
  conv_silu(out.data, x.data, w.data, state.data, slots.data, starts.data, static_cast<int>(slots.length),
            static_cast<int>(channels), static_cast<int>(kernel));
  return info.Env().Undefined();
}

// (out, q, k, v, g, beta, state, slots, seqStarts, numKHeads, numVHeads, headDim)
Napi::Value GatedDeltaRule(const Napi::CallbackInfo& info) {
  auto out = f32_array(info, 0, "out");
  auto q = f32_array(info, 1, "q");
  auto k = f32_array(info, 2, "k");
  auto v = f32_array(info, 3, "v");
  auto g = f32_array(info, 4, "g");
  auto beta = f32_array(info, 5, "beta");
  auto state = f32_array(info, 6, "state");
  auto slots = i32_array(info, 7, "slots");
  auto starts = i32_array(info, 8, "seqStarts");
  const int64_t hk = integer(info, 9, "numKHeads", 1);
  const int64_t hv = integer(info, 10, "numVHeads", 1);
  const int64_t S = integer(info, 11, "headDim", 1, 4096);
  if (hv % hk != 0) throw Napi::RangeError::New(info.Env(), "numVHeads must be a multiple of numKHeads");
  if (starts.length < 1) throw Napi::RangeError::New(info.Env(), "seqStarts must not be empty");
  const int64_t tokens = starts.data[starts.length - 1];
  need(info, q.length, product(info, {tokens, hk, S}, "q"), "q");
  need(info, k.length, tokens * hk * S, "k");
  need(info, v.length, product(info, {tokens, hv, S}, "v"), "v");
  need(info, out.length, tokens * hv * S, "out");
  need(info, g.length, tokens * hv, "g");
  need(info, beta.length, tokens * hv, "beta");
  const int64_t slot_size = product(info, {hv, S, S}, "state slot");
  check_seqs(info, starts, slots, tokens, static_cast<int64_t>(state.length) / slot_size);
  gated_delta_rule(out.data, q.data, k.data, v.data, g.data, beta.data, state.data, slots.data, starts.data,
                   static_cast<int>(slots.length), static_cast<int>(hk), static_cast<int>(hv), static_cast<int>(S));
  return info.Env().Undefined();
}

}  // namespace loom::napi
