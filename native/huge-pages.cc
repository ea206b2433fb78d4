#include "huge-pages.h"

#include "threadpool.h"

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
#if defined(__linux__)
#ifdef MADV_POPULATE_WRITE
constexpr int kPopulateWrite = MADV_POPULATE_WRITE;
#else
constexpr int kPopulateWrite = 23;  // Linux 5.14's value, for older headers
#endif
#endif
}  // namespace

#if defined(__linux__)
// An anonymous mapping is zeroed and untouched: pages (huge where advised) arrive on first
// write. It is over-mapped by 2 MiB to cut an aligned run out of it.
void* alloc_large(size_t bytes, bool populate) {
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
  if (populate) {
    // the pool's threads fault in a share each (a fresh VM's first touch of its memory is
    // slow); kernels before 5.14 lack MADV_POPULATE_WRITE: one write a page instead
    ThreadPool& p = pool();
    const size_t pages = size / kHuge, threads = static_cast<size_t>(p.size());
    p.parallel_for(p.size(), [&](int task, int) {
      char* lo = aligned + pages * task / threads * kHuge;
      char* hi = aligned + pages * (task + 1) / threads * kHuge;
      if (hi > lo && madvise(lo, hi - lo, kPopulateWrite) != 0)
        for (char* at = lo; at < hi; at += 4096) *static_cast<volatile char*>(at) = 0;
    });
  }
  return aligned;
}

void free_large(void* p, size_t bytes) {
  if (p) munmap(p, rounded(bytes));
}
#else
void* alloc_large(size_t bytes, bool) { return std::calloc(1, bytes ? bytes : 1); }
void free_large(void* p, size_t) { std::free(p); }
#endif

}  // namespace loom
