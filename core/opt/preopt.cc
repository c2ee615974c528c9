#include "core/opt/preopt.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "core/ir/hash.h"
#include "core/ir/symbolic.h"
#include "core/ir/verify.h"
#include "core/opt/scheduler.h"

namespace uopd {
namespace {

bool IsIntConst(const UOp* n) { return n->op() == Op::kConst && n->arg().kind == ArgKind::kI64; }

int CountDivMod(const UOp* root) {
  int n = 0;
  for (const UOp* u : TinygradToposort(root)) n += u->op() == Op::kIdiv || u->op() == Op::kMod;
  return n;
}

Arg RangeArgWith(const UOp* range, int64_t extra) {
  std::vector<int64_t> axis = range->arg().axis;
  axis.push_back(extra);
  return Arg::Range(std::move(axis), range->arg().axis_type);
}

class PreOptPasses {
 public:
  explicit PreOptPasses(SymbolicRewriter& sym) : sym_(sym) {}

  // pm_load_collapse's exact case: REDUCE(ADD, r) of WHERE(idx != r, 0, x[r]) (or WHERE(idx ==
  // r, x[r], 0)), a gather written as a sum over the table, becomes the gated load
  // WHERE(0 <= idx < N, x[idx] + 0, 0), every access of x guarded by the same condition. The
  // `+ 0` keeps the sum's exact result (a selected -0.0 summed with zeros is +0.0).
  const UOp* CollapseGathers(const UOp* sink) {
    return sym_.Rewrite(sink, [&](const UOp* n) { return CollapseGather(n); });
  }

  const UOp* CollapseGather(const UOp* red) {
    if (red->op() != Op::kReduce || red->arg().reduce_op != Op::kAdd || red->num_src() != 2) {
      return nullptr;
    }
    const UOp* r = red->src(1);
    const UOp* w = red->src(0);
    if (r->op() != Op::kRange || w->op() != Op::kWhere || !IsIntConst(r->src(0))) return nullptr;
    const UOp* cond = w->src(0);
    const bool ne = cond->op() == Op::kCmpne;
    if (!ne && cond->op() != Op::kCmpeq) return nullptr;
    const UOp* zero = ne ? w->src(1) : w->src(2);
    const UOp* expr = ne ? w->src(2) : w->src(1);
    if (zero->op() != Op::kConst || zero->dtype() != red->dtype() ||
        expr->dtype() != red->dtype()) {
      return nullptr;
    }
    const bool float_zero = IsFloat(zero->dtype().scalar);
    if ((float_zero && (zero->arg().f != 0.0 || std::signbit(zero->arg().f))) ||
        (!float_zero && zero->arg().i != 0)) {
      return nullptr;
    }
    // One side is the range (maybe cast), the other does not depend on it.
    auto is_r = [&](const UOp* x) {
      return x == r || (x->op() == Op::kCast && x->src(0) == r && IsInt(x->dtype().scalar));
    };
    const UOp* idx = nullptr;
    if (is_r(cond->src(0))) idx = cond->src(1);
    if (is_r(cond->src(1))) idx = cond->src(0);
    if (idx == nullptr || DependsOn(idx, r) || !IsInt(idx->dtype().scalar)) return nullptr;
    for (const UOp* n : Toposort(expr)) {
      const bool other_range = n->op() == Op::kRange && n != r && DependsOn(n, r);
      if (n->op() == Op::kReduce || n->op() == Op::kStore || other_range) return nullptr;
    }
    Graph& g = sym_.graph();
    const DType boolean = DType::Of(Scalar::kBool);
    const UOp* at = sym_.Cast(idx, r->dtype());
    const UOp* in_range = g.Make(
        Op::kAnd, boolean,
        {g.Make(Op::kCmpne, boolean,
                {g.Make(Op::kCmplt, boolean, {at, sym_.IndexConst(0)}), sym_.ConstLike(cond, 1)}),
         g.Make(Op::kCmplt, boolean, {at, r->src(0)})});
    const UOp* gathered = sym_.Substitute(expr, {{r, at}});
    // Every access the range reached is now at a loaded index: guarded by the range check.
    SymbolicRewriter::Map guards;
    for (const UOp* n : Toposort(gathered)) {
      if (n->op() != Op::kIndex || n->num_src() < 2 || !DependsOn(n->src(1), at)) continue;
      const UOp* index = n->src(1);
      const UOp* valid = in_range;
      if (index->op() == Op::kWhere && index->src(2)->IsInvalid()) {
        valid = g.Make(Op::kAnd, boolean, {in_range, index->src(0)});
        index = index->src(1);
      }
      std::vector<const UOp*> src(n->src().begin(), n->src().end());
      src[1] = g.Make(Op::kWhere, index->dtype(),
                      {valid, index, g.Make(Op::kConst, index->dtype(), {}, Arg::Invalid())});
      guards[n] = g.Make(n->op(), n->dtype(), std::move(src), n->arg());
    }
    gathered = sym_.Substitute(gathered, guards);
    if (float_zero) gathered = g.Make(Op::kAdd, gathered->dtype(), {gathered, zero});
    return g.Make(Op::kWhere, red->dtype(), {in_range, gathered, zero});
  }

