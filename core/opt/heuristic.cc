#include "core/opt/heuristic.h"

#include <algorithm>
#include <functional>
#include <limits>

#include "core/codegen/vector_range.h"
#include "core/ir/affine.h"
#include "core/ir/value_range.h"
#include "core/opt/cost_model.h"
#include "core/opt/gpu_heuristic.h"
#include "core/opt/tinygrad_heuristic.h"
#include "core/util/large_stack.h"

namespace uopd {
namespace {

int64_t SizeOf(const UOp* range) {
  return range->src(0)->IsConst() ? static_cast<int64_t>(ConstIntValue(*range->src(0))) : -1;
}

// The memory accesses of the current AST: (index expression without its guard, is a store).
struct Access {
  const UOp* index;
  bool store;
  Scalar dtype;
};

std::vector<Access> AccessesOf(const UOp* root) {
  std::vector<Access> out;
  for (const UOp* n : Toposort(root)) {
    if (n->op() != Op::kIndex) continue;
    const UOp* idx = n->src(1);
    while (idx->op() == Op::kWhere && idx->src(2)->IsInvalid()) idx = idx->src(1);
    out.push_back({idx, n->dtype().ptr, n->dtype().scalar});
  }
  return out;
}

// The current axis with the argument (ids and type) of a range, or null.
const UOp* FindAxis(const Scheduler& s, const Arg& arg) {
  for (const UOp* a : s.Axes()) {
    if (a->arg() == arg) return a;
  }
  return nullptr;
}

// Applies op on `axis` by `amount` (0: its whole size); false (nothing applied) when it does
// not apply.
bool TryOpt(Scheduler& s, OptOp op, const UOp* axis, int64_t amount) {
  if (axis == nullptr) return false;
  const std::vector<const UOp*> axes = s.Axes();
  int index = -1;
  if (op == OptOp::kUnroll) {
    int k = 0;
    for (const UOp* a : axes) {
      if ((a->arg().axis_type == AxisType::kReduce ||
           a->arg().axis_type == AxisType::kGroupReduce) &&
          SizeOf(a) > 1) {
        if (a == axis) index = k;
        ++k;
      }
    }
  } else {
    auto it = std::find(axes.begin(), axes.end(), axis);
    if (it != axes.end()) index = static_cast<int>(it - axes.begin());
  }
  if (index < 0) return false;
  Opt opt;
  opt.op = op;
  opt.axis = index;
  opt.arg = static_cast<int>(amount);
  return s.Apply(opt).ok();
}

// uopd's first CPU heuristic, one candidate among others.
class FirstCpuHeuristic {
 public:
  explicit FirstCpuHeuristic(Scheduler& s) : s_(s) {}

