// A grow-only scratch array for the x86 kernel translation units, with internal linkage.
//
// No std:: containers or algorithms in those units: their out-of-line template instances
// have external linkage, and the linker could hand a unit's AVX2 or AVX-512 build of one to the
// portable code (a crash on a CPU without it). Buf lives in an anonymous namespace, so each
// unit has its own.
#pragma once
#include <cstddef>
#include <new>

namespace loom {
namespace x86 {
namespace {

template <typename T>
class Buf {
 public:
  Buf() = default;
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
  ~Buf() { ::operator delete(data_, std::align_val_t(64)); }
  T* get(size_t n) {  // at least n elements, 64-byte aligned; contents kept only while n does not grow
    if (n > cap_) {
      ::operator delete(data_, std::align_val_t(64));
      data_ = static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(64)));
      cap_ = n;
    }
    return data_;
  }
  T* data() const { return data_; }

 private:
  T* data_ = nullptr;
  size_t cap_ = 0;
};

inline int imin(int a, int b) { return a < b ? a : b; }
inline int imax(int a, int b) { return a > b ? a : b; }

}  // namespace
}  // namespace x86
}  // namespace loom
