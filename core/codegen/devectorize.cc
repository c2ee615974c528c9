#include "core/codegen/devectorize.h"

#include <vector>

namespace uopd {
namespace {

class Devectorizer {
 public:
  Devectorizer(const LinearProgram& in, const KeepVector& keep) : in_(in), keep_(keep) {}

  LinearProgram Run() {
    out_ = in_;
    out_.instrs.clear();
    const size_t n = in_.instrs.size();
    vector_.assign(n, -1);
    scalar_.assign(n, -1);
    lanes_.assign(n, {});
    for (size_t i = 0; i < n; ++i) Rewrite(static_cast<int>(i));
    return std::move(out_);
  }

 private:
  int Emit(Instr instr) {
    out_.instrs.push_back(std::move(instr));
    return static_cast<int>(out_.instrs.size()) - 1;
  }
  static DType Scalar(DType d) {
    d.count = 1;
    return d;
  }
  bool IsVector(int old) const { return in_.instrs[old].dtype.count > 1; }
  int Width(int old) const { return in_.instrs[old].dtype.count; }

  // An old value as one new vector instruction.
  int AsVector(int old) {
    if (vector_[old] >= 0) return vector_[old];
    return Emit(Instr{.kind = InstrKind::kBuild,
                      .dtype = in_.instrs[old].dtype,
                      .src = lanes_[old],
                      .origin = in_.instrs[old].origin});
  }
  // Lane `lane` of an old value (a scalar is the same in every lane).
  int AsLane(int old, int lane) {
    if (!IsVector(old)) return scalar_[old];
    if (!lanes_[old].empty()) return lanes_[old][lane];
    return Emit(Instr{.kind = InstrKind::kExtract,
                      .dtype = Scalar(in_.instrs[old].dtype),
                      .src = {vector_[old]},
                      .lane = lane,
                      .origin = in_.instrs[old].origin});
  }
  // An operand of an instruction kept as a vector: vectors as vectors, scalars as they are.
  int Operand(int old) { return IsVector(old) ? AsVector(old) : scalar_[old]; }

  void Rewrite(int i) {
    const Instr& in = in_.instrs[i];
    const bool vector = in.dtype.count > 1;
    // Accumulator updates and reads follow their accumulator's form; a horizontal reduction
    // follows its operand's.
    bool keep = vector && keep_(in_, in);
    if (in.kind == InstrKind::kAccUpdate || in.kind == InstrKind::kAccRead) {
      keep = vector && vector_[in.src[0]] >= 0;
    }
    if (in.kind == InstrKind::kExtract) {
      scalar_[i] = AsLane(in.src[0], in.lane);
      return;
    }
    if (in.kind == InstrKind::kHReduce) {
      const int src = in.src[0];
      if (vector_[src] >= 0 && keep_(in_, in)) {
        Instr copy = in;
        copy.src = {vector_[src]};
        scalar_[i] = Emit(copy);
        return;
      }
      int acc = AsLane(src, 0);
      for (int lane = 1; lane < Width(src); ++lane) {
        acc = Emit(Instr{.kind = InstrKind::kAlu,
                         .op = in.op,
                         .dtype = in.dtype,
                         .src = {acc, AsLane(src, lane)},
                         .origin = in.origin});
      }
      scalar_[i] = acc;
      return;
    }
    if (!vector || keep) {
      Instr copy = in;
      for (int& s : copy.src) s = Operand(s);
      // Stores are void, their width is their value's: the kept vector store needs its value
      // as a vector even though `vector` looked at its own dtype.
      (vector ? vector_ : scalar_)[i] = Emit(copy);
      return;
    }
    const int width = in.dtype.count;
    std::vector<int>& lanes = lanes_[i];
    for (int lane = 0; lane < width; ++lane) lanes.push_back(ScalarLane(in, lane));
  }

  // Lane `lane` of vector instruction `in`, as scalar instructions.
  int ScalarLane(const Instr& in, int lane) {
    Instr s = in;
    s.dtype = Scalar(in.dtype);
    switch (in.kind) {
      case InstrKind::kConst:
        if (!in.arg.ints.empty()) s.arg = Arg::I64(in.arg.ints[lane]);
        return Emit(s);
      case InstrKind::kBroadcast:
        return scalar_[in.src[0]];
      case InstrKind::kBuild:
        return AsLane(in.src[lane], 0);
      case InstrKind::kLoad: {
        // Consecutive elements from the base index; a vector mask masks each lane.
        s.src[0] = Offset(scalar_[in.src[0]], lane);
        if (in.src.size() > 1) s.src[1] = AsLane(in.src[1], lane);
        return Emit(s);
      }
      case InstrKind::kStore: {
        s.src[0] = Offset(scalar_[in.src[0]], lane);
        s.src[1] = AsLane(in.src[1], lane);
        if (in.src.size() > 2) s.src[2] = AsLane(in.src[2], lane);
        return Emit(s);
      }
      case InstrKind::kAccDefine:
        s.src = {AsLane(in.src[0], lane)};
        return Emit(s);
      case InstrKind::kAccUpdate:
        s.src = {lanes_[in.src[0]][lane], AsLane(in.src[1], lane)};
        return Emit(s);
      case InstrKind::kAccRead:
        s.src = {lanes_[in.src[0]][lane]};
        return Emit(s);
      default:
        for (int& src : s.src) src = AsLane(src, lane);
        return Emit(s);
    }
  }

  // `index` + `lane`, in the index type.
  int Offset(int index, int lane) {
    if (lane == 0) return index;
    const DType index_type = out_.instrs[index].dtype;
    int offset = Emit(Instr{.kind = InstrKind::kConst, .dtype = index_type, .arg = Arg::I64(lane)});
    return Emit(Instr{
        .kind = InstrKind::kAlu, .op = Op::kAdd, .dtype = index_type, .src = {index, offset}});
  }

  const LinearProgram& in_;
  const KeepVector& keep_;
  LinearProgram out_;
  std::vector<int> vector_;              // old -> new vector instruction
  std::vector<int> scalar_;              // old scalar -> new instruction
  std::vector<std::vector<int>> lanes_;  // old vector -> one new scalar per lane
};

}  // namespace

LinearProgram Devectorize(const LinearProgram& program, const KeepVector& keep) {
  return Devectorizer(program, keep).Run();
}

}  // namespace uopd
