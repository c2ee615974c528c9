// SymbolicRewriter: tinygrad 0.12's graph rewrite engine and its symbolic simplifier
// (tinygrad/uop/ops.py graph_rewrite, uop/symbolic.py `symbolic` and `sym`, uop/divandmod.py),
// ported rule by rule, in tinygrad's rule order, for the pre-optimization passes
// (core/opt/preopt.h). Opt axis numbers refer to the graph those passes produce, so uopd has to
// produce the same graph: same rewrites, same operand order, same constants.
//
// Only rules that keep what a kernel computes are ported. tinygrad also rewrites float arithmetic
// (x+0.0 -> x, (x+1.0)+2.0 -> x+3.0, sum(x*c) -> sum(x)*c, x*0.0 -> 0, POW into EXP2/LOG2, ...),
// which changes rounding, signed zeros or NaNs; those rules are left out, as are the ones for
// what IR v1 has no use for (vectors, images, transcendental constant folding). Where tinygrad
// relies on Python's arithmetic or on an unsound bound, the port follows IR v1's semantics
// instead: bounds of integer nodes that may wrap are the dtype's whole range; shifts by the
// operand's width or more, IDIV/MOD by a divisor that may be 0 (which give 0), casts through a
// float of values the target cannot hold, narrow-float constants and DIV/MOD folding that
// assumes a non-negative numerator (tinygrad's CORRECT_DIVMOD_FOLDING=0) are not folded.
//
// Checked against tinygrad itself (its passes run on the same graphs): the index arithmetic of
// thousands of scheduled kernels comes out node for node the same; the differences left are
// float rewrites the port leaves out.
#ifndef UOPD_CORE_IR_SYMBOLIC_H_
#define UOPD_CORE_IR_SYMBOLIC_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/status.h"
#include "core/ir/graph.h"
#include "core/ir/value_range.h"

namespace uopd {

// tinygrad's vmin/vmax of a node: integers (bool as 0/1) or, for float nodes, doubles.
struct SymBounds {
  bool is_float = false;
  Int128 lo = 0, hi = 0;    // integer-like nodes
  double flo = 0, fhi = 0;  // float nodes
};

// The nodes under `root` in tinygrad's toposort order: depth first, sources in order, each node
// after its sources (the order pm_flatten_range lists ranges in).
std::vector<const UOp*> TinygradToposort(const UOp* root);

class SymbolicRewriter {
 public:
  // A rule: the replacement of a node, or nullptr when it does not apply.
  using Rule = std::function<const UOp*(const UOp*)>;
  using Map = absl::flat_hash_map<const UOp*, const UOp*>;

  // `graph` holds the kernel to rewrite: its size sets how much work a rewrite may take.
  explicit SymbolicRewriter(Graph& graph);

  // tinygrad's graph_rewrite(root, pm) (top-down): every node is rewritten after its sources,
  // and whatever a rule returns is rewritten again until no rule applies. `memo` holds the
  // results (pass a persistent one only for rules that depend on nothing but the node).
  const UOp* Rewrite(const UOp* root, const Rule& rule, Map& memo);
  const UOp* Rewrite(const UOp* root, const Rule& rule) {
    Map memo;
    return Rewrite(root, rule, memo);
  }
  // graph_rewrite(root, symbolic): UOp.simplify().
  const UOp* Simplify(const UOp* root);
  // graph_rewrite(root, sym + pm_flatten_range): the "initial symbolic" pass.
  const UOp* Sym(const UOp* root);
  // UOp.substitute: each key of `map` replaced by its value, everything above rebuilt.
  const UOp* Substitute(const UOp* root, const Map& map);

  // The rule sets, for passes that combine them with rules of their own.
  const UOp* SymbolicRule(const UOp* n);
  const UOp* SymRule(const UOp* n);
  // pm_flatten_range: END/REDUCE/STORE list the RANGEs found in their range expressions.
  const UOp* FlattenRangeRule(const UOp* n);

  // Not OK once a rewrite ran past its limits (a rule cycle): results are then unusable.
  absl::Status status() const { return status_; }

  SymBounds Bounds(const UOp* n);
  Int128 VMin(const UOp* n) { return Bounds(n).lo; }
  Int128 VMax(const UOp* n) { return Bounds(n).hi; }

  // tinygrad's UOp.ranges: the RANGEs a node sits inside (used, not closed below it).
  const absl::flat_hash_set<const UOp*>& Ranges(const UOp* n);

