// FuseConsecutiveLoads on hand-made programs: which builds of loads become one vector load.
#include "core/codegen/consecutive_loads.h"

#include <algorithm>

#include "gtest/gtest.h"

namespace uopd {
namespace {

// A program of float16 loads of data1[base + offset], built into vectors or not.
class Builder {
 public:
  Builder() {
    p_.buf_count = 2;
    p_.index_bits = 32;
    base_ = Emit({.kind = InstrKind::kVar, .dtype = DType::Of(Scalar::kIndex), .var = 0});
  }
  int Emit(Instr in) {
    p_.instrs.push_back(std::move(in));
    return static_cast<int>(p_.instrs.size()) - 1;
  }
  int Load(int64_t offset, int mask = -1) {
    int index = base_;
    if (offset != 0) {
      int c = Emit(
          {.kind = InstrKind::kConst, .dtype = DType::Of(Scalar::kIndex), .arg = Arg::I64(offset)});
      index = Emit({.kind = InstrKind::kAlu,
                    .op = Op::kAdd,
                    .dtype = DType::Of(Scalar::kIndex),
                    .src = {base_, c}});
    }
    Instr load{
        .kind = InstrKind::kLoad, .dtype = DType::Of(Scalar::kFloat16), .src = {index}, .slot = 1};
    if (mask >= 0) load.src.push_back(mask);
    return Emit(load);
  }
  int Build(const std::vector<int>& lanes) {
    DType d = DType::Of(Scalar::kFloat16);
    d.count = static_cast<int>(lanes.size());
    return Emit({.kind = InstrKind::kBuild, .dtype = d, .src = lanes});
  }
  int Mask() {
    return Emit(
        {.kind = InstrKind::kConst, .dtype = DType::Of(Scalar::kBool), .arg = Arg::Bool(true)});
  }
  // The widths of the vector loads after the pass.
  std::vector<int> VectorLoads(int max_bytes = 16) const {
    std::vector<int> widths;
    for (const Instr& in : FuseConsecutiveLoads(p_, max_bytes).instrs) {
      if (in.kind == InstrKind::kLoad && in.dtype.count > 1) widths.push_back(in.dtype.count);
    }
    return widths;
  }
  LinearProgram p_;
  int base_;
};

TEST(ConsecutiveLoads, NeighbouringElementsOfOneBufferAreOneLoad) {
  Builder b;
  b.Build({b.Load(0), b.Load(1), b.Load(8), b.Load(9)});
  EXPECT_EQ(b.VectorLoads(), (std::vector<int>{2, 2}));
}

TEST(ConsecutiveLoads, AsWideAsTheBytesAllow) {
  Builder b;
  std::vector<int> lanes;
  for (int k = 0; k < 16; ++k) lanes.push_back(b.Load(k));
  b.Build(lanes);
  EXPECT_EQ(b.VectorLoads(16), (std::vector<int>{8, 8}));  // 8 halves: 16 bytes
  EXPECT_EQ(b.VectorLoads(4), (std::vector<int>(8, 2)));
}

TEST(ConsecutiveLoads, LoadsUnderDifferentMasksOrOutOfOrderStayScalar) {
  Builder masks;
  masks.Build({masks.Load(0, masks.Mask()), masks.Load(1, masks.Mask())});
  EXPECT_TRUE(masks.VectorLoads().empty());
  Builder order;
  order.Build({order.Load(1), order.Load(0)});
  EXPECT_TRUE(order.VectorLoads().empty());
}

TEST(ConsecutiveLoads, NoLoadMovesAcrossAStoreOrABoundsCheck) {
  for (InstrKind kind : {InstrKind::kStore, InstrKind::kCheckBounds}) {
    Builder b;
    int first = b.Load(0);
    Instr fence{.kind = kind, .src = {b.base_}, .slot = 1, .size = 64};
    if (kind == InstrKind::kStore) fence.src.push_back(first);
    b.Emit(fence);
    b.Build({first, b.Load(1)});
    EXPECT_TRUE(b.VectorLoads().empty()) << InstrKindName(kind);
  }
  Builder used;  // a use between the loads does not matter: the vector load comes first
  int first = used.Load(0);
  used.Emit({.kind = InstrKind::kCast, .dtype = DType::Of(Scalar::kFloat32), .src = {first}});
  used.Load(1);
  EXPECT_EQ(used.VectorLoads(), std::vector<int>{2});
}

}  // namespace
}  // namespace uopd
