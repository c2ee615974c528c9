#include "core/codegen/linear_program.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace uopd {

absl::string_view InstrKindName(InstrKind kind) {
  switch (kind) {
    case InstrKind::kConst:
      return "const";
    case InstrKind::kVar:
      return "var";
    case InstrKind::kAlu:
      return "alu";
    case InstrKind::kCast:
      return "cast";
    case InstrKind::kBitcast:
      return "bitcast";
    case InstrKind::kLoad:
      return "load";
    case InstrKind::kStore:
      return "store";
    case InstrKind::kCheckBounds:
      return "check_bounds";
    case InstrKind::kAccDefine:
      return "acc_define";
    case InstrKind::kAccUpdate:
      return "acc_update";
    case InstrKind::kAccRead:
      return "acc_read";
    case InstrKind::kLoopBegin:
      return "loop";
    case InstrKind::kLoopEnd:
      return "end_loop";
    case InstrKind::kGlobalIndex:
      return "global_index";
    case InstrKind::kBroadcast:
      return "broadcast";
    case InstrKind::kExtract:
      return "extract";
    case InstrKind::kBuild:
      return "build";
    case InstrKind::kHReduce:
      return "hreduce";
    case InstrKind::kThreadIndex:
      return "thread_index";
    case InstrKind::kSharedDefine:
      return "shared";
    case InstrKind::kArrayLoad:
      return "array_load";
    case InstrKind::kArrayStore:
      return "array_store";
    case InstrKind::kBarrier:
      return "barrier";
    case InstrKind::kWmma:
      return "wmma";
    case InstrKind::kWmmaInto:
      return "wmma_into";
    case InstrKind::kRegDefine:
      return "registers";
  }
  return "?";
}

const BufferParam& LinearProgram::Global(int slot) const {
  for (const BufferParam& param : globals) {
    if (param.slot == slot) return param;
  }
  return globals.front();  // unreachable for lowered programs: they only use declared slots
}

std::string LinearProgram::Dump() const {
  std::string out = absl::StrCat("kernel ", name, " (index int", index_bits,
                                 parallel ? ", split across cores" : "", ")\n");
  int depth = 1;
  for (size_t i = 0; i < instrs.size(); ++i) {
    const Instr& in = instrs[i];
    if (in.kind == InstrKind::kLoopEnd) --depth;
    absl::StrAppend(&out, std::string(2 * depth, ' '), "v", i, " = ", InstrKindName(in.kind));
    if (in.kind == InstrKind::kAlu || in.kind == InstrKind::kAccUpdate ||
        in.kind == InstrKind::kHReduce) {
      absl::StrAppend(&out, " ", OpName(in.op));
    }
    absl::StrAppend(&out, " ", DTypeToString(in.dtype));
    if (!in.src.empty()) {
      absl::StrAppend(
          &out, " (",
          absl::StrJoin(in.src, ", ", [](std::string* o, int s) { absl::StrAppend(o, "v", s); }),
          ")");
    }
    if (in.kind == InstrKind::kConst) absl::StrAppend(&out, " ", ArgToString(in.arg));
    if (in.kind == InstrKind::kVar) absl::StrAppend(&out, " ", var_names[in.var]);
    if (in.slot >= 0) absl::StrAppend(&out, " slot ", in.slot);
    if (in.kind == InstrKind::kCheckBounds) absl::StrAppend(&out, " size ", in.size);
    if (in.kind == InstrKind::kExtract) absl::StrAppend(&out, " lane ", in.lane);
    out += "\n";
    if (in.kind == InstrKind::kLoopBegin) ++depth;
  }
  absl::StrAppend(&out, "accesses: ", proven_accesses, " proven in bounds, ", guarded_accesses,
                  " checked at run time\n");
  return out;
}

}  // namespace uopd
