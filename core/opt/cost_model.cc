#include "core/opt/cost_model.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "core/codegen/const_value.h"
#include "core/codegen/pipeline.h"
#include "core/ir/value_range.h"
#include "core/util/status_macros.h"

namespace uopd {
namespace {

// Throughput costs, in cycles of one core (see the header): per 32-byte vector chunk.
constexpr double kFloatOp = 0.5;  // two FP pipes
constexpr double kIntOp = 0.25;   // four integer ALUs (scalar index arithmetic)
constexpr double kVectorIntOp = 0.33;
constexpr double kDivide = 4.0;        // FDIV, RECIPROCAL, SQRT per chunk
constexpr double kLoad = 0.5;          // two loads a cycle
constexpr double kStore = 1.0;         // one store a cycle
constexpr double kLoopOverhead = 1.0;  // increment, compare, branch
constexpr double kEmulated = 8.0;      // a small-float operation through the support library
constexpr double kLibmCall = 20.0;     // SIN and other calls, per lane
constexpr double kIntDivide = 20.0;    // IDIV/MOD by a variable, per lane
// A dependent floating-point add, over the 4 partial sums LLVM interleaves a reassociable
// reduction loop into.
constexpr double kAddLatency = 4.0 / 4;
constexpr double kSpill = 2.0;  // a spilled accumulator: a load and a store per iteration
constexpr double kParallelLaunch = 15000;  // waking the pool's threads (~5 us)
constexpr int64_t kPage = 4096;
constexpr double kFarAccess = 8.0;          // a page-crossing access, with the misses overlapped
constexpr double kCacheResident = 1 << 20;  // bytes of a core's L2

int ValueBytes(const LinearProgram& p, const DType& d) {
  int item = d.scalar == Scalar::kIndex  ? p.index_bits / 8
             : d.scalar == Scalar::kBool ? 1
                                         : std::max(1, ScalarItemSize(d.scalar));
  return item * std::max(1, d.count);
}

double Chunks(const LinearProgram& p, const DType& d) {
  return std::max(1.0, std::ceil(ValueBytes(p, d) / 32.0));
}

bool IsFloatValue(const DType& d) { return IsFloat(d.scalar); }

int ItemBytes(const BufferParam& b) { return std::max(1, ScalarItemSize(b.dtype.scalar)); }

double BufferBytes(const BufferParam& b) {
  return static_cast<double>(std::max<int64_t>(0, b.size)) * ItemBytes(b);
}

double AluCost(const LinearProgram& p, const Instr& in) {
  const DType& operand = in.src.empty() ? in.dtype : p.instrs[in.src[0]].dtype;
  // Affine index arithmetic becomes induction variables and addressing modes.
  if (in.dtype.scalar == Scalar::kIndex &&
      (in.op == Op::kAdd || in.op == Op::kSub || in.op == Op::kMul || in.op == Op::kShl)) {
    return 0;
  }
  const int lanes = std::max(1, std::max(in.dtype.count, operand.count));
  if (IsNarrowFloat(in.dtype.scalar) || IsNarrowFloat(operand.scalar)) return kEmulated * lanes;
  const double chunks = std::max(Chunks(p, in.dtype), Chunks(p, operand));
  switch (in.op) {
    case Op::kFdiv:
    case Op::kReciprocal:
    case Op::kSqrt:
      return kDivide * chunks;
    case Op::kExp2:
    case Op::kLog2:
    case Op::kSin:
    case Op::kPow:
      return kLibmCall * lanes;
    case Op::kIdiv:
    case Op::kMod: {
      const Instr* divisor = in.src.size() == 2 ? &p.instrs[in.src[1]] : nullptr;
      if (divisor != nullptr && divisor->kind == InstrKind::kBroadcast) {
        divisor = &p.instrs[divisor->src[0]];
      }
      // By a constant: a multiply and shifts (a few vector ops).
      const bool by_constant = divisor != nullptr && divisor->kind == InstrKind::kConst;
      return by_constant ? 2 * kVectorIntOp * chunks : kIntDivide * lanes;
    }
    default:
      break;
  }
  if (IsFloatValue(operand) || IsFloatValue(in.dtype)) return kFloatOp * chunks;
  return lanes > 1 ? kVectorIntOp * chunks : kIntOp;
}

// Whether a masked vector access is written lane by lane: the LLVM renderer does so for masked
// accesses wider than 32 bytes on x86 without AVX-512 (LlvmRendererOptions::
// max_masked_vector_bits, set by CreateCpuDevice), which the target's 32-byte vectors stand for.
bool MaskedLaneByLane(const LinearProgram& p, const Instr& access, const OptTarget& target) {
  const DType& value = AccessedType(p, access);
  return IsMaskedAccess(access) && value.count > 1 && target.vector_bytes == 32 &&
         ValueBytes(p, value) > 32;
}

double InstrCost(const LinearProgram& p, const Instr& in, const OptTarget& target) {
  const int lanes = std::max(1, in.dtype.count);
  if ((in.kind == InstrKind::kLoad || in.kind == InstrKind::kStore) &&
      MaskedLaneByLane(p, in, target)) {
    // Per lane: the mask's lane, a select of the index (or a branch), a scalar access; and the
    // lanes' insertion into a vector.
    return AccessedType(p, in).count *
           ((in.kind == InstrKind::kLoad ? kLoad : kStore) + 3 * kIntOp);
  }
  switch (in.kind) {
    case InstrKind::kConst:
    case InstrKind::kVar:
    case InstrKind::kAccRead:
    case InstrKind::kLoopEnd:
    case InstrKind::kGlobalIndex:
    case InstrKind::kThreadIndex:
    case InstrKind::kSharedDefine:
    case InstrKind::kRegDefine:
    case InstrKind::kBarrier:
      return 0;
    case InstrKind::kArrayLoad:
      return kLoad;
    case InstrKind::kArrayStore:
      return kStore;
    case InstrKind::kWmma:  // one instruction for the warp's K products
    case InstrKind::kWmmaInto:
      return kLoad;
    case InstrKind::kAlu:
      return AluCost(p, in);
    case InstrKind::kCast:
    case InstrKind::kBitcast: {
      const DType& from = p.instrs[in.src[0]].dtype;
      if (IsNarrowFloat(in.dtype.scalar) || IsNarrowFloat(from.scalar)) return kEmulated * lanes;
      return kFloatOp * std::max(Chunks(p, in.dtype), Chunks(p, from));
    }
    case InstrKind::kLoad:
      return kLoad * Chunks(p, in.dtype) + (lanes > 1 && in.src.size() > 1 ? kLoad : 0.0);
    case InstrKind::kStore: {
      const DType& value = p.instrs[in.src[1]].dtype;
      const int value_lanes = std::max(1, value.count);
      return kStore * Chunks(p, value) + (value_lanes > 1 && in.src.size() > 2 ? kStore : 0.0);
    }
    case InstrKind::kCheckBounds:
      return 2 * kIntOp;
    case InstrKind::kAccDefine:
      return kIntOp * Chunks(p, in.dtype);
    case InstrKind::kAccUpdate:
      if (IsNarrowFloat(in.dtype.scalar)) return kEmulated * lanes;
      return (IsFloatValue(in.dtype) ? kFloatOp : kVectorIntOp) * Chunks(p, in.dtype);
    case InstrKind::kLoopBegin:
      return kLoopOverhead;
    case InstrKind::kBroadcast: {
      // A broadcast load is one load; an index broadcast feeds an address.
      const Instr& from = p.instrs[in.src[0]];
      if (from.kind == InstrKind::kLoad || from.kind == InstrKind::kConst ||
          in.dtype.scalar == Scalar::kIndex) {
        return 0;
      }
      return kFloatOp;
    }
    case InstrKind::kExtract:
      return in.dtype.scalar == Scalar::kIndex ? 0 : kFloatOp;
    case InstrKind::kBuild:
      return kFloatOp * lanes;
    case InstrKind::kHReduce: {
      const int src_lanes = std::max(1, p.instrs[in.src[0]].dtype.count);
      return 2 * kFloatOp * std::ceil(std::log2(static_cast<double>(src_lanes)) + 1);
    }
  }
  return 0;
}

// Value numbers: equal for values LLVM finds equal once it has folded constants (GVN), so a
// load or an operation the lowering repeats (neighbouring rows of a convolution's window, read
// by several output rows) is counted once per loop iteration. Index values are numbered by
// their affine form over loop counters and variables (vector indices by their first lane, the
// address a vector load uses).
class ValueNumbers {
 public:
  explicit ValueNumbers(const LinearProgram& p)
      : p_(p), vn_(p.instrs.size(), -1), affine_(p.instrs.size()) {}

