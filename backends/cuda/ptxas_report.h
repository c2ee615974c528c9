// PtxasReport: what ptxas says a compiled kernel uses (its `-v` report): registers per thread,
// static shared memory, and the local memory it spilled to. Occupancy and the GPU heuristics'
// limits are checked against these, with no GPU needed.
#ifndef UOPD_BACKENDS_CUDA_PTXAS_REPORT_H_
#define UOPD_BACKENDS_CUDA_PTXAS_REPORT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace uopd {

struct PtxasReport {
  int registers = 0;         // per thread
  int64_t shared_bytes = 0;  // static shared memory per block
  int64_t stack_bytes = 0;   // the stack frame, per thread
  int64_t spill_store_bytes = 0;
  int64_t spill_load_bytes = 0;

  bool Spills() const { return spill_store_bytes > 0 || spill_load_bytes > 0; }
};

// The report for entry function `entry` in a compile log with ptxas's `-v` lines
// ("Function properties for k" / "0 bytes stack frame, 0 bytes spill stores, ..." /
// "Used 18 registers, 1024 bytes smem, ..."). NOT_FOUND when the log does not have them.
absl::StatusOr<PtxasReport> ParsePtxasReport(absl::string_view log, absl::string_view entry);

}  // namespace uopd

#endif  // UOPD_BACKENDS_CUDA_PTXAS_REPORT_H_
