#include "core/codegen/consecutive_loads.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "core/codegen/const_value.h"

namespace uopd {
namespace {

// A load's element as (base, offset): ADD(x, constant) is x + the constant, anything else
// itself + 0.
std::pair<int, int64_t> ElementOf(const LinearProgram& p, int index) {
  const Instr& in = p.instrs[index];
  if (in.kind == InstrKind::kAlu && in.op == Op::kAdd && in.src.size() == 2) {
    for (int side = 0; side < 2; ++side) {
      const Instr& c = p.instrs[in.src[side]];
      if (c.kind == InstrKind::kConst && c.dtype.count == 1) {
        return {in.src[1 - side], DecodeConst(c, p.index_bits).as_int()};
      }
    }
  }
  return {index, 0};
}

bool IsScalarLoad(const Instr& in) {
  return in.kind == InstrKind::kLoad && in.dtype.count == 1 && in.dtype.scalar != Scalar::kBool;
}

// Whether a load may be moved across `in`: register work only.
bool LoadMayCross(const Instr& in) {
  switch (in.kind) {
    case InstrKind::kStore:
    case InstrKind::kCheckBounds:
    case InstrKind::kLoopBegin:
    case InstrKind::kLoopEnd:
    case InstrKind::kGlobalIndex:
    case InstrKind::kThreadIndex:
    case InstrKind::kSharedStore:
    case InstrKind::kBarrier:
      return false;
    default:
      return true;
  }
}

struct LoadRun {
  std::vector<int> loads;  // lane order
  int last = 0;            // position of the run's last load in the program
};

class Fuser {
 public:
  Fuser(const LinearProgram& p, int max_bytes) : p_(p), max_bytes_(max_bytes) {}

  LinearProgram Run() {
    FindRuns();
    if (runs_.empty()) return p_;
    LinearProgram out = p_;
    out.instrs.clear();
    std::vector<int> map(p_.instrs.size(), -1);
    absl::flat_hash_map<int, int> run_ending_at;  // position -> run
    for (size_t r = 0; r < runs_.size(); ++r) run_ending_at[runs_[r].last] = static_cast<int>(r);
    for (size_t i = 0; i < p_.instrs.size(); ++i) {
      auto ends = run_ending_at.find(static_cast<int>(i));
      if (ends == run_ending_at.end()) {
        // Read by its run's vector load, at the run's last load.
        if (claimed_.contains(static_cast<int>(i))) continue;
        Instr copy = p_.instrs[i];
        for (int& s : copy.src) s = map[s];
        out.instrs.push_back(std::move(copy));
        map[i] = static_cast<int>(out.instrs.size()) - 1;
        continue;
      }
      const LoadRun& run = runs_[ends->second];
      Instr vector = p_.instrs[run.loads[0]];
      vector.dtype.count = static_cast<int>(run.loads.size());
      for (int& s : vector.src) s = map[s];
      out.instrs.push_back(std::move(vector));
      const int at = static_cast<int>(out.instrs.size()) - 1;
      for (size_t lane = 0; lane < run.loads.size(); ++lane) {
        const Instr& load = p_.instrs[run.loads[lane]];
        out.instrs.push_back(Instr{.kind = InstrKind::kExtract,
                                   .dtype = load.dtype,
                                   .src = {at},
                                   .lane = static_cast<int>(lane),
                                   .origin = load.origin});
        map[run.loads[lane]] = static_cast<int>(out.instrs.size()) - 1;
      }
    }
    return out;
  }

 private:
  void FindRuns() {
    // First use of each instruction, to keep a load from moving past one.
    first_use_.assign(p_.instrs.size(), static_cast<int>(p_.instrs.size()));
    for (size_t i = 0; i < p_.instrs.size(); ++i) {
      for (int s : p_.instrs[i].src) first_use_[s] = std::min(first_use_[s], static_cast<int>(i));
    }
    // Prefix counts of the instructions no load may cross.
    barriers_.assign(p_.instrs.size() + 1, 0);
    for (size_t i = 0; i < p_.instrs.size(); ++i)
      barriers_[i + 1] = barriers_[i] + !LoadMayCross(p_.instrs[i]);
    for (const Instr& build : p_.instrs) {
      if (build.kind != InstrKind::kBuild) continue;
      for (size_t lane = 0; lane < build.src.size();) lane += TryRun(build.src, lane);
    }
  }

  // Claims the longest fusable run starting at `lanes[from]`; the lanes it covers (1: none).
  size_t TryRun(const std::vector<int>& lanes, size_t from) {
    const int first = lanes[from];
    const Instr& head = p_.instrs[first];
    if (!IsScalarLoad(head) || claimed_.contains(first)) return 1;
    const auto [base, offset] = ElementOf(p_, head.src[0]);
    const int size = ScalarItemSize(head.dtype.scalar);
    std::vector<int> run = {first};
    for (size_t lane = from + 1; lane < lanes.size(); ++lane) {
      const Instr& next = p_.instrs[lanes[lane]];
      if (!IsScalarLoad(next) || claimed_.contains(lanes[lane]) || next.slot != head.slot ||
          !(next.dtype == head.dtype) || next.src.size() != head.src.size() ||
          (head.src.size() > 1 && next.src[1] != head.src[1]) ||
          std::find(run.begin(), run.end(), lanes[lane]) != run.end()) {
        break;
      }
      if (ElementOf(p_, next.src[0]) != std::pair{base, offset + static_cast<int64_t>(run.size())})
        break;
      run.push_back(lanes[lane]);
    }
    // The widest power of two that fits, and whose loads can meet at the last of them.
    size_t width = 1;
    while (width * 2 <= run.size() && static_cast<int>(width * 2) * size <= max_bytes_) width *= 2;
    for (; width >= 2; width /= 2) {
      const auto [lo, hi] = std::minmax_element(run.begin(), run.begin() + width);
      const bool crosses_nothing = barriers_[*hi + 1] == barriers_[*lo];
      const bool unused_before = std::all_of(run.begin(), run.begin() + width,
                                             [&](int load) { return first_use_[load] > *hi; });
      if (crosses_nothing && unused_before) break;
    }
    if (width < 2) return 1;
    LoadRun fused{std::vector<int>(run.begin(), run.begin() + width), 0};
    fused.last = *std::max_element(fused.loads.begin(), fused.loads.end());
    for (int load : fused.loads) claimed_.insert(load);
    runs_.push_back(std::move(fused));
    return width;
  }

  const LinearProgram& p_;
  const int max_bytes_;
  std::vector<int> first_use_;
  std::vector<int> barriers_;
  std::vector<LoadRun> runs_;
  absl::flat_hash_set<int> claimed_;  // loads read by a run's vector load instead
};

}  // namespace

LinearProgram FuseConsecutiveLoads(const LinearProgram& program, int max_bytes) {
  return Fuser(program, max_bytes).Run();
}

}  // namespace uopd
