#include "core/codegen/tinygrad_algebra.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace uopd {
namespace {

bool IsConstOne(const UOp* n) {
  if (n->op() != Op::kConst) return false;
  const Arg& a = n->arg();
  return (a.kind == ArgKind::kF64 && a.f == 1.0) ||
         ((a.kind == ArgKind::kI64 || a.kind == ArgKind::kU64) && a.i == 1);
}

class Rewriter {
 public:
  explicit Rewriter(Graph& graph) : g_(graph) {}

  // The node rewritten until no rule applies (its sources are already rewritten).
  const UOp* Fix(const UOp* n) {
    for (int i = 0; i < 64; ++i) {  // each rule shrinks the pattern it matched: bounded
      const UOp* next = Rule(n);
      if (next == nullptr) return n;
      n = next;
    }
    return n;
  }

 private:
  const UOp* Make(Op op, DType dtype, std::vector<const UOp*> src) {
    // Sources of a new node are rewritten too: 1 - d builds a MUL and an ADD.
    return Fix(g_.Make(op, dtype, std::move(src)));
  }
  const UOp* Mul(const UOp* a, const UOp* b) { return Make(Op::kMul, a->dtype(), {a, b}); }
  const UOp* Add(const UOp* a, const UOp* b) { return Make(Op::kAdd, a->dtype(), {a, b}); }
  const UOp* Recip(const UOp* a) { return Make(Op::kReciprocal, a->dtype(), {a}); }
  const UOp* Const(DType dtype, double v) { return g_.Make(Op::kConst, dtype, {}, Arg::F64(v)); }
  // 1 - d as tinygrad spells it: 1 + d*(-1).
  const UOp* OneMinus(const UOp* d) {
    return Add(Const(d->dtype(), 1.0), Mul(d, Const(d->dtype(), -1.0)));
  }

  // d = 1/(1+x) (either order in the ADD)?
  static bool IsRecipOnePlus(const UOp* d, const UOp* x) {
    if (d->op() != Op::kReciprocal) return false;
    const UOp* s = d->src()[0];
    if (s->op() != Op::kAdd) return false;
    return (IsConstOne(s->src()[0]) && s->src()[1] == x) ||
           (IsConstOne(s->src()[1]) && s->src()[0] == x);
  }

  // x * (y * c) -> (x*y) * c, c a constant, when x*y is itself rewritten. tinygrad moves
  // constants to the end of every product ((x*c)*y -> (x*y)*c), which is how the gradient of
  // exp(x)/(1+exp(x)), x * ((1/(1+x) * (1-1/(1+x))) * -1), reaches the rules above; uopd moves
  // a constant only where that exposes one of them (elsewhere the move only shifts rounding).
  const UOp* MoveConstantOut(const UOp* x, const UOp* product) {
    if (product->op() != Op::kMul || x->op() == Op::kConst) return nullptr;
    for (int j = 0; j < 2; ++j) {
      const UOp* c = product->src()[j];
      const UOp* y = product->src()[1 - j];
      if (c->op() != Op::kConst || y->op() == Op::kConst) continue;
      const UOp* xy = g_.Make(Op::kMul, x->dtype(), {x, y});
      if (const UOp* rewritten = Rule(xy)) return Mul(Fix(rewritten), c);
    }
    return nullptr;
  }

  const UOp* Rule(const UOp* n) {
    if (!IsFloat(n->dtype().scalar) || n->dtype().count != 1) return nullptr;
    if (n->op() == Op::kMul) {
      for (int k = 0; k < 2; ++k) {
        const UOp* x = n->src()[k];
        const UOp* other = n->src()[1 - k];
        if (IsRecipOnePlus(other, x)) return OneMinus(other);
        if (other->op() == Op::kMul || other->op() == Op::kAdd) {
          for (int j = 0; j < 2; ++j) {
            const UOp* d = other->src()[j];
            const UOp* y = other->src()[1 - j];
            if (!IsRecipOnePlus(d, x)) continue;
            if (other->op() == Op::kMul) return Mul(y, OneMinus(d));
            return Add(OneMinus(d), Mul(x, y));
          }
        }
        if (const UOp* moved = MoveConstantOut(x, other)) return moved;
      }
      return nullptr;
    }
    if (n->op() == Op::kReciprocal && n->src()[0]->op() == Op::kMul) {
      const UOp* m = n->src()[0];
      const UOp* a = m->src()[0];
      const UOp* b = m->src()[1];
      if (a == b) {
        const UOp* r = Recip(a);
        return Mul(r, r);
      }
      for (int k = 0; k < 2; ++k) {
        const UOp* xx = m->src()[k];
        const UOp* x = m->src()[1 - k];
        if (xx->op() == Op::kMul && xx->src()[0] == x && xx->src()[1] == x) {
          const UOp* r = Recip(x);
          return Mul(Mul(r, r), r);
        }
      }
      for (int k = 0; k < 2; ++k) {
        if (m->src()[1 - k]->op() == Op::kConst) {
          return Mul(Recip(m->src()[k]), Recip(m->src()[1 - k]));
        }
      }
    }
    return nullptr;
  }

  Graph& g_;
};

bool MayApply(const UOp* n) { return n->op() == Op::kReciprocal; }

}  // namespace

std::shared_ptr<const KernelAst> ApplyTinygradAlgebra(std::shared_ptr<const KernelAst> ast) {
  std::vector<const UOp*> order = Toposort(ast->root);
  // Every rewrite involves a RECIPROCAL: most kernels have none and are returned as they are.
  if (std::none_of(order.begin(), order.end(), MayApply)) return ast;
  auto out = std::make_shared<KernelAst>();
  Rewriter rewriter(out->graph);
  absl::flat_hash_map<const UOp*, const UOp*> rebuilt;
  bool changed = false;
  for (const UOp* node : order) {
    std::vector<const UOp*> src;
    for (const UOp* s : node->src()) src.push_back(rebuilt.at(s));
    const UOp* copy = out->graph.Make(node->op(), node->dtype(), std::move(src), node->arg());
    const UOp* fixed = rewriter.Fix(copy);
    changed = changed || fixed != copy;
    rebuilt[node] = fixed;
  }
  if (!changed) return ast;
  out->root = rebuilt.at(ast->root);
  out->hash = ast->hash;
  return out;
}

}  // namespace uopd
