// The corpus comparison rule (tests/corpus/README.md, "Comparing results"): floats within
// atol + rtol * |expected| (NaN matches NaN, infinities exactly), integers and bools exact.
#ifndef UOPD_CORE_CORPUS_COMPARE_H_
#define UOPD_CORE_CORPUS_COMPARE_H_

#include <optional>
#include <string>

#include "core/ir/dtype.h"

namespace uopd {

struct Tolerance {
  double rtol = 0;
  double atol = 0;
};

// nullopt when `got` matches `expected` element by element as `scalar`; otherwise a message
// naming the first differing element and both values, and how many elements differ.
std::optional<std::string> CompareBuffers(Scalar scalar, const std::string& got,
                                          const std::string& expected, Tolerance tolerance);

// An element of `bytes` (little-endian, `scalar`) as a double, for messages and comparison.
double ElementAsDouble(Scalar scalar, const char* bytes);

}  // namespace uopd

#endif  // UOPD_CORE_CORPUS_COMPARE_H_
