// The N-API wrappers binding.cc exports. Each validates its arguments (types, lengths,
// ranges) and throws a JS TypeError/RangeError instead of touching memory it was not given.
#pragma once
#include <napi.h>

namespace loom::napi {

Napi::Value Features(const Napi::CallbackInfo& info);
Napi::Value SetThreads(const Napi::CallbackInfo& info);
Napi::Value Threads(const Napi::CallbackInfo& info);
Napi::Value ProbeFmaPeak(const Napi::CallbackInfo& info);
Napi::Value ProbeInt8Peak(const Napi::CallbackInfo& info);
Napi::Value ProbeReadBandwidth(const Napi::CallbackInfo& info);
Napi::Value LargeBuffer(const Napi::CallbackInfo& info);

Napi::Value RmsNorm(const Napi::CallbackInfo& info);
Napi::Value LayerNorm(const Napi::CallbackInfo& info);
Napi::Value Rope(const Napi::CallbackInfo& info);
Napi::Value RopeMulti(const Napi::CallbackInfo& info);
Napi::Value SiluMul(const Napi::CallbackInfo& info);
Napi::Value Gelu(const Napi::CallbackInfo& info);
Napi::Value GeluMul(const Napi::CallbackInfo& info);
Napi::Value Softcap(const Napi::CallbackInfo& info);
Napi::Value Add(const Napi::CallbackInfo& info);
Napi::Value AddBias(const Napi::CallbackInfo& info);
Napi::Value Softmax(const Napi::CallbackInfo& info);
Napi::Value Argmax(const Napi::CallbackInfo& info);
Napi::Value ApplyTokenMask(const Napi::CallbackInfo& info);
Napi::Value ExpWeights(const Napi::CallbackInfo& info);
Napi::Value SampleCandidates(const Napi::CallbackInfo& info);
Napi::Value DrawIndex(const Napi::CallbackInfo& info);

Napi::Value WriteKv(const Napi::CallbackInfo& info);
Napi::Value Attention(const Napi::CallbackInfo& info);

Napi::Value ConvSilu(const Napi::CallbackInfo& info);
Napi::Value GatedDeltaRule(const Napi::CallbackInfo& info);

Napi::Value Matmul(const Napi::CallbackInfo& info);
Napi::Value MatmulSet(const Napi::CallbackInfo& info);
Napi::Value EmbedRows(const Napi::CallbackInfo& info);
Napi::Value InterleaveR16(const Napi::CallbackInfo& info);
Napi::Value KernelInfo(const Napi::CallbackInfo& info);
Napi::Value MoeExperts(const Napi::CallbackInfo& info);

Napi::Value MapFile(const Napi::CallbackInfo& info);
Napi::Value MappedView(const Napi::CallbackInfo& info);
Napi::Value UnmapFile(const Napi::CallbackInfo& info);
Napi::Value AdviseMemory(const Napi::CallbackInfo& info);
Napi::Value LockMemory(const Napi::CallbackInfo& info);
Napi::Value MappingStatsOf(const Napi::CallbackInfo& info);

}  // namespace loom::napi
