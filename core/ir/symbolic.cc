#include "core/ir/symbolic.h"

#include <deque>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "core/ir/symbolic_internal.h"

namespace uopd {

// The rewriter's helpers are this file's vocabulary.
using namespace symbolic_internal;  // NOLINT(build/namespaces)

std::vector<const UOp*> TinygradToposort(const UOp* root) { return TinyToposort({root}); }

// ---- node builders ----------------------------------------------------------------------------

const UOp* SymbolicRewriter::Alu(Op op, const UOp* a, const UOp* b) {
  DType dtype = IsComparison(op) ? DType::Of(Scalar::kBool) : b->dtype();
  return g_.Make(op, dtype, {a, b});
}

const UOp* SymbolicRewriter::ConstLike(const UOp* like, Int128 v) {
  DType dtype = like->dtype().Base();
  if (dtype.scalar == Scalar::kBool) return g_.Make(Op::kConst, dtype, {}, Arg::Bool(v != 0));
  if (IsFloat(dtype.scalar)) {
    return g_.Make(Op::kConst, dtype, {}, Arg::F64(static_cast<double>(v)));
  }
  if (v >= std::numeric_limits<int64_t>::min() && v <= std::numeric_limits<int64_t>::max()) {
    return g_.Make(Op::kConst, dtype, {}, Arg::I64(static_cast<int64_t>(v)));
  }
  if (dtype.scalar == Scalar::kUint64 && v > 0 && v <= std::numeric_limits<uint64_t>::max()) {
    Arg arg;
    arg.kind = ArgKind::kU64;
    arg.i = static_cast<int64_t>(static_cast<uint64_t>(v));
    return g_.Make(Op::kConst, dtype, {}, arg);
  }
  // Bounds of a degenerate expression: no constant of the kernel's dtypes holds it.
  if (status_.ok()) status_ = absl::InternalError("symbolic: a constant beyond 64 bits");
  return g_.Make(Op::kConst, dtype, {}, Arg::I64(0));
}

const UOp* SymbolicRewriter::IndexConst(Int128 v) {
  return g_.Make(
      Op::kConst, DType::Of(Scalar::kIndex), {},
      Arg::I64(static_cast<int64_t>(std::clamp<Int128>(v, std::numeric_limits<int64_t>::min(),
                                                       std::numeric_limits<int64_t>::max()))));
}

const UOp* SymbolicRewriter::Neg(const UOp* a) {
  if (IsBoolNode(a)) return Alu(Op::kCmpne, a, ConstLike(a, 1));
  return MulC(a, -1);
}

const UOp* SymbolicRewriter::Where(const UOp* c, const UOp* t, const UOp* f) {
  return g_.Make(Op::kWhere, f->dtype(), {c, t, f});
}

const UOp* SymbolicRewriter::Cast(const UOp* x, const DType& dtype) {
  if (x->dtype() == dtype) return x;
  return g_.Make(Op::kCast, dtype, {x});
}

const UOp* SymbolicRewriter::Sum(const std::vector<const UOp*>& terms) {
  const UOp* acc = terms.front();
  const Op op = IsBoolNode(acc) ? Op::kOr : Op::kAdd;
  for (size_t i = 1; i < terms.size(); ++i) acc = Alu(op, acc, terms[i]);
  return acc;
}

const UOp* SymbolicRewriter::Prod(const std::vector<const UOp*>& terms) {
  const UOp* acc = terms.front();
  const Op op = IsBoolNode(acc) ? Op::kAnd : Op::kMul;
  for (size_t i = 1; i < terms.size(); ++i) acc = Alu(op, acc, terms[i]);
  return acc;
}

const UOp* SymbolicRewriter::PySum(const std::vector<const UOp*>& terms, const UOp* like) {
  if (terms.empty()) return ConstLike(like, 0);
  const UOp* acc = CAdd(0, terms.front());
  for (size_t i = 1; i < terms.size(); ++i) acc = Add(acc, terms[i]);
  return acc;
}

const UOp* SymbolicRewriter::PyProd(const std::vector<const UOp*>& terms, const UOp* like) {
  if (terms.empty()) return ConstLike(like, 1);
  const UOp* acc = CMul(1, terms.front());
  for (size_t i = 1; i < terms.size(); ++i) acc = Mul(acc, terms[i]);
  return acc;
}

// ---- UOp helpers ------------------------------------------------------------------------------

void SymbolicRewriter::SplitUOp(const UOp* n, Op sep, std::vector<const UOp*>& out) {
  // Left to right, without recursion (a client's sum may be thousands of terms deep).
  std::vector<const UOp*> stack = {n};
  while (!stack.empty()) {
    const UOp* u = stack.back();
    stack.pop_back();
    if (u->op() != sep) {
      out.push_back(u);
      continue;
    }
    for (auto it = u->src().rbegin(); it != u->src().rend(); ++it) stack.push_back(*it);
  }
}

bool SymbolicRewriter::ConstFactor(const UOp* n, Int128& out, int depth) {
  if (depth > kMaxDepth) return false;
  if (n->op() == Op::kConst) {
    if (!IsIntCvar(n)) return false;
    out = CInt(n);
    return true;
  }
  if (n->op() == Op::kAdd) {
    Int128 a, b;
    if (!ConstFactor(n->src(0), a, depth + 1) || !ConstFactor(n->src(1), b, depth + 1)) {
      return false;
    }
    out = Gcd(a, b);
    return true;
  }
  if (n->op() == Op::kMul) {
    if (n->src(0)->op() == Op::kConst) return ConstFactor(n->src(0), out);
    if (n->src(1)->op() == Op::kConst) return ConstFactor(n->src(1), out);
  }
  out = 1;
  return true;
}

const UOp* SymbolicRewriter::Divides(const UOp* n, Int128 v, int depth) {
  if (v == 1) return n;
  if (v == 0 || depth > kMaxDepth) return nullptr;
  if (n->op() == Op::kConst) {
    if (!IsIntCvar(n)) return nullptr;
    return FloorMod(CInt(n), v) == 0 ? ConstLike(n, FloorDiv(CInt(n), v)) : nullptr;
  }
  if (n->op() == Op::kAdd) {
    const UOp* d0 = Divides(n->src(0), v, depth + 1);
    if (d0 == nullptr) return nullptr;
    const UOp* d1 = Divides(n->src(1), v, depth + 1);
    return d1 == nullptr ? nullptr : Add(d0, d1);
  }
  if (n->op() == Op::kMul) {
    if (const UOp* d0 = Divides(n->src(0), v, depth + 1)) return Mul(d0, n->src(1));
    if (const UOp* d1 = Divides(n->src(1), v, depth + 1)) return Mul(n->src(0), d1);
  }
  return nullptr;
}

const UOp* SymbolicRewriter::DivideExact(const UOp* n, const UOp* v, int depth) {
  if (n == v) return ConstLike(n, 1);
  if (depth > kMaxDepth) return nullptr;
  if (v->op() == Op::kConst) return IsIntCvar(v) ? Divides(n, CInt(v)) : nullptr;
  if (n->op() == Op::kAdd) {
    const UOp* s0 = DivideExact(n->src(0), v, depth + 1);
    if (s0 == nullptr) return nullptr;
    const UOp* s1 = DivideExact(n->src(1), v, depth + 1);
    return s1 == nullptr ? nullptr : Add(s0, s1);
  }
  if (n->op() == Op::kMul) {
    auto pop = [](const UOp* u, const UOp*& fac, Int128& c) {
      if (u->op() == Op::kMul && IsIntCvar(u->src(1))) {
        fac = u->src(0);
        c = CInt(u->src(1));
      } else {
        fac = u;
        c = 1;
      }
    };
    const UOp *fac, *div_fac;
    Int128 c, div_c;
    pop(n, fac, c);
    pop(v, div_fac, div_c);
    if (div_c == 0) return nullptr;
    // collections.Counter(fac factors) minus Counter(div_fac factors), in insertion order.
    std::vector<std::pair<const UOp*, int>> count;
    auto find = [&](const UOp* u) {
      return std::find_if(count.begin(), count.end(), [&](auto& e) { return e.first == u; });
    };
    std::vector<const UOp*> parts;
    SplitUOp(fac, Op::kMul, parts);
    for (const UOp* u : parts) {
      if (auto it = find(u); it != count.end()) {
        ++it->second;
      } else {
        count.push_back({u, 1});
      }
    }
    parts.clear();
    SplitUOp(div_fac, Op::kMul, parts);
    for (const UOp* u : parts) {
      if (auto it = find(u); it != count.end()) {
        --it->second;
      } else {
        count.push_back({u, -1});
      }
    }
    if (FloorMod(c, div_c) != 0) return nullptr;
    std::vector<const UOp*> elements;
    for (auto& [u, k] : count) {
      if (k < 0) return nullptr;
      for (int i = 0; i < k; ++i) elements.push_back(u);
    }
    elements.push_back(ConstLike(n, FloorDiv(c, div_c)));
    return PyProd(elements, n);
  }
  return nullptr;
}

// UOp.gcd(*uops), simplified.
const UOp* SymbolicRewriter::GcdOf(const std::vector<const UOp*>& uops) {
  std::vector<const UOp*> terms;
  Int128 g = 0;
  for (const UOp* u : uops) {
    Int128 f;
    if (!ConstFactor(u, f)) return nullptr;
    const UOp* t = Divides(u, f);
    if (t == nullptr) return nullptr;
    terms.push_back(t);
    g = Gcd(g, f);
  }
  // The intersection of the terms' factor multisets, in the first term's order.
  std::vector<std::pair<const UOp*, int>> count;
  for (size_t i = 0; i < terms.size(); ++i) {
    std::vector<const UOp*> parts;
    SplitUOp(terms[i], Op::kMul, parts);
    std::vector<std::pair<const UOp*, int>> here;
    for (const UOp* u : parts) {
      auto it = std::find_if(here.begin(), here.end(), [&](auto& e) { return e.first == u; });
      if (it != here.end()) {
        ++it->second;
      } else {
        here.push_back({u, 1});
      }
    }
    if (i == 0) {
      count = here;
      continue;
    }
    std::vector<std::pair<const UOp*, int>> both;
    for (auto& [u, k] : count) {
      auto it = std::find_if(here.begin(), here.end(), [&](auto& e) { return e.first == u; });
      if (it != here.end() && std::min(k, it->second) > 0) {
        both.push_back({u, std::min(k, it->second)});
      }
    }
    count = both;
  }
  std::vector<const UOp*> elements;
  for (auto& [u, k] : count) {
    for (int i = 0; i < k; ++i) elements.push_back(u);
  }
  elements.push_back(ConstLike(terms[0], g));
  return Simplify(PyProd(elements, terms[0]));
}

// ---- the rewrite engine -------------------------------------------------------------------------

SymbolicRewriter::SymbolicRewriter(Graph& graph)
    : g_(graph),
      max_steps_(kMinSteps + kStepsPerNode * static_cast<int64_t>(graph.size())),
      max_nodes_(kMinNodes + kNodesPerNode * static_cast<int64_t>(graph.size())) {}

bool SymbolicRewriter::Step() {
  if (!status_.ok()) return false;
  if (++steps_ > max_steps_ || static_cast<int64_t>(g_.size()) > max_nodes_) {
    status_ = absl::ResourceExhaustedError(absl::StrCat(
        "symbolic rewrite did not settle within ", steps_, " steps and ", g_.size(), " nodes"));
    return false;
  }
  return true;
}

const UOp* SymbolicRewriter::Rewrite(const UOp* root, const Rule& rule, Map& replace) {
  // tinygrad's RewriteContext.unified_rewrite, top-down: stage 0 queues the sources, stage 1
  // rebuilds the node from rewritten sources (or applies the rules when none changed), stage 2
  // links the node to the result of rewriting what it became.
  struct Item {
    const UOp* n;
    int stage;
    const UOp* new_n;
  };
  std::deque<Item> stack = {{root, 0, root}};
  absl::flat_hash_set<const UOp*> on_stack = {root};
  while (!stack.empty()) {
    if (!Step()) return root;
    Item it = stack.back();
    stack.pop_back();
    if (replace.contains(it.n)) continue;
    if (it.stage == 0) {
      stack.push_back({it.n, 1, it.new_n});
      for (auto s = it.new_n->src().rbegin(); s != it.new_n->src().rend(); ++s) {
        if (!on_stack.insert(*s).second) continue;
        stack.push_back({*s, 0, *s});
      }
    } else if (it.stage == 1) {
      std::vector<const UOp*> src;
      bool ready = true;
      for (const UOp* s : it.new_n->src()) {
        auto found = replace.find(s);
        if (found == replace.end()) {
          stack.push_front(it);
          ready = false;
          break;
        }
        src.push_back(found->second);
      }
      if (!ready) continue;
      const UOp* next;
      if (std::equal(src.begin(), src.end(), it.new_n->src().begin(), it.new_n->src().end())) {
        next = rule(it.new_n);
        if (!status_.ok()) return root;
        if (next == nullptr || next == it.new_n) {
          replace[it.n] = it.new_n;
          continue;
        }
      } else {
        next = g_.Make(it.new_n->op(), it.new_n->dtype(), std::move(src), it.new_n->arg());
      }
      stack.push_back({it.n, 2, next});
      stack.push_back({next, 0, next});
    } else {
      auto found = replace.find(it.new_n);
      if (found == replace.end()) {
        stack.push_front(it);
      } else {
        replace[it.n] = found->second;
      }
    }
  }
  return replace.at(root);
}

const UOp* SymbolicRewriter::Simplify(const UOp* root) {
  if (root->op() == Op::kConst) return root;
  return Rewrite(
      root, [this](const UOp* n) { return SymbolicRule(n); }, symbolic_memo_);
}

const UOp* SymbolicRewriter::Sym(const UOp* root) {
  return Rewrite(
      root,
      [this](const UOp* n) {
        if (const UOp* r = SymRule(n)) return r;
        return FlattenRangeRule(n);
      },
      sym_memo_);
}

const UOp* SymbolicRewriter::Substitute(const UOp* root, const Map& map) {
  Map done;
  bool any = false;
  for (const auto& [k, v] : map) any |= k != v;
  if (!any) return root;
  for (const UOp* n : TinyToposort({root})) {
    if (auto it = map.find(n); it != map.end()) {
      done[n] = it->second;
      continue;
    }
    std::vector<const UOp*> src;
    bool changed = false;
    for (const UOp* s : n->src()) {
      src.push_back(done.at(s));
      changed |= src.back() != s;
    }
    done[n] = changed ? g_.Make(n->op(), n->dtype(), std::move(src), n->arg()) : n;
  }
  return done.at(root);
}

const UOp* SymbolicRewriter::FlattenRangeRule(const UOp* n) {
  const int off = RangeStart(n->op());
  if (off < 0 || static_cast<int>(n->num_src()) <= off) return nullptr;
  std::vector<const UOp*> rngs(n->src().begin() + off, n->src().end());
  std::vector<const UOp*> src(n->src().begin(), n->src().begin() + off);
  for (const UOp* u : TinyToposort(rngs)) {
    if (u->op() == Op::kRange) src.push_back(u);
  }
  if (std::equal(src.begin(), src.end(), n->src().begin(), n->src().end())) return nullptr;
  return g_.Make(n->op(), n->dtype(), std::move(src), n->arg());
}

}  // namespace uopd
