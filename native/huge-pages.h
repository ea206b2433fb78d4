// Large, long-lived buffers (weights, the KV cache) on 2 MiB pages where the kernel offers
// them: a decode step streams hundreds of MB through scattered 4 KiB pages otherwise, and
// the TLB misses (page walks, two-dimensional under a hypervisor) cost 10-20% of the read
// bandwidth. Linux with transparent huge pages in "madvise" or "always" mode; elsewhere (or
// with THP off) plain aligned memory, zeroed either way.
#pragma once
#include <cstddef>

namespace loom {

// `bytes` of zeroed memory, 2 MiB-aligned and advised for huge pages (nullptr when out of
// memory). `populate` faults every page in now rather than on first write (what a KV cache
// wants: its first writes would otherwise stall decode steps on page faults; llama.cpp
// clears its cache at start for the same effect). Release with free_large(p, bytes).
void* alloc_large(size_t bytes, bool populate = false);
void free_large(void* p, size_t bytes);

}  // namespace loom
