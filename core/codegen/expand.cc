#include "core/codegen/expand.h"

#include <map>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/ir/hash.h"
#include "core/ir/printer.h"
#include "core/ir/value_range.h"
#include "core/util/status_macros.h"

namespace uopd {
namespace {

int64_t ConstSize(const UOp* range) {
  return range->src(0)->IsConst() ? static_cast<int64_t>(ConstIntValue(*range->src(0))) : -1;
}

class Expander {
 public:
  Expander(const KernelAst& ast, const ExpandOptions& options, Graph& graph)
      : ast_(ast), options_(options), g_(graph) {}

  // Whether anything is expanded at all.
  bool Plan() {
    ordering_ = RangesOrderingMemory(ast_.root);
    for (const UOp* node : Toposort(ast_.root)) {
      // A tensor core's fragment ranges are always written out: they number a thread's
      // fragment elements, which exist only as lanes.
      if (IsFragmentForm(node)) {
        for (size_t i = 1; i < node->num_src(); ++i) expand_.insert(node->src(i));
        continue;
      }
      if (node->op() != Op::kEnd && node->op() != Op::kReduce) continue;
      std::vector<const UOp*> candidates;
      int64_t lanes = 1;
      for (size_t i = 1; i < node->num_src(); ++i) {
        const UOp* r = node->src(i);
        if (r->op() == Op::kRange && r != options_.keep && IsExpandedRange(r)) {
          candidates.push_back(r);
          lanes *= std::max<int64_t>(1, ConstSize(r));
        }
      }
      // Too many copies: the ranges stay loops, except those of one iteration.
      for (const UOp* r : candidates) {
        if (ordering_.contains(r) && ConstSize(r) != 1) continue;
        if (lanes <= options_.max_lanes || ConstSize(r) == 1) expand_.insert(r);
      }
    }
    return !expand_.empty();
  }

  absl::StatusOr<const UOp*> Run() {
    for (const UOp* node : Toposort(ast_.root)) ComputeDeps(node);
    const UOp* root = Rewrite(ast_.root);
    if (!status_.ok()) return status_;
    return root;
  }

 private:
  // The expanded ranges `node` depends on and does not close, in a fixed order.
  void ComputeDeps(const UOp* node) {
    std::vector<const UOp*> deps;
    size_t closes_from = node->num_src();
    if (node->op() == Op::kEnd || node->op() == Op::kReduce || node->op() == Op::kContract) {
      closes_from = 1;
    }
    for (size_t i = 0; i < node->num_src(); ++i) {
      for (const UOp* r : deps_.at(node->src(i))) {
        bool closed = false;
        for (size_t j = closes_from; j < node->num_src(); ++j) closed |= node->src(j) == r;
        if (!closed && std::find(deps.begin(), deps.end(), r) == deps.end()) deps.push_back(r);
      }
    }
    if (node->op() == Op::kRange && expand_.contains(node)) deps.push_back(node);
    std::sort(deps.begin(), deps.end(),
              [](const UOp* a, const UOp* b) { return a->id() < b->id(); });
    deps_[node] = std::move(deps);
  }

  // Every assignment of values to `ranges`, first range slowest.
  static std::vector<std::vector<int64_t>> Assignments(const std::vector<const UOp*>& ranges) {
    std::vector<std::vector<int64_t>> out = {{}};
    for (const UOp* r : ranges) {
      std::vector<std::vector<int64_t>> next;
      for (const auto& prefix : out) {
        for (int64_t v = 0; v < ConstSize(r); ++v) {
          next.push_back(prefix);
          next.back().push_back(v);
        }
      }
      out = std::move(next);
    }
    return out;
  }

  // Splits the ranges an END or REDUCE closes into those written out and those kept as loops.
  void Split(const UOp* node, std::vector<const UOp*>* expanded, std::vector<const UOp*>* kept) {
    for (size_t i = 1; i < node->num_src(); ++i) {
      const UOp* r = node->src(i);
      (expand_.contains(r) ? expanded : kept)->push_back(r);
    }
  }

