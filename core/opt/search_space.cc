#include "core/opt/search_space.h"

#include <algorithm>
#include <random>

#include "core/ir/value_range.h"
#include "core/opt/optimize.h"

namespace uopd {
namespace {

Opt MakeOpt(OptOp op, int axis, int arg) {
  Opt opt;
  opt.op = op;
  opt.axis = axis;
  opt.arg = arg;
  return opt;
}

// The product of the sizes of the UPCAST and UNROLL ranges (symbolic sizes count as large).
int64_t UpcastProduct(const KernelAst& ast) {
  int64_t product = 1;
  for (const UOp* node : Toposort(ast.root)) {
    if (node->op() != Op::kRange) continue;
    const AxisType type = node->arg().axis_type;
    if (type != AxisType::kUpcast && type != AxisType::kUnroll) continue;
    const UOp* size = node->src(0);
    product *= size->IsConst() ? std::max<int64_t>(1, static_cast<int64_t>(ConstIntValue(*size)))
                               : int64_t{1} << 20;
  }
  return product;
}

}  // namespace

std::vector<Opt> SearchActions(const OptTarget& target) {
  std::vector<Opt> actions;
  if (!target.tensor_cores.empty()) {
    // tinygrad's: the first axis choice without padding, then every one with it (tc_opt 2).
    Opt tc = MakeOpt(OptOp::kTc, 0, 0);
    tc.tc = {-1, 0, 1};
    actions.push_back(tc);
    for (int axis = 0; axis < 9; ++axis) {
      tc.axis = axis;
      tc.tc = {-1, 2, 1};
      actions.push_back(tc);
    }
  }
  for (int axis = 0; axis < 8; ++axis) {
    for (int amount : {0, 2, 3, 4, 5, 7, 8, 16}) {
      actions.push_back(MakeOpt(OptOp::kUpcast, axis, amount));
    }
  }
  for (int axis = 0; axis < 5; ++axis) {
    for (int amount : {0, 4, 7, 8, 16, 32})
      actions.push_back(MakeOpt(OptOp::kUnroll, axis, amount));
  }
  if (target.has_local) {
    for (int axis = 0; axis < 6; ++axis) {
      for (int amount : {2, 3, 4, 8, 13, 16, 29}) {
        actions.push_back(MakeOpt(OptOp::kLocal, axis, amount));
      }
    }
    actions.push_back(MakeOpt(OptOp::kLocal, 0, 32));
    actions.push_back(MakeOpt(OptOp::kLocal, 6, 2));
  }
  if (target.has_shared) {
    for (int axis = 0; axis < 3; ++axis) {
      for (int amount : {13, 16, 28, 29, 32, 49, 64, 256}) {
        actions.push_back(MakeOpt(OptOp::kGroupTop, axis, amount));
      }
      for (int amount : {0, 4, 8, 16}) actions.push_back(MakeOpt(OptOp::kGroup, axis, amount));
    }
  }
  for (int a = 0; a < 5; ++a) {
    for (int b = a + 1; b < 5; ++b) actions.push_back(MakeOpt(OptOp::kSwap, a, b));
  }
  if (target.has_threads) {
    for (int axis = 0; axis < 3; ++axis) {
      for (int amount : {2, 3, 4, 5, 8, 12, 16, 24, 32, 64}) {
        actions.push_back(MakeOpt(OptOp::kThread, axis, amount));
      }
    }
  }
  return actions;
}

std::vector<SearchCandidate> ExtendByOneOpt(const std::shared_ptr<const KernelAst>& ast,
                                            const OptTarget& target, const std::vector<Opt>& base,
                                            absl::flat_hash_set<std::string>& seen,
                                            int64_t max_upcast) {
  std::vector<SearchCandidate> out;
  for (const Opt& action : SearchActions(target)) {
    OptimizeRequest request;
    request.mode = OptMode::kOpts;
    request.opts = base;
    request.opts.push_back(action);
    absl::StatusOr<OptimizedKernel> optimized = OptimizeKernel(ast, target, request);
    if (!optimized.ok()) continue;
    if (UpcastProduct(*optimized->ast) > max_upcast) continue;
    if (!seen.insert(optimized->ast->hash).second) continue;
    out.push_back({std::move(request.opts), std::move(optimized->ast)});
  }
  return out;
}

std::vector<Opt> RandomOptList(const std::shared_ptr<const KernelAst>& ast, const OptTarget& target,
                               uint64_t seed, int count, int64_t max_upcast) {
  std::mt19937_64 rng(seed);
  std::vector<Opt> actions = SearchActions(target);
  std::vector<Opt> opts;
  for (int step = 0; step < count; ++step) {
    std::shuffle(actions.begin(), actions.end(), rng);
    bool found = false;
    for (const Opt& action : actions) {
      OptimizeRequest request{OptMode::kOpts, opts};
      request.opts.push_back(action);
      absl::StatusOr<OptimizedKernel> optimized = OptimizeKernel(ast, target, request);
      if (!optimized.ok() || UpcastProduct(*optimized->ast) > max_upcast) continue;
      opts = std::move(request.opts);
      found = true;
      break;
    }
    if (!found) break;
  }
  return opts;
}

}  // namespace uopd
