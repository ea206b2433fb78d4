// A fixed pool of worker threads for the kernels' parallel loops. The calling thread
// takes part, so a pool of N threads runs N-1 workers and never more threads than N.
// Low latency: kernels call parallel_for hundreds of times per decoded token, so an idle
// worker spins (pause, then yield) for a short while before it sleeps on a condition
// variable. One parallel_for at a time (calls are serialized); a parallel_for issued from
// inside a task runs serially on that thread. Tasks must not throw.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace loom {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return size_.load(std::memory_order_relaxed); }

  // Changes the number of threads; waits for a running parallel_for to finish first.
  void resize(int threads);

  // Runs fn(task, thread) for every task in [0, tasks), spread over the pool's threads
  // (thread in [0, size())); returns when all have finished.
  void parallel_for(int tasks, const std::function<void(int task, int thread)>& fn);

 private:
  void start_workers(int threads);
  void stop_workers();
  void worker_loop(int thread);
  // Claims and runs tasks of job `generation` until none is left.
  void run_tasks(uint32_t generation, int thread);
  bool wait_for_job(uint32_t seen);

  std::vector<std::thread> workers_;
  std::atomic<int> size_{1};
  std::mutex call_mutex_;  // serializes parallel_for callers and resize
  // (generation << 32) | tasks not yet claimed. A worker claims a task with a CAS that
  // also checks the generation, so it can never run a task of a finished job.
  std::atomic<uint64_t> claim_{0};
  // Valid while the job of the current generation has unclaimed or running tasks.
  const std::function<void(int, int)>* job_ = nullptr;
  int tasks_ = 0;
  std::atomic<int> done_{0};  // tasks of the current job finished
  std::mutex sleep_mutex_;
  std::condition_variable wake_;
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stopping_{false};
};

// The process-wide pool the kernels use (one object for the life of the process, so a
// reference to it stays valid); sized by set_thread_count (default: hardware threads).
ThreadPool& pool();
void set_thread_count(int threads);
int thread_count();

}  // namespace loom
