// parallel_ranges: splits [0, n) into contiguous ranges over the pool, or runs it on the
// calling thread when the work is small. Portable translation units only.
#pragma once
#include <algorithm>
#include <cstdint>

#include "threadpool.h"

namespace loom {

// f(begin, end) over [0, n); `cost` is the work per item (e.g. elements per row) and work
// under kMinParallelWork runs serially, where waking the pool would cost more than it saves.
constexpr int64_t kMinParallelWork = 32 * 1024;

template <class F>
static void parallel_ranges(int64_t n, int64_t cost, const F& f) {
  if (n <= 0) return;
  ThreadPool& p = pool();
  const int64_t max_tasks = std::min<int64_t>(n, std::max<int64_t>(1, n * cost / kMinParallelWork));
  const int tasks = static_cast<int>(std::min<int64_t>(max_tasks, p.size()));
  if (tasks <= 1) {
    f(int64_t{0}, n);
    return;
  }
  // one captured pointer, so std::function keeps the lambda inline (no allocation per call)
  struct Job {
    int64_t n;
    int tasks;
    const F* f;
  } job{n, tasks, &f};
  const Job* j = &job;
  p.parallel_for(tasks, [j](int task, int) {
    const int64_t begin = j->n * task / j->tasks, end = j->n * (task + 1) / j->tasks;
    if (begin < end) (*j->f)(begin, end);
  });
}

}  // namespace loom
