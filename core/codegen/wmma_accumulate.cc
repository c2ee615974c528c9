#include "core/codegen/wmma_accumulate.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

namespace uopd {
namespace {

bool IsZerosBuild(const LinearProgram& p, const Instr& build) {
  if (build.kind != InstrKind::kBuild) return false;
  return std::all_of(build.src.begin(), build.src.end(), [&](int s) {
    const Instr& c = p.instrs[s];
    return c.kind == InstrKind::kConst &&
           ((c.arg.kind == ArgKind::kF64 && c.arg.f == 0 && !std::signbit(c.arg.f)) ||
            (c.arg.kind == ArgKind::kI64 && c.arg.i == 0));
  });
}

// For the kWmma at `w`: per lane, the extract and the accumulator update that consume it, or
// none when the instruction does not have that shape.
struct Fold {
  std::vector<int> extracts, updates, accumulators;
};

std::optional<Fold> FindFold(const LinearProgram& p, int w,
                             const std::vector<std::vector<int>>& users) {
  const Instr& wmma = p.instrs[w];
  if (wmma.src.size() != 3 || !IsZerosBuild(p, p.instrs[wmma.src[2]])) return std::nullopt;
  const int lanes = wmma.dtype.count;
  Fold fold;
  fold.extracts.assign(lanes, -1);
  for (int user : users[w]) {
    const Instr& e = p.instrs[user];
    if (e.kind != InstrKind::kExtract || e.lane < 0 || e.lane >= lanes ||
        fold.extracts[e.lane] >= 0) {
      return std::nullopt;
    }
    fold.extracts[e.lane] = user;
  }
  for (int lane = 0; lane < lanes; ++lane) {
    const int e = fold.extracts[lane];
    if (e < 0 || users[e].size() != 1) return std::nullopt;
    const Instr& update = p.instrs[users[e][0]];
    if (update.kind != InstrKind::kAccUpdate || update.op != Op::kAdd || update.src.size() != 2 ||
        update.src[1] != e || !(update.dtype == DType::Of(wmma.dtype.scalar))) {
      return std::nullopt;
    }
    const int acc = update.src[0];
    if (std::find(fold.accumulators.begin(), fold.accumulators.end(), acc) !=
        fold.accumulators.end()) {
      return std::nullopt;
    }
    fold.updates.push_back(users[e][0]);
    fold.accumulators.push_back(acc);
  }
  // Nothing between the instruction and its last update opens or closes a loop or touches the
  // accumulators: the updates may move up to the instruction.
  const int last = *std::max_element(fold.updates.begin(), fold.updates.end());
  for (int i = w + 1; i < last; ++i) {
    const Instr& in = p.instrs[i];
    if (in.kind == InstrKind::kLoopBegin || in.kind == InstrKind::kLoopEnd) return std::nullopt;
    if (std::find(fold.updates.begin(), fold.updates.end(), i) != fold.updates.end()) continue;
    for (int s : in.src) {
      if (std::find(fold.accumulators.begin(), fold.accumulators.end(), s) !=
          fold.accumulators.end()) {
        return std::nullopt;
      }
    }
  }
  return fold;
}

}  // namespace

LinearProgram FoldWmmaAccumulators(const LinearProgram& program) {
  const int n = static_cast<int>(program.instrs.size());
  std::vector<std::vector<int>> users(n);
  bool any = false;
  for (int i = 0; i < n; ++i) {
    for (int s : program.instrs[i].src) users[s].push_back(i);
    any |= program.instrs[i].kind == InstrKind::kWmma;
  }
  if (!any) return program;
  LinearProgram out = program;
  std::vector<bool> dropped(n, false);
  for (int w = 0; w < n; ++w) {
    if (program.instrs[w].kind != InstrKind::kWmma) continue;
    std::optional<Fold> fold = FindFold(program, w, users);
    if (!fold.has_value()) continue;
    Instr& into = out.instrs[w];
    into.kind = InstrKind::kWmmaInto;
    into.src.resize(2);
    into.src.insert(into.src.end(), fold->accumulators.begin(), fold->accumulators.end());
    for (int i : fold->extracts) dropped[i] = true;
    for (int i : fold->updates) dropped[i] = true;
  }
  std::vector<int> renumbered(n, -1);
  std::vector<Instr> kept;
  for (int i = 0; i < n; ++i) {
    if (dropped[i]) continue;
    Instr in = std::move(out.instrs[i]);
    for (int& s : in.src) s = renumbered[s];
    renumbered[i] = static_cast<int>(kept.size());
    kept.push_back(std::move(in));
  }
  out.instrs = std::move(kept);
  return out;
}

}  // namespace uopd
