// A fixed pool of worker threads for the kernels' parallel loops. The calling thread
// takes part, so a pool of N threads runs N-1 workers. One parallel_for at a time.
#pragma once
#include <atomic>
#include <condition_variable>
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

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn(task, thread) for every task in [0, tasks), spread over the pool's threads
  // (thread in [0, size())); returns when all have finished.
  void parallel_for(int tasks, const std::function<void(int task, int thread)>& fn);

 private:
  void worker_loop(int thread);
  void run_tasks(int thread);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(int, int)>* job_ = nullptr;
  int tasks_ = 0;
  std::atomic<int> next_{0};
  int busy_ = 0;            // workers still inside the current job
  unsigned long generation_ = 0;
  bool stopping_ = false;
};

// The process-wide pool the kernels use; sized by set_thread_count (default: hardware cores).
ThreadPool& pool();
void set_thread_count(int threads);
int thread_count();

}  // namespace loom
