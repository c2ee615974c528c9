// RunOnLargeStack: runs a function on a thread with a big stack and waits for it.
//
// Rendering and LLVM's passes recurse over expression chains as deep as the IR's depth limit
// allows; request threads have ordinary stacks. Compilation already costs milliseconds, so a
// thread per compilation is cheap insurance against a deep graph overflowing a request thread.
#ifndef UOPD_CORE_UTIL_LARGE_STACK_H_
#define UOPD_CORE_UTIL_LARGE_STACK_H_

#include <cstddef>
#include <functional>
#include <optional>
#include <type_traits>

#include "core/util/priority.h"

namespace uopd {

// The stack compilations run on: 512 MiB of address space, touched only as deep as needed.
inline constexpr size_t kCompileStackBytes = size_t{512} << 20;

// Runs `fn` on a new thread with a `stack_bytes` stack and returns when it has finished. Runs
// `fn` on the calling thread if such a thread cannot be created.
void RunOnLargeStack(size_t stack_bytes, const std::function<void()>& fn);

// The same for compile work with a result, on a kCompileStackBytes stack: returns what `fn`
// returned.
template <typename Fn>
std::invoke_result_t<Fn&> OnCompileStack(Fn&& fn) {
  std::optional<std::invoke_result_t<Fn&>> result;
  RunOnLargeStack(kCompileStackBytes, [&] { result.emplace(fn()); });
  return *std::move(result);
}

// What runs on those threads is compilation (optimizing, ranking candidates, searching,
// rendering): work whose time grows with what a client sends, that only its own caller waits
// for. Set once before serving: those threads run `priority.nice` nicer than the process (as the
// compile workers do), and a thread still running after `priority.demote_after` is made
// `priority.demoted_nice` nicer again, so that one client's large compiles take the CPU the
// daemon's short calls (Execute, cache hits, copies) leave instead of slowing every client's.
// The default leaves them at the process's priority and demotes none.
void SetCompileThreadPriority(const CompilePriority& priority);

// The stack kernels run on: a CPU kernel runs on the thread of the call that executes it and on
// the thread pool's, and its frame may take up to 1 MiB (backends/cpu/llvm_compiler.h).
inline constexpr size_t kKernelThreadStackBytes = size_t{8} << 20;

// Makes every thread created from now on (std::thread, gRPC's) get a stack of at least `bytes`,
// whatever `ulimit -s` says (pthread_setattr_default_np). Returns the default stack size then in
// force (0 if it cannot be read). Call before starting threads.
size_t EnsureThreadStacksOfAtLeast(size_t bytes);

}  // namespace uopd

#endif  // UOPD_CORE_UTIL_LARGE_STACK_H_
