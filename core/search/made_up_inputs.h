// The made-up inputs a search, or a tournament of the heuristics' candidates, runs and compares
// candidates on (core/search/kernel_search.h).
#ifndef UOPD_CORE_SEARCH_MADE_UP_INPUTS_H_
#define UOPD_CORE_SEARCH_MADE_UP_INPUTS_H_

#include <random>

#include "core/ir/dtype.h"

namespace uopd {

// Writes one made-up element of `scalar` at `out`: floats of magnitude in [0.25, 2) with either
// sign (sums stay well conditioned, no overflow), integers in [0, 16) (small enough to index
// with), bools. Floats narrower than float32 keep at most half their precision's significant
// bits, so the product of two is exact in the type: a tensor core multiplies exactly where the
// kernel as written rounds each product to the type, and over a 1024-long half reduction that
// rounding alone was 9x the comparison's tolerance, so no tensor core candidate could match.
void FillMadeUpElement(Scalar scalar, std::mt19937_64& rng, char* out);

}  // namespace uopd

#endif  // UOPD_CORE_SEARCH_MADE_UP_INPUTS_H_