  int Number(size_t i, int store_epoch) {
    const Instr& in = p_.instrs[i];
    Key key;
    if (std::optional<Affine> a = AffineOf(i); a.has_value()) {
      affine_[i] = a;
      key.affine = true;
      for (const auto& [var, k] : a->terms) {
        key.src.push_back(var);
        key.src.push_back(k);
      }
      key.arg = a->constant;
    } else {
      switch (in.kind) {
        case InstrKind::kAccDefine:
        case InstrKind::kAccUpdate:
        case InstrKind::kAccRead:
        case InstrKind::kStore:
        case InstrKind::kCheckBounds:
        case InstrKind::kLoopBegin:
        case InstrKind::kLoopEnd:
        case InstrKind::kVar:
        case InstrKind::kGlobalIndex:
        case InstrKind::kThreadIndex:
        case InstrKind::kSharedDefine:
        case InstrKind::kRegDefine:
        case InstrKind::kArrayLoad:
        case InstrKind::kArrayStore:
        case InstrKind::kBarrier:
        case InstrKind::kWmma:
        case InstrKind::kWmmaInto:
          key.unique = static_cast<int64_t>(i) + 1;  // never the same as another
          break;
        default:
          key.kind = static_cast<int>(in.kind);
          key.op = static_cast<int>(in.op);
          key.scalar = static_cast<int>(in.dtype.scalar);
          key.count = in.dtype.count;
          key.slot = in.slot;
          key.lane = in.lane;
          if (in.kind == InstrKind::kConst) {
            key.arg = static_cast<int64_t>(absl::HashOf(in.arg));
          }
          if (in.kind == InstrKind::kLoad) key.epoch = store_epoch;
          for (int s : in.src) key.src.push_back(vn_[s]);
      }
    }
    auto [it, inserted] = table_.emplace(std::move(key), static_cast<int>(table_.size()));
    vn_[i] = it->second;
    return it->second;
  }

