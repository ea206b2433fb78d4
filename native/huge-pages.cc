#include "huge-pages.h"

#if defined(__linux__)
#include <sys/mman.h>

#include <cstdint>
#else
#include <cstdlib>
#endif

namespace loom {

namespace {
constexpr size_t kHuge = size_t{2} << 20;
size_t rounded(size_t bytes) { return (bytes + kHuge - 1) / kHuge * kHuge; }
}  // namespace

#if defined(__linux__)
// An anonymous mapping is zeroed and untouched: pages (huge where advised) arrive on first
// write. It is over-mapped by 2 MiB to cut an aligned run out of it.
void* alloc_large(size_t bytes) {
  const size_t size = rounded(bytes);
  void* raw = mmap(nullptr, size + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  char* base = static_cast<char*>(raw);
  char* aligned = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(base) + kHuge - 1) & ~(kHuge - 1));
  if (aligned > base) munmap(base, aligned - base);
  const size_t tail = (base + size + kHuge) - (aligned + size);
  if (tail > 0) munmap(aligned + size, tail);
#ifdef MADV_HUGEPAGE
  madvise(aligned, size, MADV_HUGEPAGE);  // a no-op where THP is off
#endif
  return aligned;
}

void free_large(void* p, size_t bytes) {
  if (p) munmap(p, rounded(bytes));
}
#else
void* alloc_large(size_t bytes) { return std::calloc(1, bytes ? bytes : 1); }
void free_large(void* p, size_t) { std::free(p); }
#endif

}  // namespace loom
