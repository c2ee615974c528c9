// The CPU cost model: how long a kernel runs, estimated from the linear program the CPU's code
// generation makes of it (core/codegen/pipeline.h), so the heuristics can choose between
// candidate opt lists without compiling or timing them.
//
// It is a throughput model of one out-of-order core with 256-bit vector units (two vector ALU
// ops, two loads and one store a cycle), applied per loop: each instruction costs its share of
// a cycle (vector ones per 32 bytes; gathers lane by lane; divisions, square roots and emulated
// small floats far more) and runs as often as the loops its operands vary with (a value that
// does not change inside a loop is computed outside it, as LLVM's LICM does). An innermost
// loop takes at least the latency of its longest chain of updates to one accumulator; the
// accumulators it keeps live beyond the vector registers spill. The outer loop split across
// threads runs its share on each core. Memory: every buffer the kernel touches is read or
// written once at the bandwidth of the cache level its footprint fits in, and the kernel takes
// the longer of the two times (plus a little of the shorter, so ties go to less work).
//
// The numbers are relative: good enough to rank candidates of one kernel, not to predict a time.
#ifndef UOPD_CORE_OPT_COST_MODEL_H_
#define UOPD_CORE_OPT_COST_MODEL_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/codegen/linear_program.h"
#include "core/ir/kernel_ast.h"
#include "core/opt/opt_target.h"

namespace uopd {

struct CpuCost {
  double compute_cycles = 0;  // on the busiest core
  double memory_cycles = 0;
  double Cycles() const;
};

// `trace`, when given, gets one line per instruction that costs something (its loop depth, the
// depth it varies with, its cost per iteration of the loop it is charged to) and per loop.
CpuCost EstimateCpuCost(const LinearProgram& program, const OptTarget& target,
                        std::string* trace = nullptr);

// Lowers `ast` (optimized or not) for the CPU and estimates it. Errors are the lowering's.
absl::StatusOr<CpuCost> EstimateCpuKernelCost(std::shared_ptr<const KernelAst> ast,
                                              const OptTarget& target,
                                              std::string* trace = nullptr);

}  // namespace uopd

#endif  // UOPD_CORE_OPT_COST_MODEL_H_