 private:
  struct Affine {
    std::map<int, int64_t> terms;  // loop counter or variable instruction -> coefficient
    int64_t constant = 0;
    std::vector<int64_t> lanes;  // vectors: each lane's offset from lane 0 (empty: scalar)
  };

  std::optional<Affine> AffineOf(size_t i) const {
    const Instr& in = p_.instrs[i];
    if (in.dtype.scalar != Scalar::kIndex) return std::nullopt;
    auto of = [&](int s) -> std::optional<Affine> { return affine_[s]; };
    switch (in.kind) {
      case InstrKind::kConst: {
        Affine a{{}, static_cast<int64_t>(DecodeConst(in, p_.index_bits).as_int()), {}};
        for (int lane = 0; in.dtype.count > 1 && lane < in.dtype.count; ++lane) {
          a.lanes.push_back(static_cast<int64_t>(DecodeConst(in, p_.index_bits, lane).as_int()) -
                            a.constant);
        }
        return a;
      }
      case InstrKind::kLoopBegin:
      case InstrKind::kVar:
        return Affine{{{static_cast<int>(i), 1}}, 0};
      case InstrKind::kBroadcast: {
        std::optional<Affine> a = of(in.src[0]);
        if (a.has_value()) a->lanes.assign(in.dtype.count, 0);
        return a;
      }
      case InstrKind::kExtract: {
        std::optional<Affine> a = of(in.src[0]);
        if (!a.has_value() || (in.lane != 0 && static_cast<size_t>(in.lane) >= a->lanes.size())) {
          return std::nullopt;
        }
        if (in.lane != 0) a->constant += a->lanes[in.lane];
        a->lanes.clear();
        return a;
      }
      case InstrKind::kAlu: {
        if (in.src.size() != 2) return std::nullopt;
        std::optional<Affine> a = of(in.src[0]), b = of(in.src[1]);
        if (!a.has_value() || !b.has_value()) return std::nullopt;
        if (!a->lanes.empty() && !b->lanes.empty() && a->lanes.size() != b->lanes.size()) {
          return std::nullopt;
        }
        if (in.op == Op::kAdd || in.op == Op::kSub) {
          const int64_t sign = in.op == Op::kAdd ? 1 : -1;
          for (const auto& [var, k] : b->terms) {
            if ((a->terms[var] += sign * k) == 0) a->terms.erase(var);
          }
          a->constant += sign * b->constant;
          if (a->lanes.empty()) a->lanes.assign(b->lanes.size(), 0);
          for (size_t l = 0; l < b->lanes.size(); ++l) a->lanes[l] += sign * b->lanes[l];
          return a;
        }
        if (in.op == Op::kMul) {
          if (!b->terms.empty()) std::swap(a, b);
          // A constant factor, the same in every lane.
          if (!b->terms.empty() ||
              std::any_of(b->lanes.begin(), b->lanes.end(), [](int64_t l) { return l != 0; })) {
            return std::nullopt;
          }
          for (auto& [var, k] : a->terms) k *= b->constant;
          a->constant *= b->constant;
          for (int64_t& l : a->lanes) l *= b->constant;
          return a;
        }
        return std::nullopt;
      }
      default:
        return std::nullopt;
    }
  }

