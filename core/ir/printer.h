// Printing UOps for error messages and debugging, in tinygrad's vocabulary.
#ifndef UOPD_CORE_IR_PRINTER_H_
#define UOPD_CORE_IR_PRINTER_H_

#include <algorithm>
#include <cstddef>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/ir/uop.h"

namespace uopd {

// How a message names a node's sources: the first kSourcesNamed, as `format` spells each, then
// how many there are in all (a node may list thousands).
inline constexpr size_t kSourcesNamed = 8;
template <typename Sources, typename Format>
std::string NameSources(const Sources& sources, Format format) {
  const size_t all = static_cast<size_t>(sources.size());
  const size_t named = std::min(all, kSourcesNamed);
  std::string out = absl::StrJoin(sources.begin(), sources.begin() + named, ", ", format);
  if (named < all) absl::StrAppend(&out, ", ... ", all, " in all");
  return out;
}

// One line for one node: "%17 ADD float (%3, %9)" with ids from the owning Graph.
std::string DescribeNode(const UOp& node);

// The whole graph under `root`, one node a line in topological order, tinygrad-style:
//   %2 = UOp(Ops.RANGE, dtypes.index, arg=(0, AxisType.LOOP), src=(%1,))
std::string PrintGraph(const UOp* root);

}  // namespace uopd

#endif  // UOPD_CORE_IR_PRINTER_H_
