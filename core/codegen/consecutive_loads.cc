#include "core/codegen/consecutive_loads.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "core/codegen/const_value.h"

namespace uopd {
namespace {

// A load's element as (base, offset): ADD(x, constant) is x + the constant (INDEX arithmetic:
// a narrower type wraps), anything else itself + 0.
std::pair<int, int64_t> ElementOf(const LinearProgram& p, int index) {
  const Instr& in = p.instrs[index];
  if (in.kind == InstrKind::kAlu && in.op == Op::kAdd && in.src.size() == 2 &&
      in.dtype.scalar == Scalar::kIndex) {
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
    case InstrKind::kArrayStore:
    case InstrKind::kBarrier:
      return false;
    default:
      return true;
  }
}

class Fuser {
 public:
  Fuser(const LinearProgram& p, int max_bytes) : p_(p), max_bytes_(max_bytes) {}

  LinearProgram Run() {
    FindRuns();
    if (runs_.empty()) return p_;
    LinearProgram out = p_;
    out.instrs.clear();
    std::vector<int> map(p_.instrs.size(), -1);
    absl::flat_hash_map<int, int> run_starting_at;  // lane 0's position -> run
    for (size_t r = 0; r < runs_.size(); ++r) run_starting_at[runs_[r][0]] = static_cast<int>(r);
    for (size_t i = 0; i < p_.instrs.size(); ++i) {
      auto starts = run_starting_at.find(static_cast<int>(i));
      if (starts == run_starting_at.end()) {
        // Read by its run's vector load, at the run's first load.
        if (claimed_.contains(static_cast<int>(i))) continue;
        Instr copy = p_.instrs[i];
        for (int& s : copy.src) s = map[s];
        out.instrs.push_back(std::move(copy));
        map[i] = static_cast<int>(out.instrs.size()) - 1;
        continue;
      }
      const std::vector<int>& run = runs_[starts->second];
      Instr vector = p_.instrs[run[0]];
      vector.dtype.count = static_cast<int>(run.size());
      for (int& s : vector.src) s = map[s];
      out.instrs.push_back(std::move(vector));
      const int at = static_cast<int>(out.instrs.size()) - 1;
      for (size_t lane = 0; lane < run.size(); ++lane) {
        const Instr& load = p_.instrs[run[lane]];
        out.instrs.push_back(Instr{.kind = InstrKind::kExtract,
                                   .dtype = load.dtype,
                                   .src = {at},
                                   .lane = static_cast<int>(lane),
                                   .origin = load.origin});
        map[run[lane]] = static_cast<int>(out.instrs.size()) - 1;
      }
    }
    return out;
  }

 private:
  // Loads that may share a vector load: one buffer, one mask, one type, one base index.
  struct Group {
    int slot, mask;
    Scalar scalar;
    int base;
    bool operator==(const Group& o) const {
      return slot == o.slot && mask == o.mask && scalar == o.scalar && base == o.base;
    }
    template <typename H>
    friend H AbslHashValue(H h, const Group& g) {
      return H::combine(std::move(h), g.slot, g.mask, g.scalar, g.base);
    }
  };

  void FindRuns() {
    // Prefix counts of the instructions no load may cross.
    fences_.assign(p_.instrs.size() + 1, 0);
    for (size_t i = 0; i < p_.instrs.size(); ++i)
      fences_[i + 1] = fences_[i] + !LoadMayCross(p_.instrs[i]);
    absl::flat_hash_map<Group, std::vector<std::pair<int64_t, int>>> groups;  // offset, position
    for (size_t i = 0; i < p_.instrs.size(); ++i) {
      const Instr& in = p_.instrs[i];
      if (!IsScalarLoad(in)) continue;
      const auto [base, offset] = ElementOf(p_, in.src[0]);
      groups[Group{in.slot, in.src.size() > 1 ? in.src[1] : -1, in.dtype.scalar, base}].push_back(
          {offset, static_cast<int>(i)});
    }
    for (auto& [group, loads] : groups) {
      if (loads.size() < 2) continue;
      std::sort(loads.begin(), loads.end());
      const int size = ScalarItemSize(group.scalar);
      for (size_t at = 0; at < loads.size();) at += TryRun(loads, at, size);
    }
  }

  // Claims the widest fusable run of `loads` (by offset) from `loads[from]`; how many entries
  // it covers (1: none).
  size_t TryRun(const std::vector<std::pair<int64_t, int>>& loads, size_t from, int size) {
    // Consecutive offsets from loads[from], one load each (a repeated element stays as it is).
    size_t run = 1;
    while (from + run < loads.size() &&
           loads[from + run].first == loads[from].first + static_cast<int64_t>(run)) {
      ++run;
    }
    size_t width = 1;
    while (width * 2 <= run && static_cast<int>(width * 2) * size <= max_bytes_) width *= 2;
    for (; width >= 2; width /= 2) {
      // Lane 0 comes first (its index is the vector's), and nothing between the loads stops
      // one from moving up to it.
      int first = loads[from].second, last = first;
      for (size_t k = 1; k < width; ++k) {
        first = std::min(first, loads[from + k].second);
        last = std::max(last, loads[from + k].second);
      }
      if (first == loads[from].second && fences_[last + 1] == fences_[first]) break;
    }
    if (width < 2) return 1;
    std::vector<int> fused;
    for (size_t k = 0; k < width; ++k) {
      fused.push_back(loads[from + k].second);
      claimed_.insert(loads[from + k].second);
    }
    runs_.push_back(std::move(fused));
    return width;
  }

  const LinearProgram& p_;
  const int max_bytes_;
  std::vector<int> fences_;
  // Each run's loads in lane order; the first is also first in the program.
  std::vector<std::vector<int>> runs_;
  absl::flat_hash_set<int> claimed_;  // loads read by a run's vector load instead
};

}  // namespace

LinearProgram FuseConsecutiveLoads(const LinearProgram& program, int max_bytes) {
  return Fuser(program, max_bytes).Run();
}

}  // namespace uopd
