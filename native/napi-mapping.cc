// N-API wrappers of mapped-file.h: a model file mapped read-only, views of its tensors as
// external ArrayBuffers over the mapping, madvise and mlock, and the count of live mappings.
//
//   mapFile(fd, bytes) → mapping (an External)        throws Error when the system refuses
//   mappedView(mapping, offset, length) → ArrayBuffer  over [offset, offset + length) of the file
//   unmapFile(mapping, views)                          detaches the views, unmaps now
//   adviseMemory(u8, advice)                           0 normal, 1 random, 2 sequential, 3 willneed
//   lockMemory(u8) → ""                                or why mlock failed
//   mappingStats() → { count, bytes }
#include <string>

#include "mapped-file.h"
#include "napi-args.h"
#include "napi-kernels.h"

namespace loom::napi {

namespace {
// marks the Externals this file makes, so that another External is refused, not misread
const napi_type_tag kMappingTag = {0x6c6f6f6d6d617070ULL, 0x696e672d66696c65ULL};

Mapping* mapping_arg(const Napi::CallbackInfo& info, size_t i) {
  const Napi::Value v = info[i];
  if (!v.IsExternal() || !v.As<Napi::External<Mapping>>().CheckTypeTag(&kMappingTag))
    throw Napi::TypeError::New(info.Env(), "mapping must be a value mapFile returned");
  return v.As<Napi::External<Mapping>>().Data();
}
}  // namespace

Napi::Value MapFile(const Napi::CallbackInfo& info) {
  const Napi::Env env = info.Env();
  const int fd = static_cast<int>(integer(info, 0, "fd", 0));
  const int64_t bytes = integer(info, 1, "bytes", 0, int64_t{1} << 50);
  std::string error;
  Mapping* m = map_file(fd, static_cast<size_t>(bytes), error);
  if (!m) throw Napi::Error::New(env, error);
  auto ext = Napi::External<Mapping>::New(env, m, [](Napi::Env, Mapping* p) { mapping_release(p); });
  ext.TypeTag(&kMappingTag);
  return ext;
}

Napi::Value MappedView(const Napi::CallbackInfo& info) {
  const Napi::Env env = info.Env();
  Mapping* m = mapping_arg(info, 0);
  const int64_t offset = integer(info, 1, "offset", 0, int64_t{1} << 50);
  const int64_t length = integer(info, 2, "length", 0, int64_t{1} << 50);
  const uint8_t* base = mapping_base(m);
  if (!base && mapping_size(m) > 0) throw Napi::Error::New(env, "mappedView: the file was unmapped");
  if (static_cast<uint64_t>(offset + length) > mapping_size(m))
    throw Napi::RangeError::New(env, "mappedView: bytes " + std::to_string(offset) + ".." + std::to_string(offset + length) +
                                         " lie beyond the mapping's " + std::to_string(mapping_size(m)));
  if (length == 0) return Napi::ArrayBuffer::New(env, 0);
  mapping_retain(m);
  // the pages are PROT_READ: a write through this buffer faults, so loom never writes weights
  return Napi::ArrayBuffer::New(env, const_cast<uint8_t*>(base + offset), static_cast<size_t>(length),
                                [](Napi::Env, void*, Mapping* p) { mapping_release(p); }, m);
}

Napi::Value UnmapFile(const Napi::CallbackInfo& info) {
  const Napi::Env env = info.Env();
  Mapping* m = mapping_arg(info, 0);
  if (!info[1].IsArray()) throw Napi::TypeError::New(env, "views must be an array of ArrayBuffers");
  const Napi::Array views = info[1].As<Napi::Array>();
  for (uint32_t i = 0; i < views.Length(); i++) {
    const Napi::Value v = views[i];
    if (!v.IsArrayBuffer()) throw Napi::TypeError::New(env, "views must be an array of ArrayBuffers");
    Napi::ArrayBuffer ab = v.As<Napi::ArrayBuffer>();
    if (!ab.IsDetached() && ab.ByteLength() > 0) ab.Detach();
  }
  mapping_unmap(m);
  return env.Undefined();
}

Napi::Value AdviseMemory(const Napi::CallbackInfo& info) {
  const Span<uint8_t> bytes = u8_array(info, 0, "bytes");
  const int64_t advice = integer(info, 1, "advice", 0, 3);
  return Napi::Boolean::New(info.Env(), advise(bytes.data, bytes.length, static_cast<Advice>(advice)));
}

Napi::Value LockMemory(const Napi::CallbackInfo& info) {
  const Span<uint8_t> bytes = u8_array(info, 0, "bytes");
  return Napi::String::New(info.Env(), lock_memory(bytes.data, bytes.length));
}

Napi::Value MappingStatsOf(const Napi::CallbackInfo& info) {
  const MappingStats s = mapping_stats();
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("count", Napi::Number::New(info.Env(), static_cast<double>(s.count)));
  o.Set("bytes", Napi::Number::New(info.Env(), static_cast<double>(s.bytes)));
  return o;
}

}  // namespace loom::napi
