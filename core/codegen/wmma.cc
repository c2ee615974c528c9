#include "core/codegen/wmma.h"

#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/ir/copy_expression.h"
#include "core/ir/printer.h"
#include "core/ir/symbolic.h"
#include "core/util/status_macros.h"

namespace uopd {
namespace {

// Index arithmetic on UOps, for writing the fragment layouts as tinygrad's emulator does.
class Ix {
 public:
  Ix(Graph& g, const UOp* u) : g_(&g), u_(u) {}
  const UOp* get() const { return u_; }
  Ix operator+(const Ix& o) const { return Op2(Op::kAdd, o.u_); }
  Ix operator+(int64_t c) const { return Op2(Op::kAdd, Const(c)); }
  Ix operator*(int64_t c) const { return Op2(Op::kMul, Const(c)); }
  Ix operator/(int64_t c) const { return Op2(Op::kIdiv, Const(c)); }
  Ix operator%(int64_t c) const { return Op2(Op::kMod, Const(c)); }

 private:
  const UOp* Const(int64_t c) const { return g_->ConstInt(Scalar::kIndex, c); }
  Ix Op2(Op op, const UOp* o) const {
    return Ix(*g_, g_->Make(op, DType::Of(Scalar::kIndex), {u_, o}));
  }
  Graph* g_;
  const UOp* u_;
};

// Which thread holds an element of a fragment, and where in its fragment.
struct Holder {
  Ix element;
  Ix lane;
};

// The layouts of one shape: C/D's element `e` of thread `lane` is D[row][col]; A[row][k] and
// B[k][col] are held as `a` and `b` say.
struct FragmentLayout {
  std::function<std::pair<Ix, Ix>(const Ix& lane, int e)> col_row;
  std::function<Holder(int k, const Ix& row)> a;
  std::function<Holder(const Ix& col, int k)> b;
};

// mma.sync.m16n8k*: C/D (4 elements on 32 threads) is shared by every K.
std::optional<FragmentLayout> LayoutOf(const WmmaShape& s, Scalar in, Graph& g) {
  if (s.n != 8 || s.m != 16 || s.threads != 32) return std::nullopt;
  auto c = [&g](int64_t v) { return Ix(g, g.ConstInt(Scalar::kIndex, v)); };
  FragmentLayout l;
  l.col_row = [](const Ix& lane, int e) {
    return std::pair<Ix, Ix>{lane % 4 * 2 + (e % 2), lane / 4 + (e / 2) * 8};
  };
  if (s.k == 16) {
    l.a = [](int k, const Ix& row) {
      return Holder{row / 8 * 2 + (k % 2 + (k / 8) * 4), row % 8 * 4 + ((k / 2) % 4)};
    };
    l.b = [c](const Ix& col, int k) {
      return Holder{c(k % 2 + (k / 8) * 2), col * 4 + ((k / 2) % 4)};
    };
  } else if (s.k == 32) {
    l.a = [](int k, const Ix& row) {
      return Holder{row / 8 * 4 + (k % 4 + (k / 16) * 8), row % 8 * 4 + ((k / 4) % 4)};
    };
    l.b = [c](const Ix& col, int k) {
      return Holder{c(k % 4 + (k / 16) * 4), col * 4 + ((k / 4) % 4)};
    };
  } else if (s.k == 8 && in != Scalar::kFloat32) {
    l.a = [](int k, const Ix& row) { return Holder{row / 8 * 2 + (k % 2), row % 8 * 4 + (k / 2)}; };
    l.b = [c](const Ix& col, int k) { return Holder{c(k % 2), col * 4 + (k / 2)}; };
  } else if (s.k == 8) {  // tf32
    l.a = [](int k, const Ix& row) { return Holder{row / 8 + (k / 4) * 2, row % 8 * 4 + (k % 4)}; };
    l.b = [c](const Ix& col, int k) { return Holder{c(k / 4), col * 4 + (k % 4)}; };
  } else {
    return std::nullopt;
  }
  return l;
}

class WmmaWriter {
 public:
  explicit WmmaWriter(Graph& g) : g_(g), sym_(g) {}

  absl::StatusOr<const UOp*> Run(const UOp* root) {
    for (const UOp* n : Toposort(root)) {
      if (n->op() == Op::kRange && n->arg().axis_type == AxisType::kWarp) warp_ = n;
    }
    absl::flat_hash_map<const UOp*, const UOp*> done;
    for (const UOp* n : Toposort(root)) {
      if (n->op() == Op::kGep && n->src(0)->op() == Op::kWmma) {
        auto element = Element(n->src(0), static_cast<int>(n->arg().i));
        if (!element.ok()) return element.status();
        done[n] = *element;
        continue;
      }
      std::vector<const UOp*> src;
      bool changed = false;
      for (const UOp* s : n->src()) {
        if (s->op() == Op::kWmma) {
          return absl::InvalidArgumentError(
              absl::StrCat(DescribeNode(*s), " is used other than through a GEP"));
        }
        src.push_back(done.at(s));
        changed |= src.back() != s;
      }
      done[n] = changed ? g_.Make(n->op(), n->dtype(), std::move(src), n->arg()) : n;
    }
    return done.at(root);
  }

