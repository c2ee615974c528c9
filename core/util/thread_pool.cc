#include "core/util/thread_pool.h"

#include <atomic>
#include <memory>

#include "absl/synchronization/blocking_counter.h"

namespace uopd {

ThreadPool::ThreadPool(int threads) {
  for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::Schedule(std::function<void()> task) {
  absl::MutexLock lock(&mu_);
  queue_.push_back(std::move(task));
}

void ThreadPool::WorkerLoop() {
  while (true) {
    std::function<void()> task;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](ThreadPool* pool) ABSL_EXCLUSIVE_LOCKS_REQUIRED(pool->mu_) {
            return pool->stopping_ || !pool->queue_.empty();
          },
          this));
      if (queue_.empty()) return;  // stopping, and nothing left to run
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

void ThreadPool::HelpUntil(const std::atomic<bool>& done) {
  struct Waiter {
    ThreadPool* pool;
    const std::atomic<bool>* done;
  } waiter{this, &done};
  while (true) {
    std::function<void()> task;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](Waiter* w) ABSL_EXCLUSIVE_LOCKS_REQUIRED(w->pool->mu_) {
            return w->done->load() || !w->pool->queue_.empty();
          },
          &waiter));
      if (done.load()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

void ThreadPool::Wake() { absl::MutexLock lock(&mu_); }

void ThreadPool::ParallelFor(int n, const std::function<void(int)>& fn) {
  if (n <= 0) return;
  if (n == 1 || workers_.empty()) {
    for (int i = 0; i < n; ++i) fn(i);
    return;
  }
  // Work items are claimed from a shared counter, so whichever threads show up (the caller, or
  // workers that reach the helper tasks) finish the loop; helpers that arrive late find nothing.
  // `fn` and `pending` are only touched while items remain, and the caller waits for all items;
  // the counter itself is shared, since a late helper still reads it after the caller returned.
  auto next = std::make_shared<std::atomic<int>>(0);
  absl::BlockingCounter pending(n);
  auto drain = [next, &pending, &fn, n] {
    for (int i = next->fetch_add(1); i < n; i = next->fetch_add(1)) {
      fn(i);
      pending.DecrementCount();
    }
  };
  int helpers = std::min(n - 1, size());
  for (int h = 0; h < helpers; ++h) Schedule(drain);
  drain();
  pending.Wait();
}

}  // namespace uopd