  // The distance between the elements lanes of gather `build` read, when its lanes are loads of
  // one buffer at evenly spaced affine indices (an interleaved access LLVM lowers to a few
  // vector loads and shuffles); 0 otherwise.
 public:
  // How far (in elements) the index of access `instr` moves per iteration of the loop begun by
  // `loop`, when its index is affine; nullopt otherwise.
  std::optional<int64_t> StrideAlong(const Instr& access, int loop) const {
    const std::optional<Affine>& a = affine_[access.src[0]];
    if (!a.has_value()) return std::nullopt;
    auto it = a->terms.find(loop);
    return it == a->terms.end() ? 0 : it->second;
  }

  int64_t BuildStride(const Instr& build) const {
    if (build.src.size() < 2) return 0;
    int slot = -1;
    std::optional<Affine> first;
    int64_t stride = 0;
    for (size_t l = 0; l < build.src.size(); ++l) {
      const Instr& load = p_.instrs[build.src[l]];
      if (load.kind != InstrKind::kLoad || (slot >= 0 && load.slot != slot)) return 0;
      slot = load.slot;
      const std::optional<Affine>& a = affine_[load.src[0]];
      if (!a.has_value()) return 0;
      if (l == 0) {
        first = a;
        continue;
      }
      if (a->terms != first->terms) return 0;
      const int64_t d = a->constant - first->constant;
      if (l == 1) stride = d;
      if (d != stride * static_cast<int64_t>(l)) return 0;
    }
    return stride;
  }

 private:
  // What makes two instructions the same value.
  struct Key {
    bool affine = false;
    int64_t unique = 0;
    int kind = 0, op = 0, scalar = 0, count = 0, slot = 0, lane = 0, epoch = 0;
    int64_t arg = 0;
    std::vector<int64_t> src;  // value numbers, or (variable, coefficient) pairs when affine
    friend bool operator==(const Key& a, const Key& b) {
      return a.affine == b.affine && a.unique == b.unique && a.kind == b.kind && a.op == b.op &&
             a.scalar == b.scalar && a.count == b.count && a.slot == b.slot && a.lane == b.lane &&
             a.epoch == b.epoch && a.arg == b.arg && a.src == b.src;
    }
    template <typename H>
    friend H AbslHashValue(H h, const Key& k) {
      return H::combine(std::move(h), k.affine, k.unique, k.kind, k.op, k.scalar, k.count, k.slot,
                        k.lane, k.epoch, k.arg, k.src);
    }
  };

