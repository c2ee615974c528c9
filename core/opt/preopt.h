// RunPreOptPasses: what tinygrad 0.12 does to a scheduled kernel AST before its optimizer
// (tinygrad/codegen/__init__.py full_rewrite_to_sink, docs/OPTIMIZER.md section 1):
//
//   1. load collapse, its exact case (pm_load_collapse): a REDUCE(ADD, r) whose value is
//      WHERE(idx != r, 0, x[r]), a gather written as a sum over the table (tinygrad's
//      nn.Embedding), becomes WHERE(0 <= idx < N, x[idx] + 0, 0) with the accesses of x gated by
//      the same check: one row read instead of the table. tinygrad collapses more (sums of
//      constants as products, sums split), which rounds floats differently; those are left.
//   2. split ranges: a constant RANGE used as `r % c` (c divides its size) becomes two ranges,
//      r_hi*c + r_lo, args (id..., 0, type) and (id..., 1, type); the graph is simplified.
//   3. sym: tinygrad's symbolic simplification (core/ir/symbolic.h), then every END/REDUCE
//      lists the plain RANGEs its range expressions hold.
//   4. merge ranges: two ranges of one type closed together (END: adjacent ones; REDUCE: any
//      pair in the same reductions) become one range of the product size when the merged graph
//      has no more IDIV/MOD nodes than before (a contiguous (4,6,5) elementwise kernel has one
//      range of 120).
//   5. cut store ranges (CPU targets only): a lone store range compared `r < c` with constants is
//      cut at those constants into several ranges, one END each, grouped.
//
// Opt axis numbers (tinygrad's Opt.axis, KernelInfo.opts_to_apply) refer to the graph these
// passes produce, which is why the optimizer starts from it.
//
// The passes never change what the kernel computes (see symbolic.h for the tinygrad rules left
// out for that reason); a merge of two REDUCE ranges may change the order a float reduction
// adds in, which IR v1 leaves open. When the passes cannot finish (a rule cycle, a result IR v1
// cannot express) the AST is returned as it was.
#ifndef UOPD_CORE_OPT_PREOPT_H_
#define UOPD_CORE_OPT_PREOPT_H_

#include <memory>

#include "core/ir/kernel_ast.h"
#include "core/opt/opt_target.h"

namespace uopd {

// The AST after tinygrad's pre-optimization passes for `target` (the same object when they
// change nothing).
std::shared_ptr<const KernelAst> RunPreOptPasses(std::shared_ptr<const KernelAst> ast,
                                                 const OptTarget& target);

}  // namespace uopd

#endif  // UOPD_CORE_OPT_PREOPT_H_
