// The one adapter from LLVM's Error/Expected to absl::Status: LLVM errors stop here.
#ifndef UOPD_BACKENDS_CPU_LLVM_STATUS_H_
#define UOPD_BACKENDS_CPU_LLVM_STATUS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "llvm/Support/Error.h"

namespace uopd {

// Consumes `error`; OK when it holds no error, else `code` with `context` and LLVM's message.
inline absl::Status FromLlvmError(llvm::Error error, absl::string_view context,
                                  absl::StatusCode code = absl::StatusCode::kInternal) {
  if (!error) return absl::OkStatus();
  std::string message = llvm::toString(std::move(error));
  return absl::Status(code, absl::StrCat(context, ": ", message));
}

}  // namespace uopd

#endif  // UOPD_BACKENDS_CPU_LLVM_STATUS_H_
