// TinygradAlgebra: the float rewrites tinygrad's codegen applies to every kernel (uop/symbolic.py
// `sym`, run by full_rewrite whatever the opts) that change what a kernel computes on extreme
// inputs, so uopd's answers are tinygrad's (docs/IR.md, "Algebraic rewrites"):
//
//   x * (1/(1+x))          -> 1 - 1/(1+x)          (sigmoid: inf*0 = NaN as written, 1 after)
//   x * ((1/(1+x)) * y)    -> y * (1 - 1/(1+x))
//   x * ((1/(1+x)) + y)    -> (1 - 1/(1+x)) + x*y
//   1/(x*x)                -> (1/x) * (1/x)         (no overflow to inf before the division)
//   1/(x*x*x)              -> (1/x) * (1/x) * (1/x)
//   1/(x*c)                -> (1/x) * (1/c)          c a constant
//   x * (y * c)            -> (x*y) * c              c a constant, when x*y is one of the above
//
// Operands match in either order, as tinygrad's commutative patterns do; `1` is a constant of
// value one. The rewrites that only move rounding (sum(x*c) -> sum(x)*c, reassociating
// constants, x+0.0 -> x) are not applied: results stay within the corpus tolerance without them.
#ifndef UOPD_CORE_CODEGEN_TINYGRAD_ALGEBRA_H_
#define UOPD_CORE_CODEGEN_TINYGRAD_ALGEBRA_H_

#include <memory>

#include "core/ir/kernel_ast.h"

namespace uopd {

// A new AST (own graph, the original's hash: the rewrites are part of the AST's meaning) with
// the rewrites applied until none applies; the same AST when none does.
std::shared_ptr<const KernelAst> ApplyTinygradAlgebra(std::shared_ptr<const KernelAst> ast);

}  // namespace uopd

#endif  // UOPD_CORE_CODEGEN_TINYGRAD_ALGEBRA_H_
