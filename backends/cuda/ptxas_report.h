// ParsePtxasReport: what ptxas says a compiled kernel uses (its `-v` report) as the
// KernelResources every compile carries: registers per thread, static shared memory, and the
// local memory it spilled to. Occupancy and the GPU heuristics' limits are checked against
// these, with no GPU needed.
#ifndef UOPD_BACKENDS_CUDA_PTXAS_REPORT_H_
#define UOPD_BACKENDS_CUDA_PTXAS_REPORT_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/device/compiler.h"

namespace uopd {

// The report for entry function `entry` in a compile log with ptxas's `-v` lines
// ("Function properties for k" / "0 bytes stack frame, 0 bytes spill stores, ..." /
// "Used 18 registers, 1024 bytes smem, ..."). NOT_FOUND when the log does not have them.
// Spilled bytes are the larger of the spill stores and loads.
absl::StatusOr<KernelResources> ParsePtxasReport(absl::string_view log, absl::string_view entry);

}  // namespace uopd

#endif  // UOPD_BACKENDS_CUDA_PTXAS_REPORT_H_
