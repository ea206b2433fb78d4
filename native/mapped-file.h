// Read-only mappings of model files: tensors are used where they lie in the file instead of
// being read into memory first, so start-up no longer grows with the file and the resident
// set counts only the pages a forward pass touches. A mapping is shared by the views made of
// it (one per tensor) and its owner; it is unmapped when the owner releases it (the views
// are detached first, so nothing can read it afterwards) or when the last of them is
// garbage-collected. POSIX only; elsewhere map_file fails and loom reads the file instead.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace loom {

struct Mapping;

// Maps `bytes` of the file open as `fd` read-only (MAP_PRIVATE: pages are shared with the
// page cache and never written). nullptr and `error` set when the system refuses.
Mapping* map_file(int fd, size_t bytes, std::string& error);
const uint8_t* mapping_base(const Mapping* m);
size_t mapping_size(const Mapping* m);

// One more holder of the mapping (a view); release drops one and unmaps at zero.
void mapping_retain(Mapping* m);
void mapping_release(Mapping* m);
// Unmaps now (the owner's dispose); later releases only count down. Idempotent.
void mapping_unmap(Mapping* m);

// madvise over the pages of [p, p + bytes) (clamped to whole pages inside the range's pages).
enum class Advice { kNormal, kRandom, kSequential, kWillNeed };
bool advise(const void* p, size_t bytes, Advice advice);

// mlock over the pages of [p, p + bytes): "" when locked, else why not (llama.cpp's wording,
// with its RLIMIT_MEMLOCK suggestion when the limit is what failed).
std::string lock_memory(const void* p, size_t bytes);

// Live mappings in this process and their bytes (what tests check a dispose against).
struct MappingStats {
  int64_t count;
  int64_t bytes;
};
MappingStats mapping_stats();

}  // namespace loom
