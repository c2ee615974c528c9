#include "core/util/large_stack.h"

#include <pthread.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <list>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "core/util/priority.h"

namespace uopd {
namespace {

// The nice values compile threads run at, absolute (so nested ones do not add up); INT_MIN:
// leave them at their creator's.
std::atomic<int> compile_thread_nice{INT32_MIN};
std::atomic<int> demoted_thread_nice{INT32_MIN};
std::atomic<int64_t> demote_after_ns{0};  // 0: never

// Makes compile threads that have run past the demotion time nicer. Linux keeps a nice value
// per thread, and one thread may raise another's of the same process; the thread is reniced
// only while registered (alive), under the same lock it leaves with, so a reused thread id is
// never touched.
class Demoter {
 public:
  static Demoter& Get() {
    static Demoter* demoter = new Demoter;  // lives as long as the process, with its thread
    return *demoter;
  }

  struct Running {
    pid_t tid;
    absl::Time started;
    bool demoted = false;
  };
  std::list<Running>::iterator Enter() {
    absl::MutexLock lock(&mu_);
    if (!started_) {
      started_ = true;
      std::thread([this] { Loop(); }).detach();
    }
    running_.push_back(Running{gettid(), absl::Now()});
    return std::prev(running_.end());
  }
  void Leave(std::list<Running>::iterator it) {
    absl::MutexLock lock(&mu_);
    running_.erase(it);
  }

 private:
  void Loop() {
    while (true) {
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(
            +[](std::list<Running>* running) { return !running->empty(); }, &running_));
        const int64_t after = demote_after_ns.load(std::memory_order_relaxed);
        const int nice = demoted_thread_nice.load(std::memory_order_relaxed);
        const absl::Time now = absl::Now();
        for (Running& r : running_) {
          if (r.demoted || after <= 0 || nice == INT32_MIN) continue;
          if (now - r.started < absl::Nanoseconds(after)) continue;
          (void)setpriority(PRIO_PROCESS, static_cast<id_t>(r.tid), nice);  // best effort
          r.demoted = true;
        }
      }
      // A demotion is due after hundreds of milliseconds: looking every 20 ms is enough.
      absl::SleepFor(absl::Milliseconds(20));
    }
  }

  absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  std::list<Running> running_ ABSL_GUARDED_BY(mu_);
};

void* Trampoline(void* arg) {
  if (const int nice = compile_thread_nice.load(std::memory_order_relaxed); nice != INT32_MIN) {
    // Linux: the nice value is a thread's own; best effort (a thread at the process's priority
    // still does its work).
    (void)setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), nice);
  }
  const bool demotable = demote_after_ns.load(std::memory_order_relaxed) > 0 &&
                         demoted_thread_nice.load(std::memory_order_relaxed) != INT32_MIN;
  std::list<Demoter::Running>::iterator registered;
  if (demotable) registered = Demoter::Get().Enter();
  (*static_cast<const std::function<void()>*>(arg))();
  if (demotable) Demoter::Get().Leave(registered);
  return nullptr;
}

}  // namespace

size_t EnsureThreadStacksOfAtLeast(size_t bytes) {
  pthread_attr_t attr;
  if (pthread_getattr_default_np(&attr) != 0) return 0;
  size_t current = 0;
  if (pthread_attr_getstacksize(&attr, &current) == 0 && current < bytes &&
      pthread_attr_setstacksize(&attr, bytes) == 0 && pthread_setattr_default_np(&attr) == 0) {
    current = bytes;
  }
  pthread_attr_destroy(&attr);
  return current;
}

void RunOnLargeStack(size_t stack_bytes, const std::function<void()>& fn) {
  pthread_attr_t attr;
  pthread_t thread;
  bool started =
      pthread_attr_init(&attr) == 0 && pthread_attr_setstacksize(&attr, stack_bytes) == 0 &&
      pthread_create(&thread, &attr, &Trampoline, const_cast<std::function<void()>*>(&fn)) == 0;
  pthread_attr_destroy(&attr);
  if (!started) {
    fn();
    return;
  }
  pthread_join(thread, nullptr);
}

void SetCompileThreadPriority(const CompilePriority& priority) {
  compile_thread_nice = NiceAboveThisProcess(priority.nice).value_or(INT32_MIN);
  demoted_thread_nice =
      NiceAboveThisProcess(priority.nice + priority.demoted_nice).value_or(INT32_MIN);
  demote_after_ns = priority.demote_after > absl::ZeroDuration()
                        ? absl::ToInt64Nanoseconds(priority.demote_after)
                        : 0;
}

}  // namespace uopd
