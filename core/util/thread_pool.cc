#include "core/util/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <memory>

#include "absl/synchronization/blocking_counter.h"

namespace uopd {
namespace {
thread_local const void* current_work = nullptr;
}  // namespace

ThreadPool::ScopedWork::ScopedWork(const void* work) : previous_(current_work) {
  current_work = work;
}

ThreadPool::ScopedWork::~ScopedWork() { current_work = previous_; }

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
  queue_.push_back({std::move(task), current_work});
}

void ThreadPool::WorkerLoop() {
  while (true) {
    Task task;
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
    ScopedWork scope(task.work);
    task.run();
  }
}

std::deque<ThreadPool::Task>::iterator ThreadPool::FirstTaskOf(const void* work) {
  return std::find_if(queue_.begin(), queue_.end(),
                      [work](const Task& t) { return t.work == work; });
}

void ThreadPool::HelpUntil(const void* work, const std::atomic<bool>& done) {
  struct Helper {
    ThreadPool* pool;
    const void* work;
    const std::atomic<bool>* done;
  } helper{this, work, &done};
  while (true) {
    Task task;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](Helper* h) ABSL_EXCLUSIVE_LOCKS_REQUIRED(h->pool->mu_) {
            return h->done->load() || h->pool->FirstTaskOf(h->work) != h->pool->queue_.end();
          },
          &helper));
      if (done.load()) return;
      // Looked up again: the condition may have been evaluated by another thread.
      auto it = FirstTaskOf(work);
      task = std::move(*it);
      queue_.erase(it);
    }
    ScopedWork scope(task.work);
    task.run();
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
