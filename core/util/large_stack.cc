#include "core/util/large_stack.h"

#include <pthread.h>

namespace uopd {
namespace {

void* Trampoline(void* arg) {
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

}  // namespace uopd