  const UOp* Rewrite(const UOp* node) {
    std::vector<int64_t> key;
    for (const UOp* r : deps_.at(node)) {
      auto it = env_.find(r);
      key.push_back(it == env_.end() ? -1 : it->second);
    }
    auto memo_key = std::make_pair(node, key);
    if (auto it = memo_.find(memo_key); it != memo_.end()) return it->second;
    const UOp* out = nullptr;
    if (node->op() == Op::kRange && env_.contains(node)) {
      out = g_.ConstInt(node->dtype().scalar, env_.at(node));  // a RANGE may be narrower
    } else if (node->op() == Op::kContract) {
      // The fragment: the value once per assignment of the ranges, first range slowest.
      // Its ranges may be an enclosing END's too (the output fragment's): their values there
      // are restored after.
      const std::vector<const UOp*> ranges(node->src().begin() + 1, node->src().end());
      std::vector<std::optional<int64_t>> outer;
      for (const UOp* r : ranges) {
        auto it = env_.find(r);
        outer.push_back(it == env_.end() ? std::nullopt : std::optional<int64_t>(it->second));
      }
      std::vector<const UOp*> lanes;
      for (const auto& values : Assignments(ranges)) {
        for (size_t i = 0; i < ranges.size(); ++i) env_[ranges[i]] = values[i];
        lanes.push_back(Rewrite(node->src(0)));
      }
      for (size_t i = 0; i < ranges.size(); ++i) {
        if (outer[i].has_value()) {
          env_[ranges[i]] = *outer[i];
        } else {
          env_.erase(ranges[i]);
        }
      }
      out = g_.Make(Op::kVectorize, node->dtype(), std::move(lanes));
    } else if (node->op() == Op::kUnroll) {
      // The lane of the instruction's result that the ranges' current values number.
      int64_t lane = 0;
      for (size_t i = 1; i < node->num_src(); ++i) {
        auto value = env_.find(node->src(i));
        if (value == env_.end()) {  // no END or REDUCE around it writes the range out
          status_ = absl::InvalidArgumentError(absl::StrCat(
              "expand: ", DescribeNode(*node), ": its range ", i, " has no value here"));
          return node;
        }
        lane = lane * ConstSize(node->src(i)) + value->second;
      }
      out = g_.Make(Op::kGep, node->dtype(), {Rewrite(node->src(0))}, Arg::I64(lane));
    } else if (node->op() == Op::kEnd || node->op() == Op::kReduce) {
      std::vector<const UOp*> expanded, kept;
      Split(node, &expanded, &kept);
      std::vector<const UOp*> copies;
      for (const auto& values : Assignments(expanded)) {
        for (size_t i = 0; i < expanded.size(); ++i) env_[expanded[i]] = values[i];
        copies.push_back(Rewrite(node->src(0)));
      }
      for (const UOp* r : expanded) env_.erase(r);
      const UOp* body;
      if (copies.size() == 1) {
        body = copies[0];
      } else if (node->op() == Op::kEnd) {
        body = g_.Make(Op::kGroup, DType::Of(Scalar::kVoid), copies);
      } else {
        body = g_.Make(Op::kContract, node->src(0)->dtype(), copies);
      }
      std::vector<const UOp*> src = {body};
      for (const UOp* r : kept) src.push_back(Rewrite(r));
      if (node->op() == Op::kEnd && kept.empty()) {
        out = body;  // nothing left to loop over
      } else {
        out = g_.Make(node->op(), node->dtype(), std::move(src), node->arg());
      }
    } else {
      std::vector<const UOp*> src;
      src.reserve(node->num_src());
      for (const UOp* s : node->src()) src.push_back(Rewrite(s));
      out = g_.Make(node->op(), node->dtype(), std::move(src), node->arg());
    }
    memo_.emplace(std::move(memo_key), out);
    return out;
  }

  const KernelAst& ast_;
  const ExpandOptions& options_;
  Graph& g_;
  absl::flat_hash_set<const UOp*> expand_;
  absl::flat_hash_set<const UOp*> ordering_;
  absl::flat_hash_map<const UOp*, std::vector<const UOp*>> deps_;
  absl::flat_hash_map<const UOp*, int64_t> env_;
  std::map<std::pair<const UOp*, std::vector<int64_t>>, const UOp*> memo_;
  absl::Status status_;  // the first form that cannot be written out
};

}  // namespace

bool IsFragmentForm(const UOp* node) {
  return (node->op() == Op::kContract || node->op() == Op::kUnroll) && node->num_src() > 1 &&
         node->src(1)->op() == Op::kRange;
}

bool IsExpandedRange(const UOp* range) {
  if (range->op() != Op::kRange) return false;
  const int64_t size = ConstSize(range);
  if (size == 1) return true;
  return size > 1 && (range->arg().axis_type == AxisType::kUpcast ||
                      range->arg().axis_type == AxisType::kUnroll);
}

absl::flat_hash_set<const UOp*> RangesOrderingMemory(const UOp* root) {
  absl::flat_hash_set<const UOp*> ranges;
  for (const UOp* node : Toposort(root)) {
    if (node->op() != Op::kAfter) continue;
    for (const UOp* n : Toposort(node)) {
      if (n->op() == Op::kRange) ranges.insert(n);
    }
  }
  return ranges;
}

const UOp* FindRange(const KernelAst& ast, const Arg& arg) {
  for (const UOp* node : Toposort(ast.root)) {
    if (node->op() == Op::kRange && node->arg() == arg) return node;
  }
  return nullptr;
}

absl::StatusOr<std::shared_ptr<const KernelAst>> ExpandRanges(std::shared_ptr<const KernelAst> ast,
                                                              const ExpandOptions& options) {
  auto expanded = std::make_shared<KernelAst>();
  Expander expander(*ast, options, expanded->graph);
  if (!expander.Plan()) return ast;
  UOPD_ASSIGN_OR_RETURN(expanded->root, expander.Run());
  // Code generation's own form of the kernel: it names the kernel it came from (hashing the
  // written-out copies would cost more than the lowering).
  expanded->hash = ast->hash;
  return expanded;
}

}  // namespace uopd
