#include "core/ir/uop.h"

#include <array>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace uopd {

int AxisPosition(AxisType type) {
  switch (type) {
    case AxisType::kOuter:
      return -2;
    case AxisType::kLoop:
      return -1;
    case AxisType::kGlobal:
    case AxisType::kThread:
      return 0;
    case AxisType::kWarp:
      return 1;
    case AxisType::kLocal:
    case AxisType::kGroupReduce:
      return 2;
    case AxisType::kUpcast:
      return 3;
    case AxisType::kReduce:
      return 4;
    case AxisType::kUnroll:
      return 5;
    case AxisType::kPlaceholder:
      return 6;
  }
  return 6;
}

absl::string_view AxisTypeName(AxisType type) {
  static constexpr std::array<absl::string_view, kMaxAxisType + 1> kNames = {
      "?",      "GLOBAL", "WARP",   "LOCAL",  "LOOP",  "GROUP_REDUCE",
      "REDUCE", "UPCAST", "UNROLL", "THREAD", "OUTER", "PLACEHOLDER"};
  int index = static_cast<int>(type);
  return kNames[index >= 1 && index <= kMaxAxisType ? index : 0];
}

bool operator==(const Arg& a, const Arg& b) {
  return a.kind == b.kind && a.i == b.i && std::memcmp(&a.f, &b.f, sizeof(double)) == 0 &&
         a.b == b.b && a.reduce_op == b.reduce_op && a.axis_type == b.axis_type &&
         a.var_min == b.var_min && a.var_max == b.var_max && a.var_multiple == b.var_multiple &&
         a.str == b.str && a.axis == b.axis && a.ints == b.ints;
}

std::string ArgToString(const Arg& arg) {
  std::string out;
  switch (arg.kind) {
    case ArgKind::kNone:
      break;
    case ArgKind::kI64:
      out = absl::StrCat(arg.i);
      break;
    case ArgKind::kU64:
      out = absl::StrCat(static_cast<uint64_t>(arg.i));
      break;
    case ArgKind::kF64:
      out = absl::StrCat(arg.f);
      break;
    case ArgKind::kBool:
      out = arg.b ? "True" : "False";
      break;
    case ArgKind::kInvalid:
      out = "Invalid";
      break;
    case ArgKind::kRange:
      out = absl::StrCat("(", absl::StrJoin(arg.axis, ", "), ", AxisType.",
                         AxisTypeName(arg.axis_type), ")");
      break;
    case ArgKind::kVar:
      out = absl::StrCat(
          "('", arg.str, "', ", arg.var_min, ", ", arg.var_max,
          arg.var_multiple > 1 ? absl::StrCat(", multiple_of=", arg.var_multiple) : "", ")");
      break;
    case ArgKind::kReduceOp:
      out = absl::StrCat("Ops.", OpName(arg.reduce_op));
      break;
    case ArgKind::kKernel:
      out = absl::StrCat("KernelInfo(name='", arg.str, "')");
      break;
    case ArgKind::kStr:
      out = absl::StrCat("'", arg.str, "'");
      break;
  }
  if (!arg.ints.empty()) {
    absl::StrAppend(&out, out.empty() ? "" : " ", "(", absl::StrJoin(arg.ints, ", "), ")");
  }
  return out;
}

}  // namespace uopd