  void Run() {
    std::vector<const UOp*> outputs, reduces;
    for (const UOp* a : s_.Axes()) {
      if (SizeOf(a) <= 1) continue;
      if (a->arg().axis_type == AxisType::kLoop) outputs.push_back(a);
      if (a->arg().axis_type == AxisType::kReduce) reduces.push_back(a);
    }
    const std::vector<Access> accesses = AccessesOf(s_.root());
    const Access* store = nullptr;
    for (const Access& a : accesses) {
      if (a.store && store == nullptr) store = &a;
    }
    if (store == nullptr) return;
    const int item = std::max(1, ScalarItemSize(store->dtype));
    const int64_t width = std::max(1, s_.target().vector_bytes / std::min(item, 4));
    const int budget = std::max(2, s_.target().vector_registers / 2);  // accumulator vectors

    // The output axis along which the store is contiguous.
    const UOp* contiguous_out = nullptr;
    for (const UOp* a : outputs) {
      if (AffineCoefficient(store->index, a) == 1) contiguous_out = a;
    }
    if (reduces.empty()) {
      if (contiguous_out != nullptr && SizeOf(contiguous_out) % width == 0) {
        TryOpt(s_, OptOp::kUpcast, contiguous_out, width);
      }
      return;
    }
    // Along the outputs: vector accumulators over the contiguous output axis.
    if (contiguous_out != nullptr && ReusedOrContiguous(contiguous_out, reduces, accesses)) {
      const Arg vector_axis = contiguous_out->arg();
      if (SizeOf(contiguous_out) % width != 0 && SizeOf(contiguous_out) > width) {
        TryOpt(s_, OptOp::kPadTo, contiguous_out, width);
      }
      if (!TryOpt(s_, OptOp::kUpcast, FindAxis(s_, vector_axis), width)) return;
      // Rows: an output axis some operand does not read (its loads are reused across them).
      const UOp* rows = nullptr;
      int64_t row_amount = 1;
      for (const UOp* a : outputs) {
        if (a->arg() == vector_axis) continue;
        const bool reused = std::any_of(accesses.begin(), accesses.end(), [&](const Access& x) {
          return !x.store && AffineCoefficient(x.index, a) == 0;
        });
        if (!reused) continue;
        for (int64_t u : {8, 6, 4, 3, 2}) {
          if (u <= budget && SizeOf(a) % u == 0 && u > row_amount) {
            rows = a;
            row_amount = u;
            break;
          }
        }
      }
      const Arg row_axis = rows != nullptr ? rows->arg() : Arg();
      // More vectors of columns, as many as the register budget leaves.
      const UOp* vector_now = FindAxis(s_, vector_axis);
      for (int64_t k : {16, 8, 4, 2}) {
        if (row_amount * k <= budget && vector_now != nullptr && SizeOf(vector_now) % k == 0 &&
            SizeOf(vector_now) / k >= 1) {
          if (TryOpt(s_, OptOp::kUpcast, vector_now, k)) break;
        }
      }
      if (rows != nullptr && row_amount > 1)
        TryOpt(s_, OptOp::kUpcast, FindAxis(s_, row_axis), row_amount);
      return;
    }
    // Along the reduction: partial sums per vector lane, in two vectors (two dependency chains
    // hide the latency of the vector add). More rows at a time were no faster on memory-bound
    // sums and slower on ones that compute (a softmax's exp2 runs out of registers).
    const UOp* contiguous_reduce = nullptr;
    for (const UOp* r : reduces) {
      for (const Access& a : accesses) {
        if (!a.store && AffineCoefficient(a.index, r) == 1) contiguous_reduce = r;
      }
    }
    if (contiguous_reduce != nullptr) {
      for (int64_t amount : {std::min<int64_t>(32, 2 * width), width}) {
        if (SizeOf(contiguous_reduce) % amount == 0 &&
            TryOpt(s_, OptOp::kUnroll, contiguous_reduce, amount)) {
          break;
        }
      }
    }
  }

 private:
  // Whether some load the reduction streams through (one that varies along a reduce axis)
  // reads the axis contiguously or not at all, so that vector lanes along it are vector loads
  // or one broadcast. Loads fixed during the reduction (a softmax's row maximum) do not count:
  // they are read once per output.
  static bool ReusedOrContiguous(const UOp* axis, const std::vector<const UOp*>& reduces,
                                 const std::vector<Access>& accesses) {
    return std::any_of(accesses.begin(), accesses.end(), [&](const Access& x) {
      if (x.store) return false;
      const bool streamed = std::any_of(reduces.begin(), reduces.end(), [&](const UOp* r) {
        return AffineCoefficient(x.index, r) != 0;
      });
      auto c = AffineCoefficient(x.index, axis);
      return streamed && (c == 0 || c == 1);
    });
  }

