// Routing LLVM's fatal errors. By default LLVM prints and calls exit(1) or abort() on
// report_fatal_error ("Cannot select", broken invariants) and on failed allocations; a compile
// worker wants to tell the daemon why first. Install once per process.
#ifndef UOPD_BACKENDS_CPU_LLVM_FATAL_ERRORS_H_
#define UOPD_BACKENDS_CPU_LLVM_FATAL_ERRORS_H_

namespace uopd {

// `handler` must not return. `out_of_memory` tells an allocation failure from other errors.
using LlvmFatalErrorHandler = void (*)(const char* reason, bool out_of_memory);
void RouteLlvmFatalErrors(LlvmFatalErrorHandler handler);

}  // namespace uopd

#endif  // UOPD_BACKENDS_CPU_LLVM_FATAL_ERRORS_H_
