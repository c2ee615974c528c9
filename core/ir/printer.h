// Printing UOps for error messages and debugging, in tinygrad's vocabulary.
#ifndef UOPD_CORE_IR_PRINTER_H_
#define UOPD_CORE_IR_PRINTER_H_

#include <string>

#include "core/ir/uop.h"

namespace uopd {

// One line for one node: "%17 ADD float (%3, %9)" with ids from the owning Graph.
std::string DescribeNode(const UOp& node);

// The whole graph under `root`, one node a line in topological order, tinygrad-style:
//   %2 = UOp(Ops.RANGE, dtypes.index, arg=(0, AxisType.LOOP), src=(%1,))
std::string PrintGraph(const UOp* root);

}  // namespace uopd

#endif  // UOPD_CORE_IR_PRINTER_H_
