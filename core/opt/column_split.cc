#include "core/opt/column_split.h"

#include <optional>
#include <vector>

#include "core/ir/affine.h"
#include "core/ir/graph.h"
#include "core/ir/value_range.h"

namespace uopd {
namespace {

constexpr int64_t kColumnThreads = 32;  // a warp: one 128-byte line of floats per row
constexpr int64_t kRowShares = 8;       // threads per output: 32 x 8 is one 256-thread block
constexpr int64_t kMinRows = 256;
constexpr int64_t kMaxOutputs = 32768;

std::optional<int64_t> ConstSize(const UOp* range) {
  if (!range->src(0)->IsConst()) return std::nullopt;
  return static_cast<int64_t>(ConstIntValue(*range->src(0)));
}

// Whether every load of the kernel that walks `rows` steps by more than one element per row and
// reads `columns` contiguously; at least one load walks `rows`.
bool LoadsWalkColumns(const UOp* root, const UOp* rows, const UOp* columns) {
  int walking = 0;
  for (const UOp* node : Toposort(root)) {
    if (node->op() != Op::kIndex || node->num_src() < 2) continue;
    const UOp* idx = node->src(1);
    if (idx->op() == Op::kWhere) return false;  // guarded (padded) accesses: not this shape
    const std::optional<int64_t> row_step = AffineCoefficient(idx, rows);
    if (!row_step.has_value()) return false;
    if (*row_step == 0) continue;  // the output, or an input the rows do not move
    const std::optional<int64_t> column_step = AffineCoefficient(idx, columns);
    if (*row_step <= 1 || column_step != 1) return false;
    ++walking;
  }
  return walking > 0;
}

}  // namespace

bool SplitColumnReduction(Scheduler& s) {
  const OptTarget& target = s.target();
  if (!target.has_local || !target.has_shared) return false;
  int reduces = 0;
  for (const UOp* node : Toposort(s.root())) {
    if (node->op() != Op::kReduce) continue;
    const Op op = node->arg().reduce_op;
    const Scalar scalar = node->dtype().scalar;
    if (++reduces > 1 || node->dtype().count != 1 || scalar == Scalar::kBool ||
        IsNarrowFloat(scalar) || (op != Op::kAdd && op != Op::kMax && op != Op::kMul)) {
      return false;
    }
  }
  if (reduces != 1) return false;
  const std::vector<const UOp*> axes = s.Axes();
  int column_axis = -1;
  const UOp* rows = nullptr;
  int64_t outputs = 1;
  for (int i = 0; i < static_cast<int>(axes.size()); ++i) {
    const AxisType type = axes[i]->arg().axis_type;
    const std::optional<int64_t> size = ConstSize(axes[i]);
    if (type == AxisType::kGlobal || type == AxisType::kLoop) {
      if (!size.has_value()) return false;
      outputs *= *size;
      if (outputs > kMaxOutputs) return false;
      column_axis = i;
    } else if (type == AxisType::kReduce) {
      if (rows != nullptr || !size.has_value()) return false;
      rows = axes[i];
    } else {
      return false;  // opts applied already
    }
  }
  if (rows == nullptr || column_axis < 0) return false;
  const int64_t row_count = *ConstSize(rows);
  if (row_count < kMinRows || row_count % kRowShares != 0 ||
      *ConstSize(axes[column_axis]) % kColumnThreads != 0) {
    return false;
  }
  if (!LoadsWalkColumns(s.root(), rows, axes[column_axis])) return false;
  if (!s.Apply(Opt{OptOp::kLocal, column_axis, static_cast<int>(kColumnThreads)}).ok()) {
    return false;
  }
  (void)s.Apply(Opt{OptOp::kGroup, 0, static_cast<int>(kRowShares)});  // LOCAL alone if refused
  return true;
}

}  // namespace uopd
