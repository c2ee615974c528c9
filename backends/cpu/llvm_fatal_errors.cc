#include "backends/cpu/llvm_fatal_errors.h"

#include "llvm/Support/ErrorHandling.h"

namespace uopd {
namespace {

LlvmFatalErrorHandler g_handler = nullptr;

void OnFatalError(void*, const char* reason, bool) { g_handler(reason, false); }
void OnBadAlloc(void*, const char* reason, bool) { g_handler(reason, true); }

}  // namespace

void RouteLlvmFatalErrors(LlvmFatalErrorHandler handler) {
  g_handler = handler;
  llvm::install_fatal_error_handler(OnFatalError, nullptr);
  llvm::install_bad_alloc_error_handler(OnBadAlloc, nullptr);
}

}  // namespace uopd
