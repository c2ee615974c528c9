// HostTarget: what the CPU compiler generates code for, resolved once from the machine.
// Never "native": the triple, CPU name and the full feature string are spelled out, so compiled
// bytes in a shared cache are only reused by machines that can run them.
#ifndef UOPD_BACKENDS_CPU_HOST_TARGET_H_
#define UOPD_BACKENDS_CPU_HOST_TARGET_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace uopd {

struct HostTarget {
  std::string triple;    // "x86_64-pc-linux-gnu"
  std::string cpu;       // "znver3"
  std::string features;  // "+avx2,+fma,-avx512f,...", sorted
  // "triple;cpu;features": the compile-target component of cache keys.
  std::string Describe() const;
  // The inverse of Describe; INVALID_ARGUMENT for text of another shape.
  static absl::StatusOr<HostTarget> Parse(absl::string_view described);
};

// The machine's target. Initializes LLVM's native target once (thread safe).
const HostTarget& GetHostTarget();

// Initializes LLVM's native target, asm printer and parser once; safe to call from any thread.
void InitializeLlvmOnce();

}  // namespace uopd

#endif  // UOPD_BACKENDS_CPU_HOST_TARGET_H_