  // pm_split_ranges + pm_flatten_range (codegen/simplify.py): ranges used as `r % c` are marked
  // while the graph is walked; at the SINK each becomes r_hi*c + r_lo and the graph is simplified.
  const UOp* SplitRanges(const UOp* sink) {
    std::vector<std::pair<const UOp*, const UOp*>> marked;
    return sym_.Rewrite(sink, [&](const UOp* n) -> const UOp* {
      if (n->op() == Op::kMod && n->src(0)->op() == Op::kRange && IsIntConst(n->src(1))) {
        const UOp *r = n->src(0), *c = n->src(1);
        const bool seen =
            std::any_of(marked.begin(), marked.end(), [&](const auto& m) { return m.first == r; });
        if (!seen && IsIntConst(r->src(0)) && c->arg().i > 0 &&
            r->src(0)->arg().i % c->arg().i == 0) {
          marked.push_back({r, c});
        }
        return nullptr;
      }
      if (n->op() == Op::kSink) {
        if (marked.empty()) return nullptr;
        SymbolicRewriter::Map subs;
        Graph& g = sym_.graph();
        for (const auto& [r, c] : marked) {
          const UOp* hi = g.Make(Op::kRange, r->dtype(), {sym_.Alu(Op::kIdiv, r->src(0), c)},
                                 RangeArgWith(r, 0));
          const UOp* lo = g.Make(Op::kRange, r->dtype(), {c}, RangeArgWith(r, 1));
          subs[r] = sym_.Add(sym_.Mul(hi, c), lo);
        }
        marked.clear();
        return sym_.Simplify(sym_.Substitute(n, subs));
      }
      return sym_.FlattenRangeRule(n);
    });
  }

  // pm_simplify_ranges: merges ranges closed by each END and REDUCE, children first.
  const UOp* MergeRanges(const UOp* sink) {
    return sym_.Rewrite(sink, [&](const UOp* n) -> const UOp* {
      if (n->op() != Op::kEnd && n->op() != Op::kReduce) return nullptr;
      return MergeAdjacent(n);
    });
  }

  // simplify_merge_adjacent: END merges neighbours in its range list, REDUCE any ordered pair.
  // Both ranges must have one type and sit in the same reductions; the merge is kept when the
  // simplified graph has no more IDIV/MOD than before (the ranges' index arithmetic recombined).
  const UOp* MergeAdjacent(const UOp* u) {
    std::vector<const absl::flat_hash_set<const UOp*>*> reduce_ranges;
    for (const UOp* x : TinygradToposort(u)) {
      if (x->op() == Op::kReduce) reduce_ranges.push_back(&sym_.Ranges(x));
    }
    const std::vector<const UOp*> ended(u->src().begin() + 1, u->src().end());
    std::vector<std::pair<const UOp*, const UOp*>> pairs;
    if (u->op() == Op::kEnd) {
      for (size_t i = 0; i + 1 < ended.size(); ++i) pairs.push_back({ended[i], ended[i + 1]});
    } else {
      for (size_t i = 0; i < ended.size(); ++i) {
        for (size_t j = 0; j < ended.size(); ++j) {
          if (i != j) pairs.push_back({ended[i], ended[j]});
        }
      }
    }
    for (const auto& [r0, r1] : pairs) {
      if (r0->op() != Op::kRange || r1->op() != Op::kRange) continue;
      if (r0->arg().axis_type != r1->arg().axis_type) continue;
      const bool same_reduces =
          std::all_of(reduce_ranges.begin(), reduce_ranges.end(),
                      [&](const auto* rngs) { return rngs->contains(r0) == rngs->contains(r1); });
      if (!same_reduces) continue;
      const UOp *s0 = r0->src(0), *s1 = r1->src(0);
      const UOp* merged = sym_.graph().Make(Op::kRange, r0->dtype(), {sym_.Mul(s0, s1)}, r0->arg());
      const SymbolicRewriter::Map ctx = {{r0, sym_.Alu(Op::kIdiv, merged, s1)},
                                         {r1, sym_.Alu(Op::kMod, merged, s1)}};
      const UOp* nidx = sym_.Rewrite(u, [&](const UOp* n) -> const UOp* {
        if (auto it = ctx.find(n); it != ctx.end()) return it->second;
        if (const UOp* r = sym_.SymbolicRule(n)) return r;
        return sym_.FlattenRangeRule(n);
      });
      if (!sym_.status().ok()) return u;
      if (CountDivMod(nidx) <= CountDivMod(u)) u = nidx;
    }
    return u;
  }