  Scheduler& s_;
};

// ---- Candidates around a vectorized axis -----------------------------------------------------

// Bounds on the work of costing candidates (kernels from real models have a few hundred nodes).
constexpr double kMaxExpandedNodes = 400000;
// Register tiles costed per vectorized axis.
constexpr size_t kMaxTiles = 6;
// Kernels the model expects to take at least this long (~1 ms) have close candidates timed.
constexpr double kTimedCycles = 3e6;
// How far above the model's best tinygrad's choice may be estimated and still be timed against
// it. The model overestimates tinygrad's written-out register tiles where LLVM packs them into
// vectors: the CNN's input gradient, tinygrad's opts estimated at 3.8-4.1x the model's choice
// (Zen 2, Zen 5), runs in half its time. Of the three models' kernels timed both ways
// (bench/cost_model_bench), none estimated above 4.1x ran faster; each timing costs a first run
// two compiles, so the ratio stops a little above that.
constexpr double kTimedRatio = 4.5;

// What the candidates are made from: the kernel's axes and accesses before any opt.
struct Shape {
  std::vector<const UOp*> outputs, reduces;  // constant-size axes of more than one iteration
  std::vector<Access> accesses;
  int item = 4;   // bytes of the stored element
  int width = 8;  // elements of one vector register
};

// Loads whose index varies with a reduce axis: the ones a reduction streams through.
bool Streamed(const Access& a, const Shape& shape) {
  return !a.store && std::any_of(shape.reduces.begin(), shape.reduces.end(),
                                 [&](const UOp* r) { return AffineCoefficient(a.index, r) != 0; });
}

// One way to vectorize: `axis` as `lanes` vector lanes (after padding it to a multiple of
// `lanes` when `pad`).
struct VectorChoice {
  Arg axis;
  bool reduce = false;
  int64_t size = 0;
  int64_t lanes = 0;
  bool pad = false;
  double contiguous = 0;  // accesses it makes vector loads or stores, weighted by how often
};

// The axes along which no access that runs in the loop nest is a gather, and some is a vector.
std::vector<VectorChoice> VectorChoices(const Shape& shape) {
  std::vector<VectorChoice> out;
  const bool reduction = !shape.reduces.empty();
  auto consider = [&](const UOp* axis, bool is_reduce) {
    const int64_t size = SizeOf(axis);
    if (size < 4) return;
    VectorChoice c;
    c.axis = axis->arg();
    c.reduce = is_reduce;
    c.size = size;
    double gathered = 0;
    for (const Access& a : shape.accesses) {
      // Loads a reduction does not stream run once per output: a gather there costs little.
      if (reduction && !a.store && !Streamed(a, shape)) continue;
      std::optional<int64_t> k = AffineCoefficient(a.index, axis);
      if (k == 1) c.contiguous += Trips(a.index);
      if (k != 0 && k != 1) {
        // A strided store or a gathered reduction input: lane by lane. Still worth costing
        // when the rest is contiguous (a strided convolution's input rows).
        if (a.store || is_reduce) return;
        gathered += Trips(a.index);
      }
    }
    if (c.contiguous == 0) return;
    c.contiguous -= 0.5 * gathered;
    // Lanes: the fewest vector operations over the axis (after padding it to a multiple of
    // the lanes), then the least padding; at least 4 lanes.
    int64_t best_ops = std::numeric_limits<int64_t>::max();
    for (int64_t lanes = std::min<int64_t>(shape.width, 16); lanes >= 4; lanes /= 2) {
      const int64_t ops = (size + lanes - 1) / lanes;
      const int64_t padded = ops * lanes;
      if (padded > 4 * size) continue;  // PADTO's limit
      const int64_t best_padded = best_ops == std::numeric_limits<int64_t>::max()
                                      ? std::numeric_limits<int64_t>::max()
                                      : best_ops * c.lanes;
      if (ops < best_ops || (ops == best_ops && padded < best_padded)) {
        best_ops = ops;
        c.lanes = lanes;
        c.pad = padded != size;
      }
    }
    if (c.lanes == 0) return;
    out.push_back(c);
  };
  for (const UOp* a : shape.outputs) consider(a, false);
  for (const UOp* r : shape.reduces) consider(r, true);
  std::stable_sort(out.begin(), out.end(), [](const VectorChoice& a, const VectorChoice& b) {
    return a.contiguous > b.contiguous;
  });
  if (out.size() > 2) out.resize(2);
  return out;
}

// Everything one candidate applies, in order.
struct TileSpec {
  VectorChoice vector;
  int64_t vector_copies = 1;                   // 2: two vectors of lanes (two chains)
  std::vector<std::pair<Arg, int64_t>> tiles;  // output axes upcast as a register tile
  bool unroll_window = false;                  // unroll reduce axes of at most 7 iterations
};

bool BuildTiles(Scheduler& s, const TileSpec& spec) {
  const VectorChoice& v = spec.vector;
  if (v.pad && !TryOpt(s, OptOp::kPadTo, FindAxis(s, v.axis), v.lanes)) return false;
  const int64_t lanes = v.lanes * spec.vector_copies;
  if (!TryOpt(s, v.reduce ? OptOp::kUnroll : OptOp::kUpcast, FindAxis(s, v.axis), lanes)) {
    return false;
  }
  for (const auto& [axis, amount] : spec.tiles) {
    if (!TryOpt(s, OptOp::kUpcast, FindAxis(s, axis), amount)) return false;
  }
  if (spec.unroll_window) {
    bool any = false;
    for (bool applied = true; applied;) {
      applied = false;
      for (const UOp* a : s.Axes()) {
        if (a->arg().axis_type == AxisType::kReduce && a->arg() != v.axis && SizeOf(a) > 1 &&
            SizeOf(a) <= 7 && TryOpt(s, OptOp::kUnroll, a, 0)) {
          applied = any = true;
          break;
        }
      }
    }
    if (!any) return false;
  }
  return true;
}

// Vector registers a tile needs at best: its accumulators, plus, while one step of the
// reduction multiplies values of two loads into them, the smaller set of values (the other
// is loaded one value at a time), plus that one.
int64_t RegistersNeeded(const Shape& shape, int64_t vectors_per_tile,
                        const std::vector<std::pair<const UOp*, int64_t>>& tile) {
  int64_t accumulators = vectors_per_tile;
  for (const auto& [axis, amount] : tile) accumulators *= amount;
  std::vector<int64_t> values;
  for (const Access& a : shape.accesses) {
    if (!Streamed(a, shape)) continue;
    int64_t n = 1;
    for (const auto& [axis, amount] : tile) {
      if (AffineCoefficient(a.index, axis) != 0) n *= amount;
    }
    values.push_back(n);
  }
  std::sort(values.begin(), values.end());
  return accumulators + (values.size() >= 2 ? values.front() : 0) + 1;
}

// Register tiles: amounts for up to two output axes whose loads are reused across them, that
// fit the vector registers.
std::vector<std::vector<std::pair<Arg, int64_t>>> TileChoices(const Shape& shape,
                                                              const VectorChoice& v,
                                                              int64_t vectors_per_tile,
                                                              int64_t registers) {
  std::vector<std::pair<const UOp*, std::vector<int64_t>>> axes;
  for (const UOp* a : shape.outputs) {
    if (a->arg() == v.axis) continue;
    const bool reused = std::any_of(
        shape.accesses.begin(), shape.accesses.end(),
        [&](const Access& x) { return Streamed(x, shape) && AffineCoefficient(x.index, a) == 0; });
    if (!reused) continue;
    std::vector<int64_t> amounts;
    for (int64_t u : {16, 14, 12, 8, 7, 6, 4, 3, 2}) {
      if (SizeOf(a) % u == 0 && u * vectors_per_tile < registers) amounts.push_back(u);
    }
    if (!amounts.empty()) axes.push_back({a, amounts});
  }
  // The fullest tiles that fit (a register left idle is reuse lost), at most kMaxTiles of them:
  // each candidate costs a lowering to estimate.
  std::vector<std::pair<int64_t, std::vector<std::pair<Arg, int64_t>>>> fitting;
  auto add = [&](std::vector<std::pair<const UOp*, int64_t>> tile) {
    const int64_t needed = RegistersNeeded(shape, vectors_per_tile, tile);
    if (needed > registers) return;
    std::vector<std::pair<Arg, int64_t>> spec;
    for (const auto& [axis, amount] : tile) spec.push_back({axis->arg(), amount});
    fitting.push_back({needed, std::move(spec)});
  };
  for (size_t i = 0; i < axes.size(); ++i) {
    for (int64_t u : axes[i].second) add({{axes[i].first, u}});
    for (size_t j = i + 1; j < axes.size(); ++j) {
      for (int64_t u : axes[i].second) {
        for (int64_t w : axes[j].second) add({{axes[i].first, u}, {axes[j].first, w}});
      }
    }
  }
  std::stable_sort(fitting.begin(), fitting.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::vector<std::pair<Arg, int64_t>>> out = {{}};
  for (size_t i = 0; i < fitting.size() && i < kMaxTiles; ++i) out.push_back(fitting[i].second);
  return out;
}

Shape ShapeOf(const Scheduler& s) {
  Shape shape;
  for (const UOp* a : s.Axes()) {
    if (SizeOf(a) <= 1) continue;
    if (a->arg().axis_type == AxisType::kLoop) shape.outputs.push_back(a);
    if (a->arg().axis_type == AxisType::kReduce) shape.reduces.push_back(a);
  }
  shape.accesses = AccessesOf(s.root());
  for (const Access& a : shape.accesses) {
    if (a.store) {
      shape.item = std::max(1, ScalarItemSize(a.dtype));
      break;
    }
  }
  shape.width = std::max(1, s.target().vector_bytes / std::min(shape.item, 4));
  return shape;
}

// The opt lists worth costing for this kernel, as functions that apply one to a scheduler.
struct Candidate {
  std::string origin;
  std::function<bool(Scheduler&)> apply;
  // THREAD up to the cores the kernel runs on (tinygrad's CPU_COUNT), not the most a client's
  // opts may name.
  bool real_cores = false;
};

std::vector<Candidate> CpuCandidates(const Scheduler& base) {
  std::vector<Candidate> out;
  out.push_back({"as written", [](Scheduler&) { return true; }});
  out.push_back({"first heuristic", [](Scheduler& s) {
                   FirstCpuHeuristic(s).Run();
                   return !s.applied().empty();
                 }});
  out.push_back({"tinygrad",
                 [](Scheduler& s) {
                   ApplyTinygradHeuristics(s);
                   return !s.applied().empty();
                 },
                 /*real_cores=*/true});
  const Shape shape = ShapeOf(base);
  const bool reduction = !shape.reduces.empty();
  const int64_t registers = std::max(4, base.target().vector_registers);
  for (const VectorChoice& v : VectorChoices(shape)) {
    // The reduce axes a convolution's window spans: unrolled, neighbouring loads are shared;
    // both ways when the window is large (7x7 writes 49 copies of the body).
    double window = 1;
    for (const UOp* r : shape.reduces) {
      if (r->arg() != v.axis && SizeOf(r) <= 7) window *= static_cast<double>(SizeOf(r));
    }
    std::vector<bool> unroll_window = {false};
    if (reduction && window > 1)
      unroll_window = window <= 9 ? std::vector<bool>{true} : std::vector<bool>{false, true};
    const int64_t lane_bytes = v.lanes * shape.item;
    const int64_t vectors = std::max<int64_t>(1, lane_bytes / base.target().vector_bytes);
    // Two vectors of lanes: two chains of partial sums (along a reduce axis), or two vectors
    // stored per iteration (elementwise); along an output axis of a reduction that is a tile.
    std::vector<int64_t> copies = {1};
    const int64_t padded = (v.size + v.lanes - 1) / v.lanes * v.lanes;
    if ((v.reduce || !reduction) && (padded / v.lanes) % 2 == 0 && v.lanes * 2 <= 32) {
      copies.push_back(2);
    }
    for (int64_t c : copies) {
      std::vector<std::vector<std::pair<Arg, int64_t>>> tiles = {{}};
      if (reduction) tiles = TileChoices(shape, v, vectors * c, registers);
      for (const auto& tile : tiles) {
        for (bool unroll : unroll_window) {
          TileSpec spec{v, c, tile, unroll};
          out.push_back({"tiles", [spec](Scheduler& s) { return BuildTiles(s, spec); }});
        }
      }
    }
  }
  return out;
}

}  // namespace

std::vector<RankedCandidate> RankCpuCandidates(const Scheduler& scheduler,
                                               std::shared_ptr<const KernelAst> as_written) {
  const std::shared_ptr<const KernelAst> base = scheduler.Finish();
  const size_t nodes = Toposort(base->root).size();
  std::vector<RankedCandidate> out;
  for (const Candidate& candidate : CpuCandidates(scheduler)) {
    OptTarget target = scheduler.target();
    if (candidate.real_cores) target.max_threads = std::max(1, target.cores);
    Scheduler s(*base, target);
    if (!candidate.apply(s)) continue;
    const std::vector<Opt>& opts = s.applied();
    // What the expansion writes out: candidates whose copies would make a huge program are
    // not worth lowering to cost.
    double copies = 1;
    for (const UOp* a : s.Axes()) {
      const AxisType type = a->arg().axis_type;
      if (type == AxisType::kUpcast || type == AxisType::kUnroll) copies *= SizeOf(a);
    }
    if (copies * static_cast<double>(nodes) > kMaxExpandedNodes) continue;
    if (std::any_of(out.begin(), out.end(),
                    [&](const RankedCandidate& c) { return c.opts == opts; })) {
      continue;
    }
    absl::StatusOr<CpuCost> cost = EstimateCpuKernelCost(
        opts.empty() ? (as_written != nullptr ? as_written : base) : s.Finish(/*hash=*/false),
        scheduler.target());
    if (!cost.ok()) continue;
    // A candidate must be clearly faster to be worth more opts (the model is rough).
    const double cycles = cost->Cycles() * (1.0 + 0.02 * static_cast<double>(opts.size()));
    out.push_back({opts, cycles, candidate.origin});
  }
  std::stable_sort(out.begin(), out.end(), [](const RankedCandidate& a, const RankedCandidate& b) {
    return a.cycles < b.cycles;
  });
  return out;
}

std::vector<std::vector<Opt>> HeuristicContenders(const Scheduler& scheduler,
                                                  std::shared_ptr<const KernelAst> as_written) {
  if (scheduler.target().has_local) return GpuHeuristicContenders(scheduler);
  if (Toposort(scheduler.root()).size() > kMaxRankedNodes) return {};
  const std::vector<RankedCandidate> ranked =
      OnCompileStack([&] { return RankCpuCandidates(scheduler, as_written); });
  if (ranked.empty()) return {{}};  // nothing costed: the kernel as written
  std::vector<std::vector<Opt>> out = {ranked.front().opts};
  const double best = ranked.front().cycles;
  if (best < kTimedCycles) return out;
  auto add = [&](const std::vector<Opt>& opts) {
    if (std::find(out.begin(), out.end(), opts) == out.end()) out.push_back(opts);
  };
  for (const RankedCandidate& c : ranked) {
    if (c.origin != "tinygrad" || c.cycles > kTimedRatio * best) continue;
    add(c.opts);
    // tinygrad ends its list with THREAD(0, n); the CPU runtime splits the outermost loop across
    // the same cores by itself, and the kernel without the extra loop level can be faster (a
    // max pool's gradient in the training step: 0.96 ms without, 1.18 ms with).
    std::vector<Opt> unthreaded = c.opts;
    while (!unthreaded.empty() && unthreaded.back().op == OptOp::kThread) unthreaded.pop_back();
    add(unthreaded);
  }
  return out;
}

namespace {

void ApplyCpuHeuristics(Scheduler& scheduler, std::shared_ptr<const KernelAst> as_written) {
  // Costing lowers every candidate: for kernels far larger than any a framework schedules, the
  // first heuristic alone keeps optimizing cheap.
  if (Toposort(scheduler.root()).size() > kMaxRankedNodes) {
    FirstCpuHeuristic(scheduler).Run();
    return;
  }
  // The lowering recurses over expression chains as deep as the IR allows.
  const std::vector<RankedCandidate> ranked =
      OnCompileStack([&] { return RankCpuCandidates(scheduler, as_written); });
  if (ranked.empty()) return;
  for (const Opt& opt : ranked.front().opts) {
    if (!scheduler.Apply(opt).ok()) return;  // cannot happen: the same opts on the same AST
  }
}

}  // namespace

void ApplyHeuristics(Scheduler& scheduler, std::shared_ptr<const KernelAst> as_written) {
  if (scheduler.target().has_local) {
    ApplyGpuHeuristics(scheduler);
    return;
  }
  ApplyCpuHeuristics(scheduler, std::move(as_written));
}

}  // namespace uopd
