#include "mapped-file.h"

#include <atomic>
#include <cerrno>
#include <cstring>

#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>
#define LOOM_HAS_MMAP 1
#endif

namespace loom {

struct Mapping {
  uint8_t* base;
  size_t size;
  int holders;  // the owner + one per live view; touched only on the thread that made it
  bool mapped;
};

namespace {
std::atomic<int64_t> g_count{0}, g_bytes{0};

#if LOOM_HAS_MMAP
size_t page_size() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

// the pages that hold [p, p + bytes)
void page_span(const void* p, size_t bytes, uint8_t** lo, size_t* len) {
  const uintptr_t ps = page_size(), a = reinterpret_cast<uintptr_t>(p);
  const uintptr_t begin = a & ~(ps - 1), end = (a + bytes + ps - 1) & ~(ps - 1);
  *lo = reinterpret_cast<uint8_t*>(begin);
  *len = end - begin;
}
#endif

void do_unmap(Mapping* m) {
  if (!m->mapped) return;
#if LOOM_HAS_MMAP
  if (m->size > 0) munmap(m->base, m->size);
#endif
  m->mapped = false;
  g_count--;
  g_bytes -= static_cast<int64_t>(m->size);
}
}  // namespace

Mapping* map_file(int fd, size_t bytes, std::string& error) {
#if LOOM_HAS_MMAP
  void* p = nullptr;
  if (bytes > 0) {
    p = mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      error = std::string("mmap failed: ") + std::strerror(errno);
      return nullptr;
    }
  }
  g_count++;
  g_bytes += static_cast<int64_t>(bytes);
  return new Mapping{static_cast<uint8_t*>(p), bytes, 1, true};
#else
  (void)fd;
  (void)bytes;
  error = "memory-mapped files are not supported on this system";
  return nullptr;
#endif
}

const uint8_t* mapping_base(const Mapping* m) { return m->mapped ? m->base : nullptr; }
size_t mapping_size(const Mapping* m) { return m->size; }

void mapping_retain(Mapping* m) { m->holders++; }

void mapping_release(Mapping* m) {
  if (--m->holders > 0) return;
  do_unmap(m);
  delete m;
}

void mapping_unmap(Mapping* m) { do_unmap(m); }

bool advise(const void* p, size_t bytes, Advice advice) {
#if LOOM_HAS_MMAP
  if (bytes == 0) return true;
  uint8_t* lo;
  size_t len;
  page_span(p, bytes, &lo, &len);
  const int a = advice == Advice::kRandom       ? MADV_RANDOM
                : advice == Advice::kSequential ? MADV_SEQUENTIAL
                : advice == Advice::kWillNeed   ? MADV_WILLNEED
                                                : MADV_NORMAL;
  return madvise(lo, len, a) == 0;
#else
  (void)p, (void)bytes, (void)advice;
  return false;
#endif
}

std::string lock_memory(const void* p, size_t bytes) {
#if LOOM_HAS_MMAP
  if (bytes == 0) return "";
  uint8_t* lo;
  size_t len;
  page_span(p, bytes, &lo, &len);
  if (mlock(lo, len) == 0) return "";
  const int err = errno;
  std::string why = "failed to mlock " + std::to_string(len) + "-byte buffer: " + std::strerror(err);
  struct rlimit limit;
  if ((err == ENOMEM || err == EPERM) && getrlimit(RLIMIT_MEMLOCK, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    why += " (RLIMIT_MEMLOCK is " + std::to_string(limit.rlim_cur) + " bytes; try increasing it: 'ulimit -l' as root)";
  return why;
#else
  (void)p, (void)bytes;
  return "mlock is not supported on this system";
#endif
}

MappingStats mapping_stats() { return {g_count.load(), g_bytes.load()}; }

}  // namespace loom