  // pm_split_store (CPU only): END(STORE, r) with r compared `r < c` cut at every such c.
  const UOp* CutStoreRanges(const UOp* sink) {
    return sym_.Rewrite(sink, [&](const UOp* n) -> const UOp* {
      if (const UOp* r = sym_.FlattenRangeRule(n)) return r;
      if (n->op() != Op::kEnd || n->num_src() != 2 || n->src(0)->op() != Op::kStore) return nullptr;
      return CutStoreRange(n->src(0), n->src(1));
    });
  }

  const UOp* CutStoreRange(const UOp* store, const UOp* r) {
    if (r->op() != Op::kRange || !IsIntConst(r->src(0))) return nullptr;
    const int64_t size = r->src(0)->arg().i;
    // Consumers of the range in toposort order. Cuts outside (0, size) would add or drop
    // iterations; tinygrad's sym has already folded those compares to constants.
    std::vector<int64_t> cuts = {0, size};
    bool any = false;
    for (const UOp* c : TinygradToposort(store)) {
      if (c->op() != Op::kCmplt || c->src(0) != r || !IsIntConst(c->src(1))) continue;
      any = true;
      const int64_t v = c->src(1)->arg().i;
      if (v > 0 && v < size) cuts.push_back(v);
    }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    if (!any || cuts.size() < 3) return nullptr;
    Graph& g = sym_.graph();
    std::vector<const UOp*> ends;
    for (size_t i = 0; i + 1 < cuts.size(); ++i) {
      const UOp* piece = g.Make(Op::kRange, r->dtype(), {sym_.IndexConst(cuts[i + 1] - cuts[i])},
                                RangeArgWith(r, static_cast<int64_t>(i)));
      const UOp* body = sym_.Substitute(store, {{r, sym_.Add(piece, sym_.IndexConst(cuts[i]))}});
      ends.push_back(g.Make(Op::kEnd, DType::Of(Scalar::kVoid), {body, piece}));
    }
    return g.Make(Op::kGroup, DType::Of(Scalar::kVoid), std::move(ends));
  }

 private:
  SymbolicRewriter& sym_;
};

// tinygrad keeps an END whose ranges all folded away (size 1); IR v1 requires a range, and a
// loop of one iteration is its body.
const UOp* DropEmptyEnds(SymbolicRewriter& sym, const UOp* root) {
  return sym.Rewrite(root, [](const UOp* n) -> const UOp* {
    return n->op() == Op::kEnd && n->num_src() == 1 ? n->src(0) : nullptr;
  });
}

}  // namespace

std::shared_ptr<const KernelAst> RunPreOptPasses(std::shared_ptr<const KernelAst> ast,
                                                 const OptTarget& target) {
  // The valid simplification names its stand-in variables "fake<i>" as tinygrad does; a kernel
  // variable of that name could be confused with one, so such a kernel is left alone.
  for (const UOp* n : Toposort(ast->root)) {
    int64_t unused;
    if (n->op() == Op::kDefineVar && absl::StartsWith(n->arg().str, "fake") &&
        absl::SimpleAtoi(n->arg().str.substr(4), &unused)) {
      return ast;
    }
  }
  Graph work;
  const UOp* root = CopyInto(work, ast->root);
  SymbolicRewriter sym(work);
  PreOptPasses passes(sym);
  root = passes.CollapseGathers(root);
  root = passes.SplitRanges(root);
  root = sym.Sym(root);
  root = passes.MergeRanges(root);
  if (target.device == "CPU") root = passes.CutStoreRanges(root);
  root = DropEmptyEnds(sym, root);
  if (!sym.status().ok()) return ast;

  auto out = std::make_shared<KernelAst>();
  out->root = CopyInto(out->graph, root);
  // Whatever the passes made must still be an IR v1 kernel the backends accept.
  for (const UOp* n : Toposort(out->root)) {
    if (!VerifyNode(*n, IrLimits{}).ok()) return ast;
  }
  out->hash = AstHashHex(out->root);
  if (out->hash == ast->hash) return ast;
  return out;
}

}  // namespace uopd