  const LinearProgram& p_;
  std::vector<int> vn_;
  std::vector<std::optional<Affine>> affine_;
  absl::flat_hash_map<Key, int> table_;
};

struct Loop {
  int begin;        // the kLoopBegin instruction
  double trips;     // iterations per entry (per thread for the split loop)
  double body = 0;  // throughput cycles of one iteration, counting only what varies with it
  absl::flat_hash_map<int, int> updates;  // accumulator -> updates per iteration
  absl::flat_hash_set<int> computed;      // value numbers computed in one iteration
  absl::flat_hash_set<int> far_slots;     // buffers read or written a page or more apart
  bool innermost = true;
};

// Iterations of a loop over `range` (its size: constant, else the middle of its bounds).
double TripsOf(const UOp* range, ValueRanges& ranges) {
  if (range == nullptr) return 16;
  const UOp* size = range->src(0);
  if (size->IsConst()) return std::max<double>(0, static_cast<double>(ConstIntValue(*size)));
  Interval bounds = ranges.Get(size);
  const double lo = static_cast<double>(std::max<Int128>(0, bounds.min));
  const double hi = static_cast<double>(std::min<Int128>(bounds.max, Int128{1} << 40));
  return std::max(1.0, (lo + hi) / 2);
}

double MemoryBytesPerCycle(double footprint, int threads) {
  if (footprint <= (1 << 20) * threads) return 32.0 * threads;  // in the cores' L2
  if (footprint <= 32.0 * (1 << 20)) return 16.0 * threads;     // in L3
  return 8.0;                                                   // DRAM, shared
}

// The threads a split kernel runs on: the target's cores, at most one per outer iteration.
int ThreadsOf(const LinearProgram& p, const OptTarget& target, ValueRanges& ranges) {
  if (!p.parallel) return 1;
  const double extent = p.parallel_extent.expr != nullptr
                            ? TripsOf(nullptr, ranges)
                            : static_cast<double>(p.parallel_extent.constant);
  return static_cast<int>(std::max(1.0, std::min<double>(target.cores, extent)));
}

// Gathers at a small constant stride (a strided convolution's input row) cost a few vector
// loads and shuffles, not a load per lane: cost[i] of such a build (-1 for other
// instructions), and lane[i] for the loads it reads as its lanes (free).
struct StridedGatherCosts {
  std::vector<double> cost;
  std::vector<bool> lane;
};

StridedGatherCosts CostStridedGathers(const LinearProgram& p, ValueNumbers& numbers) {
  StridedGatherCosts out{std::vector<double>(p.instrs.size(), -1),
                         std::vector<bool>(p.instrs.size(), false)};
  for (size_t i = 0; i < p.instrs.size(); ++i) {
    const Instr& in = p.instrs[i];
    if (in.kind != InstrKind::kBuild) continue;
    const int64_t stride = std::abs(numbers.BuildStride(in));
    if (stride == 0 || stride > 4) continue;
    // Masked lanes are read as masked loads of the span when their masks are one vector's lanes
    // (the LLVM renderer's strided loads), with a shuffle of the mask per load; otherwise lane by
    // lane.
    const bool masked = std::any_of(in.src.begin(), in.src.end(),
                                    [&](int lane) { return IsMaskedAccess(p.instrs[lane]); });
    if (masked && LanesMask(p, in) < 0) continue;
    out.cost[i] = static_cast<double>(stride) * (kLoad + kFloatOp + (masked ? kIntOp : 0)) *
                  Chunks(p, in.dtype);
    for (int s : in.src) out.lane[s] = true;
  }
  return out;
}

// A finished loop's time for all its iterations: its body, or for an innermost loop the chain
// of dependent accumulator updates if longer, plus spills past the register file.
double LoopTime(const Loop& loop, int registers) {
  double it = loop.body;
  if (loop.innermost) {
    int chain = 0;
    for (const auto& [acc, n] : loop.updates) chain = std::max(chain, n);
    it = std::max(it, kAddLatency * chain);
    const int live = static_cast<int>(loop.updates.size());
    if (live > registers - 4) it += kSpill * (live - (registers - 4));
  }
  return it * loop.trips;
}

}  // namespace

double CpuCost::Cycles() const {
  return std::max(compute_cycles, memory_cycles) + 0.1 * std::min(compute_cycles, memory_cycles);
}

CpuCost EstimateCpuCost(const LinearProgram& p, const OptTarget& target, std::string* trace) {
  ValueRanges ranges;
  const int registers = std::max(8, target.vector_registers);
  const int threads = ThreadsOf(p, target, ranges);
  // depth[i]: how many of the enclosing loops instruction i's value varies with.
  std::vector<int> depth(p.instrs.size(), 0);
  std::vector<Loop> stack;
  std::vector<double> trips_at = {1.0};  // trips_at[d]: runs of something at depth d
  double total = 0;  // cycles of straight-line code and of finished top-level loops
  bool first_loop = true;
  ValueNumbers numbers(p);
  std::vector<int> number(p.instrs.size());
  for (size_t i = 0, store_epoch = 0; i < p.instrs.size(); ++i) {
    if (p.instrs[i].kind == InstrKind::kStore) ++store_epoch;
    number[i] = numbers.Number(i, static_cast<int>(store_epoch));
  }
  const StridedGatherCosts strided = CostStridedGathers(p, numbers);
  absl::flat_hash_set<int> computed_outside;  // value numbers of straight-line code
  // Each loop's body is charged per iteration; what a loop at depth d contains but does not
  // vary with is charged to the shallower loop it varies with.
  for (size_t i = 0; i < p.instrs.size(); ++i) {
    const Instr& in = p.instrs[i];
    int d = 0;
    for (int s : in.src) d = std::max(d, depth[s]);
    const int here = static_cast<int>(stack.size());
    switch (in.kind) {
      case InstrKind::kLoopBegin: {
        Loop loop;
        loop.begin = static_cast<int>(i);
        loop.trips = TripsOf(in.origin, ranges);
        if (p.parallel && first_loop) loop.trips = std::ceil(loop.trips / threads);
        first_loop = false;
        if (!stack.empty()) stack.back().innermost = false;
        stack.push_back(std::move(loop));
        trips_at.push_back(trips_at.back() * stack.back().trips);
        depth[i] = static_cast<int>(stack.size());
        stack.back().body += kLoopOverhead;
        continue;
      }
      case InstrKind::kLoopEnd: {
        Loop loop = std::move(stack.back());
        stack.pop_back();
        trips_at.pop_back();
        // The loop runs once per iteration of its parent (or once at top level): its body's
        // time is part of the parent's iteration.
        const double iteration_time = LoopTime(loop, registers);
        if (trace != nullptr) {
          absl::StrAppend(trace, std::string(2 * stack.size(), ' '), "loop of ", loop.trips,
                          " iterations: ", loop.body, " cycles each -> ", iteration_time, "\n");
        }
        if (stack.empty()) {
          total += iteration_time;
        } else {
          stack.back().body += iteration_time;
        }
        continue;
      }
      case InstrKind::kAccUpdate:
      case InstrKind::kStore:
      case InstrKind::kCheckBounds:
      case InstrKind::kAccDefine:
      case InstrKind::kAccRead:
        d = here;
        break;
      default:
        break;
    }
    depth[i] = d;
    // Computed already where this runs (in this iteration or outside the loops): free.
    bool repeated = computed_outside.contains(number[i]);
    for (const Loop& loop : stack) repeated = repeated || loop.computed.contains(number[i]);
    if (repeated) continue;
    (stack.empty() ? computed_outside : stack.back().computed).insert(number[i]);
    const double cost = strided.lane[i]        ? 0.0
                        : strided.cost[i] >= 0 ? strided.cost[i]
                                               : InstrCost(p, in, target);
    if (cost == 0) continue;
    if (trace != nullptr) {
      absl::StrAppend(trace, std::string(2 * here, ' '), i, " ", InstrKindName(in.kind),
                      in.kind == InstrKind::kAlu ? absl::StrCat(" ", OpName(in.op)) : "", " x",
                      std::max(1, in.dtype.count), " varies with ", d, "/", here, ": ", cost,
                      d < here && d > 0
                          ? absl::StrCat(" (hoisted: ", cost * trips_at[d] / trips_at[here], ")")
                          : "",
                      "\n");
    }
    if (d == 0) {
      total += cost;
    } else if (d == here) {
      stack.back().body += cost;
    } else {
      // Hoisted out of the loops it does not vary with: it runs once per iteration of loop d,
      // i.e. (trips of loops d+1..here) times less often than this loop's body.
      stack.back().body += cost * trips_at[d] / trips_at[here];
    }
    if (in.kind == InstrKind::kAccUpdate && !stack.empty() && IsFloat(in.dtype.scalar)) {
      ++stack.back().updates[in.src[0]];
    }
    // An access that moves a page or more each iteration through a buffer too large for the
    // caches walks memory no prefetcher follows (a column sum reading one vector per row): a
    // TLB walk and a miss each time, shared by the accesses of one buffer.
    if ((in.kind == InstrKind::kLoad || in.kind == InstrKind::kStore) && !stack.empty() &&
        d == here) {
      const std::optional<int64_t> stride = numbers.StrideAlong(in, stack.back().begin);
      const BufferParam& buffer = p.Global(in.slot);
      if (stride.has_value() && std::abs(*stride) * ItemBytes(buffer) >= kPage &&
          BufferBytes(buffer) > kCacheResident * threads &&
          stack.back().far_slots.insert(in.slot).second) {
        stack.back().body += kFarAccess;
      }
    }
  }
  CpuCost cost;
  cost.compute_cycles = total + (p.parallel ? kParallelLaunch : 0);
  double footprint = 0;
  for (const BufferParam& b : p.globals) footprint += BufferBytes(b);
  cost.memory_cycles = footprint / MemoryBytesPerCycle(footprint, threads);
  return cost;
}

absl::StatusOr<CpuCost> EstimateCpuKernelCost(std::shared_ptr<const KernelAst> ast,
                                              const OptTarget& target, std::string* trace) {
  UOPD_ASSIGN_OR_RETURN(LinearKernel lowered,
                        LowerToLinear(std::move(ast), "cost", CodegenTarget::CpuLoops()));
  return EstimateCpuCost(lowered.program, target, trace);
}

}  // namespace uopd
