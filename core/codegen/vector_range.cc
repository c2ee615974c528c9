#include "core/codegen/vector_range.h"

#include "core/ir/affine.h"
#include "core/ir/value_range.h"

namespace uopd {
const UOp* ChooseVectorRange(const KernelAst& ast, int64_t max_lanes) {
  const std::vector<const UOp*> nodes = Toposort(ast.root);
  const UOp* best = nullptr;
  int best_score = 0;
  for (const UOp* range : nodes) {
    if (range->op() != Op::kRange || !range->src(0)->IsConst()) continue;
    AxisType type = range->arg().axis_type;
    if (type != AxisType::kUpcast && type != AxisType::kUnroll) continue;
    const int64_t size = static_cast<int64_t>(ConstIntValue(*range->src(0)));
    if (size < 2 || size > max_lanes || (size & (size - 1)) != 0) continue;
    int score = 0;
    for (const UOp* n : nodes) {
      if (n->op() != Op::kIndex) continue;
      const UOp* idx = n->src(1);
      while (idx->op() == Op::kWhere && idx->src(2)->IsInvalid()) idx = idx->src(1);
      if (AffineCoefficient(idx, range) == 1) score += n->dtype().ptr ? 2 : 1;
    }
    if (score > best_score || (score == best_score && score > 0 && best != nullptr &&
                               size > static_cast<int64_t>(ConstIntValue(*best->src(0))))) {
      best = range;
      best_score = score;
    }
  }
  return best;
}

}  // namespace uopd
