// Opt: one kernel optimization in tinygrad's vocabulary (tinygrad/codegen/opt/__init__.py), so a
// client's `opts_to_apply` means in uopd what it means in tinygrad (docs/OPTIMIZER.md).
#ifndef UOPD_CORE_OPT_OPT_H_
#define UOPD_CORE_OPT_OPT_H_

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace uopd {

// In tinygrad's enum order.
enum class OptOp {
  kTc,
  kUpcast,
  kUnroll,
  kLocal,
  kThread,
  kGroup,
  kGroupTop,
  kNoLocals,
  kPadTo,
  kSwap
};

absl::string_view OptOpName(OptOp op);
absl::StatusOr<OptOp> ParseOptOp(absl::string_view name);

// The most opts one kernel may be given. tinygrad's hand-coded lists have a handful and BEAM's
// a dozen or so; each opt rewrites the kernel's graph, so an unbounded list is unbounded work
// before anything runs (4,000 x UPCAST(0, 1) took 68 CPU-seconds).
inline constexpr int kMaxOptsPerKernel = 64;

struct Opt {
  OptOp op = OptOp::kUpcast;
  std::optional<int> axis;             // none only for NOLOCALS
  int arg = 0;                         // the amount (0: the whole axis), SWAP's other axis
  std::array<int, 3> tc = {-1, 0, 1};  // TC: (tc_select, tc_opt, use_tensor_cores)

  // "UPCAST(1, 4)", "NOLOCALS", "TC(0, (-1, 0, 1))".
  std::string ToString() const;
  friend bool operator==(const Opt& a, const Opt& b) {
    return a.op == b.op && a.axis == b.axis && a.arg == b.arg &&
           (a.op != OptOp::kTc || a.tc == b.tc);
  }
};

std::string OptsToString(const std::vector<Opt>& opts);

// The opts of "UPCAST(1, 16) UNROLL(0,4) NOLOCALS TC(0, (-1, 2, 1))" (OptsToString's spelling,
// spaces and commas between opts optional). INVALID_ARGUMENT naming the opt otherwise.
absl::StatusOr<std::vector<Opt>> ParseOptList(absl::string_view text);

}  // namespace uopd

#endif  // UOPD_CORE_OPT_OPT_H_
