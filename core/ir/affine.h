// Affine index analysis: how an integer expression moves with one range, for deciding what is
// contiguous in memory (vector loads, the axes an optimizer upcasts).
#ifndef UOPD_CORE_IR_AFFINE_H_
#define UOPD_CORE_IR_AFFINE_H_

#include <cstdint>
#include <optional>

#include "core/ir/uop.h"

namespace uopd {

// How much `expr` grows when `range` grows by one, when `expr` is affine in it (a sum of terms,
// constants times `range` among them); nullopt when it is not (IDIV, MOD, loads of it, ...).
std::optional<int64_t> AffineCoefficient(const UOp* expr, const UOp* range);

}  // namespace uopd

#endif  // UOPD_CORE_IR_AFFINE_H_
