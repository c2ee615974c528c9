#include "core/util/large_stack.h"

#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

#include "core/util/priority.h"

namespace uopd {
namespace {

// The nice value compile threads run at, absolute (so nested ones do not add up); INT_MIN: leave
// them at their creator's.
std::atomic<int> compile_thread_nice{INT32_MIN};

void* Trampoline(void* arg) {
  if (const int nice = compile_thread_nice.load(std::memory_order_relaxed); nice != INT32_MIN) {
    // Linux: the nice value is a thread's own; best effort (a thread at the process's priority
    // still does its work).
    (void)setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), nice);
  }
  (*static_cast<const std::function<void()>*>(arg))();
  return nullptr;
}

}  // namespace

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

void SetCompileThreadNice(int nice) {
  compile_thread_nice = NiceAboveThisProcess(nice).value_or(INT32_MIN);
}

}  // namespace uopd
