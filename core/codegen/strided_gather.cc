#include "core/codegen/strided_gather.h"

#include <algorithm>

#include "core/codegen/const_value.h"

namespace uopd {

std::optional<std::vector<int64_t>> LaneOffsets(const LinearProgram& p, int instr) {
  const Instr& in = p.instrs[instr];
  const int n = std::max(1, in.dtype.count);
  auto uniform = [&](int k) -> std::optional<int64_t> {  // one value in every lane
    const Instr& c = p.instrs[k];
    const Instr& scalar = c.kind == InstrKind::kBroadcast ? p.instrs[c.src[0]] : c;
    if (scalar.kind != InstrKind::kConst) return std::nullopt;
    const int64_t v = DecodeConst(scalar, p.index_bits, 0).as_int();
    for (int lane = 1; lane < std::max(1, scalar.dtype.count); ++lane) {
      if (DecodeConst(scalar, p.index_bits, lane).as_int() != v) return std::nullopt;
    }
    return v;
  };
  switch (in.kind) {
    case InstrKind::kBroadcast:
      return std::vector<int64_t>(n, 0);
    case InstrKind::kConst: {
      std::vector<int64_t> out(n);
      const int64_t first = DecodeConst(in, p.index_bits, 0).as_int();
      for (int k = 0; k < n; ++k) out[k] = DecodeConst(in, p.index_bits, k).as_int() - first;
      return out;
    }
    case InstrKind::kAlu: {
      // INDEX arithmetic only: a narrower type wraps, and its lanes are not offsets.
      if (in.src.size() != 2 || in.dtype.scalar != Scalar::kIndex) return std::nullopt;
      if (in.op == Op::kAdd || in.op == Op::kSub) {
        auto a = LaneOffsets(p, in.src[0]), b = LaneOffsets(p, in.src[1]);
        if (!a || !b) return std::nullopt;
        for (int k = 0; k < n; ++k) (*a)[k] += in.op == Op::kAdd ? (*b)[k] : -(*b)[k];
        return a;
      }
      // x * c, c * x or x << c: x's offsets scaled.
      auto scaled = [&](int x, int64_t factor) {
        auto a = LaneOffsets(p, x);
        if (a) {
          for (int64_t& o : *a) o *= factor;
        }
        return a;
      };
      if (in.op == Op::kMul) {
        if (auto c = uniform(in.src[1])) return scaled(in.src[0], *c);
        if (auto c = uniform(in.src[0])) return scaled(in.src[1], *c);
      }
      if (in.op == Op::kShl) {
        auto c = uniform(in.src[1]);
        if (c && *c >= 0 && *c <= 30) return scaled(in.src[0], int64_t{1} << *c);
      }
      return std::nullopt;
    }
    default:
      return std::nullopt;
  }
}

std::optional<StridedGather> MatchStridedGather(const LinearProgram& p, const Instr& build) {
  const int n = static_cast<int>(build.src.size());
  if (build.kind != InstrKind::kBuild || n < 2 || build.dtype.scalar == Scalar::kBool ||
      IsNarrowFloat(build.dtype.scalar)) {
    return std::nullopt;
  }
  const bool masked = IsMaskedAccess(p.instrs[build.src[0]]);
  const int mask = masked ? LanesMask(p, build) : -1;
  if (masked && mask < 0) return std::nullopt;
  int vector = -1, slot = -1;
  for (int k = 0; k < n; ++k) {
    const Instr& load = p.instrs[build.src[k]];
    if (load.kind != InstrKind::kLoad || IsMaskedAccess(load) != masked) return std::nullopt;
    if (slot >= 0 && load.slot != slot) return std::nullopt;
    slot = load.slot;
    const Instr& index = p.instrs[load.src[0]];
    if (index.kind != InstrKind::kExtract || index.lane != k) return std::nullopt;
    if (vector >= 0 && index.src[0] != vector) return std::nullopt;
    vector = index.src[0];
  }
  if (p.instrs[vector].dtype.count != n) return std::nullopt;
  const std::optional<std::vector<int64_t>> offsets = LaneOffsets(p, vector);
  if (!offsets) return std::nullopt;
  const int64_t stride = (*offsets)[1];
  if (stride < 2 || stride > 4) return std::nullopt;
  for (int k = 0; k < n; ++k) {
    if ((*offsets)[k] != stride * k) return std::nullopt;
  }
  return StridedGather{slot, stride, mask};
}

}  // namespace uopd