 private:
  // This thread's element `e` of D.
  absl::StatusOr<const UOp*> Element(const UOp* wmma, int e) {
    UOPD_ASSIGN_OR_RETURN(WmmaShape shape, WmmaShapeOf(*wmma));
    const UOp* a = wmma->src(0);
    const UOp* b = wmma->src(1);
    const UOp* c = wmma->src(2);
    const Scalar in = a->dtype().scalar;
    const DType out = DType::Of(wmma->dtype().scalar);
    std::optional<FragmentLayout> layout = LayoutOf(shape, in, g_);
    if (!layout.has_value()) {
      return absl::UnimplementedError(
          absl::StrCat(DescribeNode(*wmma), ": no fragment layout is known for this shape"));
    }
    if (warp_ == nullptr || a->op() != Op::kVectorize || b->op() != Op::kVectorize ||
        static_cast<int>(a->num_src()) != shape.elements[0] ||
        static_cast<int>(b->num_src()) != shape.elements[1]) {
      return absl::InvalidArgumentError(absl::StrCat(
          DescribeNode(*wmma), ": needs a warp range and its operands' fragments as vectors"));
    }
    const UOp* acc;
    if (c->op() == Op::kVectorize) {
      acc = c->src(e);
    } else if (c->op() == Op::kConst) {
      acc = g_.Make(Op::kConst, out, {}, c->arg());
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(DescribeNode(*wmma), ": its accumulator is not a vector"));
    }
    const Ix lane(g_, warp_);
    const auto [col, row] = layout->col_row(lane, e);
    for (int k = 0; k < shape.k; ++k) {
      UOPD_ASSIGN_OR_RETURN(const UOp* x, Held(a, layout->a(k, row)));
      UOPD_ASSIGN_OR_RETURN(const UOp* y, Held(b, layout->b(col, k)));
      const UOp* product = g_.Make(Op::kMul, out, {Widen(x, out), Widen(y, out)});
      acc = g_.Make(Op::kAdd, out, {acc, product});
    }
    return acc;
  }

  const UOp* Widen(const UOp* x, const DType& out) {
    return x->dtype() == out ? x : g_.Make(Op::kCast, out, {x});
  }

  // The element of `fragment` (a VECTORIZE) that `holder`'s thread holds, read as that thread.
  absl::StatusOr<const UOp*> Held(const UOp* fragment, const Holder& holder) {
    const UOp* element = sym_.Sym(holder.element.get());
    if (!element->IsConst() || ConstIntValue(*element) < 0 ||
        ConstIntValue(*element) >= static_cast<int64_t>(fragment->num_src())) {
      return absl::UnimplementedError(
          absl::StrCat("a fragment element that depends on the thread: ", DescribeNode(*element)));
    }
    // The warp range replaced by the holder's lane (an expression of the warp range itself,
    // which the substitution does not enter).
    return sym_.Substitute(fragment->src(static_cast<size_t>(ConstIntValue(*element))),
                           {{warp_, holder.lane.get()}});
  }

  Graph& g_;
  SymbolicRewriter sym_;
  const UOp* warp_ = nullptr;
};

}  // namespace

bool HasWmma(const KernelAst& ast) {
  for (const UOp* n : Toposort(ast.root)) {
    if (n->op() == Op::kWmma) return true;
  }
  return false;
}

absl::StatusOr<WmmaShape> WmmaShapeOf(const UOp& wmma) {
  const std::vector<int64_t>& v = wmma.arg().ints;
  if (wmma.op() != Op::kWmma || v.size() != 7) {
    return absl::InvalidArgumentError(
        absl::StrCat(DescribeNode(wmma), ": not a tensor core instruction with its shape"));
  }
  WmmaShape s;
  s.n = static_cast<int>(v[0]);
  s.m = static_cast<int>(v[1]);
  s.k = static_cast<int>(v[2]);
  s.threads = static_cast<int>(v[3]);
  s.elements = {static_cast<int>(v[4]), static_cast<int>(v[5]), static_cast<int>(v[6])};
  return s;
}

absl::StatusOr<std::shared_ptr<const KernelAst>> DecomposeWmma(
    std::shared_ptr<const KernelAst> ast) {
  if (!HasWmma(*ast)) return ast;
  Graph work;
  const UOp* root = CopyExpression(work, ast->root);
  WmmaWriter writer(work);
  UOPD_ASSIGN_OR_RETURN(root, writer.Run(root));
  auto out = std::make_shared<KernelAst>();
  out->root = CopyExpression(out->graph, root);
  out->hash = ast->hash;
  return out;
}

}  // namespace uopd
