#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "backends/cpu/llvm_ir_writer.h"
#include "core/codegen/const_value.h"
#include "core/codegen/strided_gather.h"
#include "core/ir/value_range.h"
#include "core/util/kernel_support.h"

namespace uopd {

void LlvmIrWriter::CheckStop(int i) {
  Line(absl::StrCat("%v", i, ".stop = load atomic i32, ptr %stop monotonic, align 4"));
  Line(absl::StrCat("%v", i, ".halt = icmp ne i32 %v", i, ".stop, 0"));
  Line(absl::StrCat("br i1 %v", i, ".halt, label %stopped, label %loop", i, ".on, !prof !",
                    unlikely_id_));
  Label(absl::StrCat("loop", i, ".on"));
  checks_stop_ = true;
}

std::string LlvmIrWriter::BeginLoop(int i, const std::string& start, const std::string& end) {
  const std::string self = absl::StrCat("%v", i);
  std::string t = IndexType();
  absl::StrAppend(&allocas_, "  %v", i, ".addr = alloca ", t, "\n");
  std::string limit = end;
  if (Chunked(i)) {
    absl::StrAppend(&allocas_, "  %v", i, ".chunk.addr = alloca ", t, "\n");
    Line(absl::StrCat("store ", t, " ", start, ", ptr %v", i, ".chunk.addr"));
    Line(absl::StrCat("br label %loop", i, ".chunk"));
    Label(absl::StrCat("loop", i, ".chunk"));
    Line(absl::StrCat("%v", i, ".c = load ", t, ", ptr %v", i, ".chunk.addr"));
    Line(absl::StrCat("%v", i, ".more = icmp slt ", t, " %v", i, ".c, ", end));
    Line(absl::StrCat("br i1 %v", i, ".more, label %loop", i, ".check, label %loop", i, ".exit"));
    Label(absl::StrCat("loop", i, ".check"));
    CheckStop(i);
    Line(absl::StrCat("%v", i, ".left = sub nsw ", t, " ", end, ", %v", i, ".c"));
    Line(absl::StrCat("%v", i, ".full = icmp sgt ", t, " %v", i, ".left, ", plan_.stop_chunk));
    Line(absl::StrCat("%v", i, ".step = select i1 %v", i, ".full, ", t, " ", plan_.stop_chunk, ", ",
                      t, " %v", i, ".left"));
    Line(absl::StrCat("%v", i, ".cend = add nsw ", t, " %v", i, ".c, %v", i, ".step"));
    limit = absl::StrCat("%v", i, ".cend");
    Line(absl::StrCat("store ", t, " %v", i, ".c, ptr %v", i, ".addr"));
  } else {
    Line(absl::StrCat("store ", t, " ", start, ", ptr %v", i, ".addr"));
  }
  Line(absl::StrCat("br label %loop", i, ".cond"));
  Label(absl::StrCat("loop", i, ".cond"));
  Line(absl::StrCat(self, " = load ", t, ", ptr %v", i, ".addr"));
  Line(absl::StrCat("%v", i, ".go = icmp slt ", t, " ", self, ", ", limit));
  Line(absl::StrCat("br i1 %v", i, ".go, label %loop", i, ".body, label %loop", i,
                    Chunked(i) ? ".chunk.next" : ".exit"));
  Label(absl::StrCat("loop", i, ".body"));
  if (plan_.stop[i] == StopCheck::kEachIteration) CheckStop(i);
  return self;
}

void LlvmIrWriter::EndLoop(int loop) {
  std::string t = IndexType();
  Line(absl::StrCat("%v", loop, ".next = add nsw ", t, " %v", loop, ", 1"));
  Line(absl::StrCat("store ", t, " %v", loop, ".next, ptr %v", loop, ".addr"));
  Line(absl::StrCat("br label %loop", loop, ".cond, !llvm.loop !",
                    LoopMetadata(/*vectorize=*/!plan_.register_tile[loop])));
  if (Chunked(loop)) {
    Label(absl::StrCat("loop", loop, ".chunk.next"));
    Line(absl::StrCat("store ", t, " %v", loop, ".cend, ptr %v", loop, ".chunk.addr"));
    Line(absl::StrCat("br label %loop", loop, ".chunk"));
  }
  Label(absl::StrCat("loop", loop, ".exit"));
}

int LlvmIrWriter::LoopMetadata(bool vectorize) {
  int id = next_metadata_++;
  if (vectorize) {
    absl::StrAppend(&metadata_, "!", id, " = distinct !{!", id, ", !", mustprogress_id_, "}\n");
  } else {
    if (no_vectorize_id_ < 0) {
      no_vectorize_id_ = next_metadata_++;
      absl::StrAppend(&metadata_, "!", no_vectorize_id_,
                      " = !{!\"llvm.loop.vectorize.enable\", i1 false}\n");
    }
    absl::StrAppend(&metadata_, "!", id, " = distinct !{!", id, ", !", mustprogress_id_, ", !",
                    no_vectorize_id_, "}\n");
  }
  return id;
}

std::string LlvmIrWriter::EmitAccUpdate(const Instr& in) {
  const DType& d = in.dtype;
  std::string acc = Op(in.src[0]);
  std::string old = Fresh("acc");
  Line(absl::StrCat(old, " = load ", RegType(d), ", ptr ", acc));
  // Reassociation is allowed for the accumulation alone, which lets LLVM vectorize reductions;
  // tinygrad's own optimizer reorders reductions the same way (upcast, unroll). A product's
  // values pass an arithmetic fence first: `reassoc` on a multiplication also licenses
  // rewriting the factors (pow(c, x) * pow(c, y) -> pow(c, x + y) turned a product of NaNs into
  // 0). The fence costs vectorization, which sums (the reductions that matter for speed) keep.
  std::string value = Op(in.src[1]);
  // (Emulated floats reach the accumulation through conversion calls, which no rewrite sees
  // through.)
  if ((d.scalar == Scalar::kFloat32 || d.scalar == Scalar::kFloat64) && in.op == Op::kMul) {
    const std::string t = RegType(d);
    std::string fenced = Fresh("fence");
    Declare(t, absl::StrCat("llvm.arithmetic.fence.", IntrinsicSuffix(t)), t);
    Line(absl::StrCat(fenced, " = call ", t, " @llvm.arithmetic.fence.", IntrinsicSuffix(t), "(", t,
                      " ", value, ")"));
    value = fenced;
  }
  std::string updated = in.op == Op::kMulacc
                            ? FusedMultiplyAdd(value, Op(in.src[2]), old, d, /*reassoc=*/true)
                            : Combine(in.op, old, value, d, /*reassoc=*/true);
  Line(absl::StrCat("store ", RegType(d), " ", updated, ", ptr ", acc));
  return updated;
}

}  // namespace uopd
