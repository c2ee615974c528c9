// LoopPlan: how a backend spells each loop and masked load of a linear program, decided in the
// codegen pipeline from the target's description (core/codegen/codegen_target.h) so that the
// renderer only spells what the plan says.
#ifndef UOPD_CORE_CODEGEN_LOOP_PLAN_H_
#define UOPD_CORE_CODEGEN_LOOP_PLAN_H_

#include <cstdint>
#include <vector>

#include "core/codegen/codegen_target.h"
#include "core/codegen/linear_program.h"

namespace uopd {

// Where a loop reads the stop word (CodegenTarget::stop_chunk).
enum class StopCheck : uint8_t {
  kNone,           // a loop nest of constant bounds doing at most stop_chunk iterations in all:
                   // the loops around it check
  kEachIteration,  // an outer loop: checks once per iteration
  kBetweenChunks,  // an innermost loop: runs in chunks of stop_chunk iterations and checks
                   // between them, so its body stays a plain counted loop a vectorizer takes
};

struct LoopPlan {
  int64_t stop_chunk = 0;
  // By instruction (kLoopBegin, kGlobalIndex; kNone elsewhere).
  std::vector<StopCheck> stop;
  // By instruction (kLoopBegin): an innermost loop updating more scalar accumulators than
  // CodegenTarget::max_widened_accumulators (a convolution's 4x4 outputs times a 4-wide window,
  // say). A loop vectorizer would widen each accumulator into a vector of its own, one per lane
  // of the loop counter, gathering the operands the counter strides over; past the register
  // file that spills every accumulator every iteration. Left to the straight-line (SLP)
  // vectorizer, one iteration's independent multiply-adds pack into a few vectors instead, as
  // clang does with tinygrad's C (whose conditional loads keep the loop vectorizer out).
  std::vector<bool> register_tile;
  // By instruction (masked kLoad): spelled as a branch around the load rather than a select.
  // Only when its mask is a function of the loop counters alone that changes in the load's own
  // innermost loop: a mask that follows the data (a loaded index, an accumulator) is one no
  // predictor follows, and a mask fixed in that loop gains nothing from a branch there and
  // splits its body into blocks, which keeps LLVM from vectorizing across the loads (a
  // convolution's input gradient ran 1.3x slower). The lanes of a strided gather
  // (core/codegen/strided_gather.h) are read by its span loads and are never branched.
  std::vector<bool> branched;

  // Whether any loop reads the stop word.
  bool ChecksStop() const;
};

LoopPlan PlanLoops(const LinearProgram& program, const CodegenTarget& target);

}  // namespace uopd

#endif  // UOPD_CORE_CODEGEN_LOOP_PLAN_H_
