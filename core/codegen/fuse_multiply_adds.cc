#include "core/codegen/fuse_multiply_adds.h"

#include <vector>

namespace uopd {
namespace {

bool Fusable(const DType& d) {
  return d.scalar == Scalar::kFloat32 || d.scalar == Scalar::kFloat64;
}

}  // namespace

LinearProgram FuseMultiplyAdds(const LinearProgram& program) {
  const std::vector<Instr>& in = program.instrs;
  const size_t n = in.size();
  // The loop each instruction is in (the index of its LoopBegin or GlobalIndex, -1 outside).
  std::vector<int> loop_of(n, -1);
  std::vector<int> uses(n, 0);
  std::vector<int> open;
  for (size_t i = 0; i < n; ++i) {
    if (in[i].kind == InstrKind::kLoopEnd && !open.empty()) open.pop_back();
    loop_of[i] = open.empty() ? -1 : open.back();
    if (in[i].kind == InstrKind::kLoopBegin || in[i].kind == InstrKind::kGlobalIndex) {
      open.push_back(static_cast<int>(i));
    }
    for (int s : in[i].src) ++uses[s];
  }
  // A product the add at `at` may absorb.
  auto product = [&](int s, size_t at) {
    const Instr& p = in[s];
    return p.kind == InstrKind::kAlu && p.op == Op::kMul && uses[s] == 1 &&
           loop_of[s] == loop_of[at] && p.dtype.scalar == in[at].dtype.scalar &&
           p.dtype.count == in[at].dtype.count;
  };
  std::vector<Instr> fused = in;
  std::vector<bool> absorbed(n, false);
  for (size_t i = 0; i < n; ++i) {
    Instr& add = fused[i];
    if (add.op != Op::kAdd || !Fusable(add.dtype)) continue;
    if (add.kind == InstrKind::kAlu) {
      for (int k = 0; k < 2; ++k) {
        const int s = add.src[k];
        if (!product(s, i)) continue;
        add.op = Op::kMulacc;
        add.src = {in[s].src[0], in[s].src[1], add.src[1 - k]};
        absorbed[s] = true;
        break;
      }
    } else if (add.kind == InstrKind::kAccUpdate && product(add.src[1], i)) {
      const int s = add.src[1];
      add.op = Op::kMulacc;
      add.src = {add.src[0], in[s].src[0], in[s].src[1]};
      absorbed[s] = true;
    }
  }
  // Drop the absorbed products and renumber.
  LinearProgram out = program;
  out.instrs.clear();
  std::vector<int> map(n, -1);
  for (size_t i = 0; i < n; ++i) {
    if (absorbed[i]) continue;
    Instr instr = std::move(fused[i]);
    for (int& s : instr.src) s = map[s];
    map[i] = static_cast<int>(out.instrs.size());
    out.instrs.push_back(std::move(instr));
  }
  return out;
}

}  // namespace uopd
