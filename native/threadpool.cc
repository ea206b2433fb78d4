#include "threadpool.h"

#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
static inline void cpu_relax() { _mm_pause(); }
#elif defined(__aarch64__)
static inline void cpu_relax() { asm volatile("yield" ::: "memory"); }
#else
static inline void cpu_relax() {}
#endif

namespace loom {

namespace {

thread_local bool t_in_pool_task = false;

constexpr auto kSpinPause = std::chrono::microseconds(100);  // pause-spin, then
constexpr auto kSpinYield = std::chrono::microseconds(2000);  // yield-spin, then sleep

inline uint32_t generation_of(uint64_t claim) { return static_cast<uint32_t>(claim >> 32); }
inline uint32_t unclaimed_of(uint64_t claim) { return static_cast<uint32_t>(claim); }

}  // namespace

ThreadPool::ThreadPool(int threads) { start_workers(threads); }

ThreadPool::~ThreadPool() { stop_workers(); }

void ThreadPool::start_workers(int threads) {
  stopping_.store(false);
  for (int t = 1; t < threads; t++) workers_.emplace_back([this, t] { worker_loop(t); });
  size_.store(static_cast<int>(workers_.size()) + 1);
}

void ThreadPool::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(sleep_mutex_);
    stopping_.store(true);
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
  workers_.clear();
  size_.store(1);
}

void ThreadPool::resize(int threads) {
  std::lock_guard<std::mutex> call(call_mutex_);
  if (threads == size()) return;
  stop_workers();
  start_workers(threads);
}

void ThreadPool::run_tasks(uint32_t generation, int thread) {
  uint64_t claim = claim_.load(std::memory_order_acquire);
  for (;;) {
    if (generation_of(claim) != generation || unclaimed_of(claim) == 0) return;
    if (!claim_.compare_exchange_weak(claim, claim - 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
    // A claimed task keeps the job alive: job_ and tasks_ stay valid until done_ counts it.
    const int task = tasks_ - static_cast<int>(unclaimed_of(claim));
    t_in_pool_task = true;
    (*job_)(task, thread);
    t_in_pool_task = false;
    done_.fetch_add(1, std::memory_order_acq_rel);
    claim = claim_.load(std::memory_order_acquire);
  }
}

void ThreadPool::parallel_for(int tasks, const std::function<void(int, int)>& fn) {
  if (tasks <= 0) return;
  if (tasks == 1 || t_in_pool_task) {
    for (int i = 0; i < tasks; i++) fn(i, 0);
    return;
  }
  std::lock_guard<std::mutex> call(call_mutex_);
  if (workers_.empty()) {
    for (int i = 0; i < tasks; i++) fn(i, 0);
    return;
  }
  const uint32_t generation = generation_of(claim_.load(std::memory_order_relaxed)) + 1;
  job_ = &fn;
  tasks_ = tasks;
  done_.store(0, std::memory_order_relaxed);
  // publishes job_/tasks_ (release) and the new generation with all tasks unclaimed
  claim_.store((static_cast<uint64_t>(generation) << 32) | static_cast<uint32_t>(tasks), std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    { std::lock_guard<std::mutex> lock(sleep_mutex_); }
    wake_.notify_all();
  }
  run_tasks(generation, 0);
  while (done_.load(std::memory_order_acquire) != tasks) cpu_relax();
  job_ = nullptr;
}

// Spins, then sleeps, until the generation differs from `seen`; false when stopping.
bool ThreadPool::wait_for_job(uint32_t seen) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  for (unsigned spins = 0;; spins++) {
    if (generation_of(claim_.load(std::memory_order_acquire)) != seen) return true;
    if (stopping_.load(std::memory_order_relaxed)) return false;
    if ((spins & 63) != 63) {
      cpu_relax();
      continue;
    }
    const auto waited = clock::now() - start;
    if (waited < kSpinPause) continue;
    if (waited < kSpinYield) {
      std::this_thread::yield();
      continue;
    }
    std::unique_lock<std::mutex> lock(sleep_mutex_);
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    wake_.wait(lock, [&] {
      return stopping_.load() || generation_of(claim_.load(std::memory_order_seq_cst)) != seen;
    });
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
    return !stopping_.load();
  }
}

void ThreadPool::worker_loop(int thread) {
  uint32_t seen = 0;
  while (wait_for_job(seen)) {
    seen = generation_of(claim_.load(std::memory_order_acquire));
    run_tasks(seen, thread);
  }
}

namespace {
int default_threads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}
}  // namespace

ThreadPool& pool() {
  // never destroyed: worker threads must not be joined from static destructors at exit
  static ThreadPool* const p = new ThreadPool(default_threads());
  return *p;
}

void set_thread_count(int threads) { pool().resize(threads < 1 ? 1 : threads); }

int thread_count() { return pool().size(); }

}  // namespace loom