  // Node builders with tinygrad's operand order and dtype rules (UOp.alu: the last source's
  // dtype; comparisons give bool).
  Graph& graph() { return g_; }
  const UOp* Alu(Op op, const UOp* a, const UOp* b);
  const UOp* ConstLike(const UOp* like, Int128 v);
  const UOp* IndexConst(Int128 v);
  const UOp* Add(const UOp* a, const UOp* b) { return Alu(Op::kAdd, a, b); }
  const UOp* Mul(const UOp* a, const UOp* b) { return Alu(Op::kMul, a, b); }
  const UOp* AddC(const UOp* a, Int128 c) { return Add(a, ConstLike(a, c)); }
  const UOp* MulC(const UOp* a, Int128 c) { return Mul(a, ConstLike(a, c)); }
  const UOp* CAdd(Int128 c, const UOp* a) { return Add(ConstLike(a, c), a); }
  const UOp* CMul(Int128 c, const UOp* a) { return Mul(ConstLike(a, c), a); }
  const UOp* Neg(const UOp* a);
  const UOp* Sub(const UOp* a, const UOp* b) { return Add(a, Neg(b)); }
  const UOp* Where(const UOp* c, const UOp* t, const UOp* f);
  const UOp* Cast(const UOp* x, const DType& dtype);
  // UOp.sum / UOp.prod: a left fold starting at the first term.
  const UOp* Sum(const std::vector<const UOp*>& terms);
  const UOp* Prod(const std::vector<const UOp*>& terms);
  // Python's sum()/helpers.prod(): a left fold starting at the int 0 (1).
  const UOp* PySum(const std::vector<const UOp*>& terms, const UOp* like);
  const UOp* PyProd(const std::vector<const UOp*>& terms, const UOp* like);

  // UOp.split_uop, const_factor, divides, divide_exact, pop_const (tinygrad/uop/ops.py).
  // ConstFactor fails for float constants and on sums nested past a depth limit.
  static void SplitUOp(const UOp* n, Op sep, std::vector<const UOp*>& out);
  static bool ConstFactor(const UOp* n, Int128& out, int depth = 0);
  const UOp* Divides(const UOp* n, Int128 v, int depth = 0);
  const UOp* DivideExact(const UOp* n, const UOp* v, int depth = 0);

 private:
  // fold_divmod_general's view of x // y or x % y: x as its terms and constant.
  struct DivModTerms {
    bool is_mod;
    const UOp* x;
    const UOp* y;
    const UOp* x_peeled;  // x without its constant term
    SymBounds xb, yb;
    Int128 konst;  // x's constant term
    std::vector<const UOp*> uops_no_const;
  };
  std::optional<const UOp*> FoldDivModByConst(const UOp* d, const DivModTerms& parts);
  const UOp* FoldDivModGeneral(const UOp* d, const DivModTerms& parts);
  // SymbolicRule's rules, one group of tinygrad's `symbolic` each, in its order
  // (symbolic_rules.cc).
  const UOp* RulePropagateInvalid(const UOp* n);
  const UOp* RuleSelfFolding(const UOp* n);
  const UOp* RuleDivModRecombine(const UOp* n);
  const UOp* RuleBoolIdentities(const UOp* n);
  const UOp* RuleZeroFolding(const UOp* n);
  const UOp* RuleConstantFolding(const UOp* n);
  const UOp* RuleCastBitcast(const UOp* n);
  const UOp* RuleThreefry(const UOp* n);
  const UOp* RuleSimpleWhereFolding(const UOp* n);
  const UOp* RuleCommutative(const UOp* n);
  const UOp* RuleBooleanAlgebra(const UOp* n);
  const UOp* RuleCombineTerms(const UOp* n);
  const UOp* RuleWhereFolding(const UOp* n);
  const UOp* RuleTwoStageAluFolding(const UOp* n);
  const UOp* RuleLt(const UOp* n);
  const UOp* RuleConstsLast(const UOp* n);
  const UOp* RuleGenericLtFolding(const UOp* n);
  const UOp* RuleCastFolding(const UOp* n);
  const UOp* RuleDivModFast(const UOp* n);
  const UOp* RuleDivModSlow(const UOp* n);
  const UOp* FoldDivMod(const UOp* d);
  const UOp* GcdOf(const std::vector<const UOp*>& uops);
  const UOp* LtFolding(const UOp* x, Int128 c);
  const UOp* CanonicalizeSimplex(const UOp* x);
  const UOp* UOpGivenValid(const UOp* valid, const UOp* uop, bool try_simplex);
  const UOp* SimplifyValid(const UOp* valid);
  const UOp* ReduceMulChain(const UOp* r);
  const UOp* FoldConstants(const UOp* n);
  SymBounds ComputeBounds(const UOp* n);
  bool Step();

  Graph& g_;
  absl::Status status_;
  int64_t steps_ = 0;
  const int64_t max_steps_, max_nodes_;
  Map symbolic_memo_, sym_memo_, divmod_memo_;
  absl::flat_hash_map<const UOp*, SymBounds> bounds_;
  // Node-based: callers keep references to the sets while more are added.
  absl::node_hash_map<const UOp*, absl::flat_hash_set<const UOp*>> ranges_;
};

}  // namespace uopd

#endif  // UOPD_CORE_IR_SYMBOLIC_H_
