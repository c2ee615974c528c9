// RunOnLargeStack: runs a function on a thread with a big stack and waits for it.
//
// Rendering and LLVM's passes recurse over expression chains as deep as the IR's depth limit
// allows; request threads have ordinary stacks. Compilation already costs milliseconds, so a
// thread per compilation is cheap insurance against a deep graph overflowing a request thread.
#ifndef UOPD_CORE_UTIL_LARGE_STACK_H_
#define UOPD_CORE_UTIL_LARGE_STACK_H_

#include <cstddef>
#include <functional>

namespace uopd {

// The stack compilations run on: 512 MiB of address space, touched only as deep as needed.
inline constexpr size_t kCompileStackBytes = size_t{512} << 20;

// Runs `fn` on a new thread with a `stack_bytes` stack and returns when it has finished. Runs
// `fn` on the calling thread if such a thread cannot be created.
void RunOnLargeStack(size_t stack_bytes, const std::function<void()>& fn);

}  // namespace uopd

#endif  // UOPD_CORE_UTIL_LARGE_STACK_H_
