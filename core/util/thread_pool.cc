#include "core/util/thread_pool.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <memory>

#include "absl/time/clock.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace uopd {
namespace {
thread_local const void* current_work = nullptr;

// How long a thread that runs out of work keeps looking before it sleeps. Waking a sleeping
// thread costs tens of microseconds (on the shared VMs these run on, 25-50 us a wake-up, twice
// per split loop: the helper's start and the caller's wait), as long as a whole 200,000-element
// elementwise kernel on one core; a kernel split over two cores was 2.5x slower than on one.
// OpenMP runtimes spin for the same reason (KMP_BLOCKTIME). A spinning thread yields its core
// every few microseconds, so it takes only what nothing else wants: the daemon shares its cores
// with its clients (tinygrad's Python between two calls, the serving threads), and a worker that
// held one of two cores for 200 us after each kernel made an Execute from tinygrad 225 us instead
// of 130 and a LLaMA decode token 15% slower.
constexpr absl::Duration kSpinBeforeSleep = absl::Microseconds(200);

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Spins until `ready()` or kSpinBeforeSleep has passed, yielding the core now and then; returns
// ready().
template <typename Ready>
bool SpinUntil(Ready ready) {
  const absl::Time deadline = absl::Now() + kSpinBeforeSleep;
  for (int i = 0;; ++i) {
    if (ready()) return true;
    // absl::Now is a few ns; checked every 64 pauses all the same.
    if ((i & 63) == 63) {
      if (absl::Now() > deadline) return ready();
      sched_yield();
    }
    CpuRelax();
  }
}

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
  queued_.store(queue_.size(), std::memory_order_release);
}

void ThreadPool::WorkerLoop() {
  while (true) {
    Task task;
    // A task scheduled right after the last (the next kernel's split loop) is taken without
    // sleeping in between.
    SpinUntil([this] { return queued_.load(std::memory_order_acquire) > 0; });
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
      queued_.store(queue_.size(), std::memory_order_release);
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
      queued_.store(queue_.size(), std::memory_order_release);
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
  // `fn` is only touched while items remain, and the caller waits for all items; the counters
  // are shared, since a late helper still reads them after the caller returned.
  struct Shared {
    std::atomic<int> next{0};
    std::atomic<int> pending;
    absl::Mutex mu;  // to sleep on when spinning did not see `pending` reach zero
  };
  auto shared = std::make_shared<Shared>();
  shared->pending.store(n);
  auto drain = [shared, &fn, n] {
    for (int i = shared->next.fetch_add(1); i < n; i = shared->next.fetch_add(1)) {
      fn(i);
      if (shared->pending.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        absl::MutexLock wake(&shared->mu);  // the caller's Await looks again at unlock
      }
    }
  };
  int helpers = std::min(n - 1, size());
  for (int h = 0; h < helpers; ++h) Schedule(drain);
  drain();
  auto done = [](Shared* s) { return s->pending.load(std::memory_order_acquire) == 0; };
  if (SpinUntil([&] { return done(shared.get()); })) return;
  absl::MutexLock lock(&shared->mu);
  shared->mu.Await(absl::Condition(+done, shared.get()));
}

}  // namespace uopd
