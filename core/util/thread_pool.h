// ThreadPool: a fixed set of worker threads that run scheduled tasks. The Executor that CPU
// kernels (and later, execution plans) run on; created in main and injected, never global.
#ifndef UOPD_CORE_UTIL_THREAD_POOL_H_
#define UOPD_CORE_UTIL_THREAD_POOL_H_

#include <atomic>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace uopd {

// Safe for concurrent use. The destructor waits for queued tasks to finish.
class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()); }
  // Queues `task`, tagged with the calling thread's current work (ScopedWork below; none by
  // default), which HelpUntil uses to pick its own tasks.
  void Schedule(std::function<void()> task);
  // Runs fn(0) .. fn(n-1), using up to `n - 1` pool workers plus the calling thread, and returns
  // when all are done. Safe to call from a pool worker (the caller always makes progress itself,
  // so nested calls cannot deadlock).
  void ParallelFor(int n, const std::function<void(int)>& fn);

  // Marks what the current thread does, for as long as it lives, as part of one piece of work
  // (`work` is only compared, never read: a plan's run). Tasks it schedules, ParallelFor's
  // helpers included, carry the tag, and so does whatever a task carrying it schedules.
  class ScopedWork {
   public:
    explicit ScopedWork(const void* work);
    ~ScopedWork();
    ScopedWork(const ScopedWork&) = delete;
    ScopedWork& operator=(const ScopedWork&) = delete;

   private:
    const void* previous_;
  };

  // Runs the queued tasks of `work` on the calling thread until `done` is true; returns at once
  // if it already is. For a thread that would otherwise block while the pool works for it (a
  // plan's caller waiting for its kernels): a kernel running on a worker splits its loop through
  // ParallelFor, and with every worker busy its helper task would wait in the queue while this
  // thread sleeps, halving the kernel's speed. Only `work`'s own tasks: a caller must not end up
  // inside another caller's kernel when its own run is over. Whoever sets `done` calls Wake()
  // after.
  void HelpUntil(const void* work, const std::atomic<bool>& done);
  // Makes threads in HelpUntil look at their `done` again.
  void Wake();

 private:
  void WorkerLoop();

  absl::Mutex mu_;
  struct Task {
    std::function<void()> run;
    const void* work;  // ScopedWork's tag when it was scheduled
  };
  std::deque<Task> queue_ ABSL_GUARDED_BY(mu_);
  // The oldest queued task of `work`, or queue_.end().
  std::deque<Task>::iterator FirstTaskOf(const void* work) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // queue_.size(), readable without mu_: what idle workers spin on before they sleep.
  std::atomic<size_t> queued_{0};
  std::vector<std::thread> workers_;  // constant after construction
};

}  // namespace uopd

#endif  // UOPD_CORE_UTIL_THREAD_POOL_H_
