// UOp: one immutable, hash-consed node of a kernel AST, and Arg, its optional argument.
//
// UOps are created only by a Graph (core/ir/graph.h), which interns them: within one Graph, two
// nodes with equal op, dtype, arg and sources are the same object, so structural equality is
// pointer equality. A UOp lives as long as its Graph. Immutable, so shareable across threads.
#ifndef UOPD_CORE_IR_UOP_H_
#define UOPD_CORE_IR_UOP_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/ir/dtype.h"
#include "core/ir/op.h"

namespace uopd {

// Numbered as uopd.v1.RangeArg.AxisType.
enum class AxisType : uint8_t {
  kGlobal = 1,
  kWarp = 2,
  kLocal = 3,
  kLoop = 4,
  kGroupReduce = 5,
  kReduce = 6,
  kUpcast = 7,
  kUnroll = 8,
  kThread = 9,
  kOuter = 10,
  kPlaceholder = 11,
};
inline constexpr int kMaxAxisType = 11;
absl::string_view AxisTypeName(AxisType type);
// Where ranges of this type sort in tinygrad's axis order (axis_to_pos): OUTER, LOOP, then
// GLOBAL and THREAD, WARP, LOCAL and GROUP_REDUCE, UPCAST, REDUCE, UNROLL.
int AxisPosition(AxisType type);

// Which field of Arg is set; mirrors the oneof of uopd.v1.Arg.
enum class ArgKind : uint8_t {
  kNone,
  kI64,       // i64
  kU64,       // u64 (the bits are kept in `i`)
  kF64,       // f
  kBool,      // b
  kInvalid,   // the Invalid index constant
  kRange,     // axis + axis_type
  kVar,       // str (name) + var_min/var_max/var_multiple
  kReduceOp,  // reduce_op
  kKernel,    // str (kernel name)
  kStr,       // str
};

struct Arg {
  ArgKind kind = ArgKind::kNone;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  Op reduce_op = Op::kAdd;
  AxisType axis_type = AxisType::kLoop;
  int64_t var_min = 0;
  int64_t var_max = 0;
  int64_t var_multiple = 1;  // kVar: values are multiples of this (1: any)
  std::string str;
  std::vector<int64_t> axis;  // RANGE axis ids
  std::vector<int64_t> ints;  // the repeated `ints` beside the oneof

  static Arg I64(int64_t v) {
    Arg a;
    a.kind = ArgKind::kI64;
    a.i = v;
    return a;
  }
  static Arg F64(double v) {
    Arg a;
    a.kind = ArgKind::kF64;
    a.f = v;
    return a;
  }
  static Arg Bool(bool v) {
    Arg a;
    a.kind = ArgKind::kBool;
    a.b = v;
    return a;
  }
  static Arg Invalid() {
    Arg a;
    a.kind = ArgKind::kInvalid;
    return a;
  }
  static Arg Range(std::vector<int64_t> axis, AxisType type) {
    Arg a;
    a.kind = ArgKind::kRange;
    a.axis = std::move(axis);
    a.axis_type = type;
    return a;
  }
  static Arg Var(std::string name, int64_t min, int64_t max) {
    Arg a;
    a.kind = ArgKind::kVar;
    a.str = std::move(name);
    a.var_min = min;
    a.var_max = max;
    return a;
  }
  static Arg Reduce(Op op) {
    Arg a;
    a.kind = ArgKind::kReduceOp;
    a.reduce_op = op;
    return a;
  }
  static Arg Kernel(std::string name) {
    Arg a;
    a.kind = ArgKind::kKernel;
    a.str = std::move(name);
    return a;
  }

  // Floats compare by bit pattern, so NaN constants intern like any other value.
  friend bool operator==(const Arg& a, const Arg& b);
  template <typename H>
  friend H AbslHashValue(H h, const Arg& a) {
    uint64_t fbits;
    std::memcpy(&fbits, &a.f, sizeof(fbits));
    return H::combine(std::move(h), a.kind, a.i, fbits, a.b, a.reduce_op, a.axis_type, a.var_min,
                      a.var_max, a.var_multiple, a.str, a.axis, a.ints);
  }
};

// A printable form of the argument, for messages ("5", "2.5", "range(axis=[0], LOOP)").
std::string ArgToString(const Arg& arg);

class UOp {
 public:
  Op op() const { return op_; }
  const DType& dtype() const { return dtype_; }
  absl::Span<const UOp* const> src() const { return src_; }
  const UOp* src(size_t i) const { return src_[i]; }
  size_t num_src() const { return src_.size(); }
  const Arg& arg() const { return arg_; }
  // Creation order in the owning Graph; sources always have smaller ids (topological order).
  uint32_t id() const { return id_; }

  bool IsConst() const { return op_ == Op::kConst; }
  bool IsInvalid() const { return op_ == Op::kConst && arg_.kind == ArgKind::kInvalid; }

 private:
  friend class Graph;
  UOp(Op op, DType dtype, std::vector<const UOp*> src, Arg arg, uint32_t id)
      : op_(op), dtype_(dtype), src_(std::move(src)), arg_(std::move(arg)), id_(id) {}

  Op op_;
  DType dtype_;
  std::vector<const UOp*> src_;
  Arg arg_;
  uint32_t id_;
};

}  // namespace uopd

#endif  // UOPD_CORE_IR_UOP_H_
