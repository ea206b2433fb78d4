// Argument checks for the N-API wrappers: each returns the value or throws a JS
// TypeError/RangeError (as a Napi::Error, C++ exceptions on) naming the argument.
#pragma once
#include <napi.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

namespace loom::napi {

template <class T>
struct Span {
  T* data;
  size_t length;
};

template <class T>
Span<T> typed_array(const Napi::CallbackInfo& info, size_t i, napi_typedarray_type type, const char* type_name,
                    const char* name) {
  const Napi::Value v = info[i];
  napi_typedarray_type actual;
  size_t length = 0;
  void* data = nullptr;
  if (!v.IsTypedArray() ||
      napi_get_typedarray_info(info.Env(), v, &actual, &length, &data, nullptr, nullptr) != napi_ok || actual != type)
    throw Napi::TypeError::New(info.Env(), std::string(name) + " must be a " + type_name);
  return {static_cast<T*>(data), length};
}

inline Span<float> f32_array(const Napi::CallbackInfo& info, size_t i, const char* name) {
  return typed_array<float>(info, i, napi_float32_array, "Float32Array", name);
}
inline Span<double> f64_array(const Napi::CallbackInfo& info, size_t i, const char* name) {
  return typed_array<double>(info, i, napi_float64_array, "Float64Array", name);
}
inline Span<int32_t> i32_array(const Napi::CallbackInfo& info, size_t i, const char* name) {
  return typed_array<int32_t>(info, i, napi_int32_array, "Int32Array", name);
}
inline Span<uint16_t> u16_array(const Napi::CallbackInfo& info, size_t i, const char* name) {
  return typed_array<uint16_t>(info, i, napi_uint16_array, "Uint16Array", name);
}
inline Span<uint8_t> u8_array(const Napi::CallbackInfo& info, size_t i, const char* name) {
  return typed_array<uint8_t>(info, i, napi_uint8_array, "Uint8Array", name);
}

inline double number(const Napi::CallbackInfo& info, size_t i, const char* name) {
  const Napi::Value v = info[i];
  if (!v.IsNumber()) throw Napi::TypeError::New(info.Env(), std::string(name) + " must be a number");
  const double x = v.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(x)) throw Napi::RangeError::New(info.Env(), std::string(name) + " must be finite");
  return x;
}

// an integer in [min, max]
inline int64_t integer(const Napi::CallbackInfo& info, size_t i, const char* name, int64_t min, int64_t max = INT32_MAX) {
  const double x = number(info, i, name);
  if (x != std::floor(x) || x < static_cast<double>(min) || x > static_cast<double>(max))
    throw Napi::RangeError::New(info.Env(), std::string(name) + " must be an integer in [" + std::to_string(min) + ", " +
                                                std::to_string(max) + "], got " + std::to_string(x));
  return static_cast<int64_t>(x);
}

inline bool boolean(const Napi::CallbackInfo& info, size_t i, const char* name) {
  const Napi::Value v = info[i];
  if (!v.IsBoolean()) throw Napi::TypeError::New(info.Env(), std::string(name) + " must be a boolean");
  return v.As<Napi::Boolean>().Value();
}

// a · b · … of sizes the caller took from JavaScript, or RangeError when it passes 2^53 (no
// typed array is that long; a wrapped product would let a short buffer pass `need`)
inline int64_t product(const Napi::CallbackInfo& info, std::initializer_list<int64_t> factors, const char* name) {
  int64_t p = 1;
  for (const int64_t f : factors) {
    if (f < 0 || __builtin_mul_overflow(p, f, &p) || p > (INT64_C(1) << 53))
      throw Napi::RangeError::New(info.Env(), std::string(name) + " is too large");
  }
  return p;
}

// throws RangeError unless `have` ≥ `need` elements
inline void need(const Napi::CallbackInfo& info, size_t have, int64_t need_elems, const char* name) {
  if (need_elems < 0 || have < static_cast<uint64_t>(need_elems))
    throw Napi::RangeError::New(info.Env(), std::string(name) + " holds " + std::to_string(have) + " elements, needs " +
                                                std::to_string(need_elems));
}

}  // namespace loom::napi
