#include "core/opt/heuristic.h"

#include <algorithm>

#include "core/ir/affine.h"
#include "core/ir/value_range.h"

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

class CpuHeuristics {
 public:
  explicit CpuHeuristics(Scheduler& s) : s_(s) {}

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
        Try(OptOp::kUpcast, contiguous_out, width);
      }
      return;
    }
    // Along the outputs: vector accumulators over the contiguous output axis.
    if (contiguous_out != nullptr && ReusedOrContiguous(contiguous_out, reduces, accesses)) {
      const Arg vector_axis = contiguous_out->arg();
      if (SizeOf(contiguous_out) % width != 0 && SizeOf(contiguous_out) > width) {
        Try(OptOp::kPadTo, contiguous_out, width);
      }
      if (!Try(OptOp::kUpcast, Find(vector_axis), width)) return;
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
      const UOp* vector_now = Find(vector_axis);
      for (int64_t k : {16, 8, 4, 2}) {
        if (row_amount * k <= budget && vector_now != nullptr && SizeOf(vector_now) % k == 0 &&
            SizeOf(vector_now) / k >= 1) {
          if (Try(OptOp::kUpcast, vector_now, k)) break;
        }
      }
      if (rows != nullptr && row_amount > 1) Try(OptOp::kUpcast, Find(row_axis), row_amount);
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
            Try(OptOp::kUnroll, contiguous_reduce, amount)) {
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

  const UOp* Find(const Arg& arg) const {
    for (const UOp* a : s_.Axes()) {
      if (a->arg() == arg) return a;
    }
    return nullptr;
  }

  // Applies op on `axis` by `amount`; false (nothing applied) when it does not apply.
  bool Try(OptOp op, const UOp* axis, int64_t amount) {
    if (axis == nullptr) return false;
    const std::vector<const UOp*> axes = s_.Axes();
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
    return s_.Apply(opt).ok();
  }

  Scheduler& s_;
};

}  // namespace

void ApplyHeuristics(Scheduler& scheduler) {
  if (scheduler.target().has_local) return;  // GPUs: not yet
  CpuHeuristics(scheduler).Run();
}

}  // namespace uopd
