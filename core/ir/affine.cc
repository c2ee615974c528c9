#include "core/ir/affine.h"

#include "absl/container/flat_hash_map.h"
#include "core/ir/graph.h"
#include "core/ir/value_range.h"

namespace uopd {

std::optional<int64_t> AffineCoefficient(const UOp* expr, const UOp* range) {
  absl::flat_hash_map<const UOp*, std::optional<int64_t>> coef;
  absl::flat_hash_map<const UOp*, bool> depends;
  ValueRanges ranges;
  for (const UOp* n : Toposort(expr)) {
    bool d = n == range;
    for (const UOp* s : n->src()) d |= depends.at(s);
    depends[n] = d;
    std::optional<int64_t> c;
    auto of = [&](int i) { return coef.at(n->src(i)); };
    if (n == range) {
      c = 1;
    } else if (!d) {
      c = 0;
    } else if (n->dtype().scalar != Scalar::kIndex && ranges.MayWrap(n)) {
      // INDEX arithmetic is int64's, taken as exact (indices stay far from 2^63); a narrower
      // type wraps: uint8(r + 254) over r < 4 is 254, 255, 0, 1, not affine in r, and a vector
      // access from lane 0's element would leave the lanes' elements.
      c = std::nullopt;
    } else if (n->op() == Op::kAdd && of(0) && of(1)) {
      c = *of(0) + *of(1);
    } else if (n->op() == Op::kSub && of(0) && of(1)) {
      c = *of(0) - *of(1);
    } else if (n->op() == Op::kNeg && of(0)) {
      c = -*of(0);
    } else if (n->op() == Op::kMul && of(0) && of(1)) {
      // Affine only when one factor does not vary with the range and is a constant.
      const UOp* a = n->src(0);
      const UOp* b = n->src(1);
      if (*of(1) == 0 && b->IsConst()) c = *of(0) * static_cast<int64_t>(ConstIntValue(*b));
      if (*of(0) == 0 && a->IsConst()) c = *of(1) * static_cast<int64_t>(ConstIntValue(*a));
    } else if (n->op() == Op::kCast && of(0) && IsInt(n->dtype().scalar) &&
               IntBits(n->dtype().scalar) >= IntBits(n->src(0)->dtype().scalar)) {
      c = of(0);
    }
    coef[n] = c;
  }
  return coef.at(expr);
}

}  // namespace uopd
