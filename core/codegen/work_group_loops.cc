#include "core/codegen/work_group_loops.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"

namespace uopd {
namespace {

class WorkGroupWriter {
 public:
  explicit WorkGroupWriter(const LinearProgram& in) : in_(in), n_(in.instrs.size()) {}

  LinearProgram Run(int thread_index) {
    out_ = in_;
    out_.instrs.clear();
    out_.group_threads = 0;
    map_.assign(n_, -1);
    ti_ = thread_index;
    // What comes before the thread index runs once.
    for (int i = 0; i < ti_; ++i) map_[i] = Copy(i, [&](int s) { return map_[s]; });
    const int64_t b = in_.group_threads;
    const int total = map_[in_.instrs[ti_].src[0]];
    const int blocks = Alu(Op::kIdiv, {Alu(Op::kAdd, {total, Const(b - 1)}), Const(b)});
    const int block =
        Emit(Instr{.kind = InstrKind::kGlobalIndex, .dtype = Index(), .src = {blocks}});
    block_base_ = Alu(Op::kMul, {block, Const(b)});
    SplitParts();
    for (int part = 0; part < parts_; ++part) EmitPart(part);
    return std::move(out_);
  }

 private:
  static DType Index() { return DType::Of(Scalar::kIndex); }
  int Emit(Instr instr) {
    out_.instrs.push_back(std::move(instr));
    return static_cast<int>(out_.instrs.size()) - 1;
  }
  int Const(int64_t v) {
    return Emit(Instr{.kind = InstrKind::kConst, .dtype = Index(), .arg = Arg::I64(v)});
  }
  int Alu(Op op, std::vector<int> src) {
    return Emit(Instr{.kind = InstrKind::kAlu, .op = op, .dtype = Index(), .src = std::move(src)});
  }
  template <typename Get>
  int Copy(int i, Get get) {
    Instr instr = in_.instrs[i];
    for (int& s : instr.src) s = get(s);
    return Emit(std::move(instr));
  }
  static bool Rematerialized(const Instr& in) {
    return in.kind == InstrKind::kConst || in.kind == InstrKind::kVar;
  }

  // Parts between barriers; the block's arrays (shared memory, and values kept for a later
  // part) are declared once, before the first.
  void SplitParts() {
    part_.assign(n_, -1);
    int part = 0;
    for (size_t i = ti_ + 1; i < n_; ++i) {
      const Instr& in = in_.instrs[i];
      if (in.kind == InstrKind::kBarrier) {
        ++part;
      } else if (in.kind == InstrKind::kSharedDefine) {
        map_[i] = Copy(static_cast<int>(i), [](int s) { return s; });
      } else {
        part_[i] = part;
      }
    }
    parts_ = part + 1;
    // An accumulator is defined in the part that updates it (the lowering may define one before
    // a barrier that a reduction hoisted out of its body put there).
    absl::flat_hash_set<int> moved;
    for (size_t i = ti_ + 1; i < n_; ++i) {
      const Instr& in = in_.instrs[i];
      if (in.kind != InstrKind::kAccUpdate || part_[in.src[0]] < 0) continue;
      if (part_[in.src[0]] < part_[i] && moved.insert(in.src[0]).second) {
        part_[in.src[0]] = part_[i];
      }
    }
    // An accumulator lives in one thread's registers, which the CPU reuses for the next thread:
    // a later part reads what the thread's accumulator held at the end of its own part, kept.
    for (size_t i = ti_ + 1; i < n_; ++i) {
      const Instr& in = in_.instrs[i];
      if (in.kind == InstrKind::kAccRead && part_[in.src[0]] >= 0) part_[i] = part_[in.src[0]];
    }
    kept_.assign(n_, -1);
    used_later_.assign(parts_, {});
    for (size_t i = ti_ + 1; i < n_; ++i) {
      if (part_[i] < 0) continue;
      for (int s : in_.instrs[i].src) {
        if (s <= ti_ || part_[s] < 0 || part_[s] == part_[i]) continue;
        std::vector<int>& used = used_later_[part_[i]];
        if (std::find(used.begin(), used.end(), s) == used.end()) used.push_back(s);
        if (!Rematerialized(in_.instrs[s]) && kept_[s] < 0) {
          kept_[s] = Emit(Instr{.kind = InstrKind::kSharedDefine,
                                .dtype = in_.instrs[s].dtype,
                                .size = in_.group_threads,
                                .origin = in_.instrs[s].origin});
        }
      }
    }
  }

  // One loop over the block's threads running part `part`.
  void EmitPart(int part) {
    const int lane = Emit(Instr{.kind = InstrKind::kLoopBegin,
                                .dtype = Index(),
                                .src = {Const(0), Const(in_.group_threads)}});
    const int thread = Alu(Op::kAdd, {block_base_, lane});
    std::vector<int> local(n_, -1);
    // What earlier parts computed, at the top of this one (it may be used in and after loops).
    for (int s : used_later_[part]) {
      local[s] = Rematerialized(in_.instrs[s]) ? Copy(s, [](int x) { return x; })
                                               : Emit(Instr{.kind = InstrKind::kArrayLoad,
                                                            .dtype = in_.instrs[s].dtype,
                                                            .src = {kept_[s], lane},
                                                            .origin = in_.instrs[s].origin});
    }
    auto get = [&](int s) {
      if (s == ti_) return thread;
      if (s < ti_ || part_[s] < 0) return map_[s];
      return local[s];
    };
    for (size_t i = ti_ + 1; i < n_; ++i) {
      if (part_[i] == part) local[i] = Copy(static_cast<int>(i), get);
    }
    for (size_t i = ti_ + 1; i < n_; ++i) {
      if (part_[i] == part && kept_[i] >= 0) {
        Emit(Instr{.kind = InstrKind::kArrayStore,
                   .dtype = in_.instrs[i].dtype,
                   .src = {kept_[i], lane, local[i]}});
      }
    }
    Emit(Instr{.kind = InstrKind::kLoopEnd, .src = {lane}});
  }

  const LinearProgram& in_;
  const size_t n_;
  LinearProgram out_;
  std::vector<int> map_;  // old -> new, for what runs once (and the block's arrays)
  int ti_ = -1;
  int block_base_ = -1;
  std::vector<int> part_;  // old instruction -> its part; -1: not in one
  int parts_ = 0;
  std::vector<int> kept_;                     // old instruction -> its array for later parts
  std::vector<std::vector<int>> used_later_;  // per part: earlier parts' values it uses
};

}  // namespace

LinearProgram WorkGroupLoops(const LinearProgram& program) {
  if (program.group_threads <= 0) return program;
  for (size_t i = 0; i < program.instrs.size(); ++i) {
    if (program.instrs[i].kind == InstrKind::kThreadIndex) {
      return WorkGroupWriter(program).Run(static_cast<int>(i));
    }
  }
  return program;
}

}  // namespace uopd
