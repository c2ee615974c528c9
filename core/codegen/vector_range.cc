#include "core/codegen/vector_range.h"

#include "core/codegen/expand.h"
#include "core/ir/affine.h"
#include "core/ir/value_range.h"

namespace uopd {
double Trips(const UOp* index) {
  double trips = 1;
  for (const UOp* n : Toposort(index)) {
    if (n->op() != Op::kRange) continue;
    trips *= n->src(0)->IsConst() ? static_cast<double>(ConstIntValue(*n->src(0))) : 1024.0;
  }
  return trips;
}

const UOp* ChooseVectorRange(const KernelAst& ast, int64_t max_lanes) {
  const std::vector<const UOp*> nodes = Toposort(ast.root);
  std::vector<std::pair<const UOp*, double>> accesses;  // guard-free index, weight
  for (const UOp* n : nodes) {
    if (n->op() != Op::kIndex) continue;
    const UOp* idx = n->src(1);
    while (idx->op() == Op::kWhere && idx->src(2)->IsInvalid()) idx = idx->src(1);
    accesses.push_back({idx, Trips(idx)});
  }
  const absl::flat_hash_set<const UOp*> ordering = RangesOrderingMemory(ast.root);
  const UOp* best = nullptr;
  double best_score = 0;
  for (const UOp* range : nodes) {
    if (range->op() != Op::kRange || !range->src(0)->IsConst()) continue;
    if (ordering.contains(range)) continue;  // its iterations run one after another
    AxisType type = range->arg().axis_type;
    if (type != AxisType::kUpcast && type != AxisType::kUnroll) continue;
    const int64_t size = static_cast<int64_t>(ConstIntValue(*range->src(0)));
    if (size < 2 || size > max_lanes || (size & (size - 1)) != 0) continue;
    // Contiguous accesses, weighted by how often they run: a load inside a reduction counts
    // for more than the store of its result.
    double score = 0;
    for (const auto& [idx, trips] : accesses) {
      if (AffineCoefficient(idx, range) == 1) score += trips;
    }
    if (score > best_score) {
      best = range;
      best_score = score;
    }
  }
  return best;
}

}  // namespace uopd
