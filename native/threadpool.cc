#include "threadpool.h"

#include <memory>

namespace loom {

ThreadPool::ThreadPool(int threads) {
  for (int t = 1; t < threads; t++) workers_.emplace_back([this, t] { worker_loop(t); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::run_tasks(int thread) {
  for (int task; (task = next_.fetch_add(1, std::memory_order_relaxed)) < tasks_;) (*job_)(task, thread);
}

void ThreadPool::parallel_for(int tasks, const std::function<void(int, int)>& fn) {
  if (tasks <= 0) return;
  if (workers_.empty() || tasks == 1) {
    for (int i = 0; i < tasks; i++) fn(i, 0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    tasks_ = tasks;
    next_.store(0, std::memory_order_relaxed);
    busy_ = static_cast<int>(workers_.size());
    generation_++;
  }
  wake_.notify_all();
  run_tasks(0);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [this] { return busy_ == 0; });
  job_ = nullptr;
}

void ThreadPool::worker_loop(int thread) {
  unsigned long seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
    }
    run_tasks(thread);
    std::lock_guard<std::mutex> lock(mutex_);
    if (--busy_ == 0) done_.notify_one();
  }
}

namespace {
std::unique_ptr<ThreadPool> g_pool;
int g_threads = 0;
}  // namespace

void set_thread_count(int threads) {
  if (threads < 1) threads = 1;
  if (g_pool && g_threads == threads) return;
  g_pool.reset();
  g_threads = threads;
  g_pool = std::make_unique<ThreadPool>(threads);
}

int thread_count() {
  if (!g_pool) set_thread_count(static_cast<int>(std::thread::hardware_concurrency()));
  return g_threads;
}

ThreadPool& pool() {
  if (!g_pool) thread_count();
  return *g_pool;
}

}  // namespace loom
