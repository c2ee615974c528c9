// Proving memory accesses in bounds from value ranges, using the mask condition of a guarded
// access (WHERE(valid, idx, Invalid)) to narrow the ranges of the variables it constrains.
#ifndef UOPD_CORE_CODEGEN_ACCESS_BOUNDS_H_
#define UOPD_CORE_CODEGEN_ACCESS_BOUNDS_H_

#include <optional>
#include <vector>

#include "core/ir/value_range.h"

namespace uopd {

// The elements `idx` may address while all `conditions` hold, when that is proven within
// [0, size): an empty interval (min > max) when the conditions cannot all hold; nullopt when
// no proof was found. `ranges` holds the unconstrained ranges (shared across calls); narrowed
// ranges are computed separately per call. Sound, not complete: nullopt means "not proven",
// not "out of bounds".
std::optional<Interval> BoundAccess(const UOp* idx, const std::vector<const UOp*>& conditions,
                                    int64_t size, ValueRanges& ranges);

// True when 0 <= idx < size holds for every value `idx` can take while all `conditions` hold
// (BoundAccess found a proof).
bool ProveInBounds(const UOp* idx, const std::vector<const UOp*>& conditions, int64_t size,
                   ValueRanges& ranges);

}  // namespace uopd

#endif  // UOPD_CORE_CODEGEN_ACCESS_BOUNDS_H_
