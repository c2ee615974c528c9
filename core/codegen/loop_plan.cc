#include "core/codegen/loop_plan.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "core/codegen/strided_gather.h"

namespace uopd {
namespace {

// A loop nest of constant bounds doing at most `chunk` iterations in all needs no check of its
// own; of the others, innermost loops check between chunks and outer loops every iteration.
std::vector<StopCheck> PlanStopChecks(const LinearProgram& p, int64_t chunk) {
  const size_t n = p.instrs.size();
  std::vector<StopCheck> stop(n, StopCheck::kNone);
  if (chunk <= 0) return stop;
  std::vector<bool> innermost(n, false);
  struct Open {
    int loop;
    int64_t inner_work = 0;  // iterations of the loops inside, in all
    bool bounded = true;
  };
  std::vector<Open> open;
  for (size_t i = 0; i < n; ++i) {
    const Instr& in = p.instrs[i];
    if (in.kind == InstrKind::kLoopBegin || in.kind == InstrKind::kGlobalIndex) {
      if (!open.empty()) innermost[open.back().loop] = false;
      innermost[i] = true;
      open.push_back({static_cast<int>(i)});
      if (in.kind == InstrKind::kGlobalIndex) open.back().bounded = false;
    } else if (in.kind == InstrKind::kLoopEnd && !open.empty()) {
      Open done = open.back();
      open.pop_back();
      const Instr& loop = p.instrs[done.loop];
      const Instr& start = p.instrs[loop.src[0]];
      const Instr& end = p.instrs[loop.src[1]];
      bool bounded =
          done.bounded && start.kind == InstrKind::kConst && end.kind == InstrKind::kConst;
      int64_t work = 0;
      if (bounded) {
        // Saturates: anything past the chunk is as good as unbounded.
        const int64_t trip = std::max<int64_t>(0, end.arg.i - start.arg.i);
        const int64_t per_iteration = std::min(done.inner_work, chunk) + 1;
        work = trip > chunk ? chunk + 1 : std::min(trip * per_iteration, chunk + 1);
        bounded = work <= chunk;
      }
      stop[done.loop] = bounded                ? StopCheck::kNone
                        : innermost[done.loop] ? StopCheck::kBetweenChunks
                                               : StopCheck::kEachIteration;
      if (!open.empty()) {
        open.back().bounded &= bounded;
        open.back().inner_work = std::min(open.back().inner_work + work, chunk + 1);
      }
    }
  }
  // A loop left open (the grid's loop around the whole kernel, which has no end instruction).
  for (const Open& o : open) {
    stop[o.loop] = innermost[o.loop] ? StopCheck::kBetweenChunks : StopCheck::kEachIteration;
  }
  return stop;
}

std::vector<bool> PlanRegisterTiles(const LinearProgram& p, int max_widened_accumulators) {
  std::vector<bool> tile(p.instrs.size(), false);
  if (max_widened_accumulators <= 0) return tile;
  struct Open {
    int loop;
    bool has_inner = false;
    absl::flat_hash_set<int> updated;  // scalar accumulators
  };
  std::vector<Open> open;
  for (size_t i = 0; i < p.instrs.size(); ++i) {
    const Instr& in = p.instrs[i];
    if (in.kind == InstrKind::kLoopBegin) {
      if (!open.empty()) open.back().has_inner = true;
      open.push_back({static_cast<int>(i)});
    } else if (in.kind == InstrKind::kAccUpdate && in.dtype.count == 1 && !open.empty()) {
      open.back().updated.insert(in.src[0]);
    } else if (in.kind == InstrKind::kLoopEnd && !open.empty()) {
      const Open& done = open.back();
      tile[done.loop] =
          !done.has_inner && static_cast<int>(done.updated.size()) > max_widened_accumulators;
      open.pop_back();
    }
  }
  return tile;
}

std::vector<bool> PlanBranchedLoads(const LinearProgram& p) {
  const size_t n = p.instrs.size();
  std::vector<bool> branched(n, false);
  std::vector<bool> from_memory(n, false);
  std::vector<int> loop_dependence(n, -1);  // the innermost loop a value changes in
  std::vector<int> open;
  for (size_t i = 0; i < n; ++i) {
    const Instr& in = p.instrs[i];
    if (in.kind == InstrKind::kLoopEnd && !open.empty()) open.pop_back();
    bool loaded = in.kind == InstrKind::kLoad || in.kind == InstrKind::kAccRead;
    int dependence = -1;
    for (int s : in.src) {
      loaded = loaded || from_memory[s];
      dependence = std::max(dependence, loop_dependence[s]);
    }
    if (in.kind == InstrKind::kLoopBegin || in.kind == InstrKind::kGlobalIndex) {
      dependence = static_cast<int>(i);
      open.push_back(static_cast<int>(i));
    }
    from_memory[i] = loaded;
    loop_dependence[i] = dependence;
    if (in.kind == InstrKind::kLoad && in.src.size() > 1) {
      const int mask = in.src[1];
      branched[i] = !from_memory[mask] && !open.empty() && loop_dependence[mask] == open.back();
    }
    if (in.kind == InstrKind::kBuild && in.dtype.count > 1 && MatchStridedGather(p, in)) {
      for (int lane : in.src) branched[lane] = false;
    }
  }
  return branched;
}

}  // namespace

bool LoopPlan::ChecksStop() const {
  return std::any_of(stop.begin(), stop.end(), [](StopCheck s) { return s != StopCheck::kNone; });
}

LoopPlan PlanLoops(const LinearProgram& program, const CodegenTarget& target) {
  LoopPlan plan;
  plan.stop_chunk = target.stop_chunk;
  plan.stop = PlanStopChecks(program, target.stop_chunk);
  plan.register_tile = PlanRegisterTiles(program, target.max_widened_accumulators);
  plan.branched = target.branch_masked_loads ? PlanBranchedLoads(program)
                                             : std::vector<bool>(program.instrs.size(), false);
  return plan;
}

}  // namespace uopd
