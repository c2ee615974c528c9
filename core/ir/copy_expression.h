// Copying an expression into another Graph (to build launch-size expressions that outlive the
// kernel's own graph, or combine several).
#ifndef UOPD_CORE_IR_COPY_EXPRESSION_H_
#define UOPD_CORE_IR_COPY_EXPRESSION_H_

#include "core/ir/graph.h"

namespace uopd {

// The node in `dst` equal to `expr` (and everything under it). Iterative.
const UOp* CopyExpression(Graph& dst, const UOp* expr);

}  // namespace uopd

#endif  // UOPD_CORE_IR_COPY_EXPRESSION_H_
