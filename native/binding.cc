// The addon's exports (argument order documented beside each wrapper in napi-*.cc).
#include <napi.h>

#if defined(__unix__) || defined(__APPLE__)
#include <dlfcn.h>
#endif

#include "napi-kernels.h"

namespace {

// Keeps this library mapped until the process exits. Node unloads an addon when the last
// worker thread that loaded it exits, but the compute pool's threads (started by the first
// parallel call, never stopped) go on running this library's code: after an unload they
// crashed the process the next time they woke.
void pin_library() {
#if defined(__unix__) || defined(__APPLE__)
  Dl_info self;
  if (dladdr(reinterpret_cast<void*>(&pin_library), &self) != 0 && self.dli_fname != nullptr)
    dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
#endif
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  using namespace loom::napi;
  pin_library();
  exports.Set("features", Napi::Function::New(env, Features, "features"));
  exports.Set("setThreads", Napi::Function::New(env, SetThreads, "setThreads"));
  exports.Set("threads", Napi::Function::New(env, Threads, "threads"));
  exports.Set("probeFmaPeak", Napi::Function::New(env, ProbeFmaPeak, "probeFmaPeak"));
  exports.Set("probeInt8Peak", Napi::Function::New(env, ProbeInt8Peak, "probeInt8Peak"));
  exports.Set("probeReadBandwidth", Napi::Function::New(env, ProbeReadBandwidth, "probeReadBandwidth"));
  exports.Set("largeBuffer", Napi::Function::New(env, LargeBuffer, "largeBuffer"));
  exports.Set("rmsNorm", Napi::Function::New(env, RmsNorm, "rmsNorm"));
  exports.Set("layerNorm", Napi::Function::New(env, LayerNorm, "layerNorm"));
  exports.Set("rope", Napi::Function::New(env, Rope, "rope"));
  exports.Set("ropeMulti", Napi::Function::New(env, RopeMulti, "ropeMulti"));
  exports.Set("siluMul", Napi::Function::New(env, SiluMul, "siluMul"));
  exports.Set("gelu", Napi::Function::New(env, Gelu, "gelu"));
  exports.Set("geluMul", Napi::Function::New(env, GeluMul, "geluMul"));
  exports.Set("softcap", Napi::Function::New(env, Softcap, "softcap"));
  exports.Set("add", Napi::Function::New(env, Add, "add"));
  exports.Set("addBias", Napi::Function::New(env, AddBias, "addBias"));
  exports.Set("softmax", Napi::Function::New(env, Softmax, "softmax"));
  exports.Set("argmax", Napi::Function::New(env, Argmax, "argmax"));
  exports.Set("applyTokenMask", Napi::Function::New(env, ApplyTokenMask, "applyTokenMask"));
  exports.Set("expWeights", Napi::Function::New(env, ExpWeights, "expWeights"));
  exports.Set("sampleCandidates", Napi::Function::New(env, SampleCandidates, "sampleCandidates"));
  exports.Set("drawIndex", Napi::Function::New(env, DrawIndex, "drawIndex"));
  exports.Set("writeKv", Napi::Function::New(env, WriteKv, "writeKv"));
  exports.Set("attention", Napi::Function::New(env, Attention, "attention"));
  exports.Set("convSilu", Napi::Function::New(env, ConvSilu, "convSilu"));
  exports.Set("gatedDeltaRule", Napi::Function::New(env, GatedDeltaRule, "gatedDeltaRule"));
  exports.Set("matmul", Napi::Function::New(env, Matmul, "matmul"));
  exports.Set("matmulSet", Napi::Function::New(env, MatmulSet, "matmulSet"));
  exports.Set("embedRows", Napi::Function::New(env, EmbedRows, "embedRows"));
  exports.Set("interleaveR16", Napi::Function::New(env, InterleaveR16, "interleaveR16"));
  exports.Set("moeExperts", Napi::Function::New(env, MoeExperts, "moeExperts"));
  exports.Set("kernelInfo", Napi::Function::New(env, KernelInfo, "kernelInfo"));
  exports.Set("mapFile", Napi::Function::New(env, MapFile, "mapFile"));
  exports.Set("mappedView", Napi::Function::New(env, MappedView, "mappedView"));
  exports.Set("unmapFile", Napi::Function::New(env, UnmapFile, "unmapFile"));
  exports.Set("adviseMemory", Napi::Function::New(env, AdviseMemory, "adviseMemory"));
  exports.Set("lockMemory", Napi::Function::New(env, LockMemory, "lockMemory"));
  exports.Set("mappingStats", Napi::Function::New(env, MappingStatsOf, "mappingStats"));
  return exports;
}

}  // namespace

NODE_API_MODULE(loom_native, Init)
