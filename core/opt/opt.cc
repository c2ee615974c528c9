#include "core/opt/opt.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace uopd {
namespace {

constexpr std::pair<OptOp, absl::string_view> kNames[] = {
    {OptOp::kTc, "TC"},
    {OptOp::kUpcast, "UPCAST"},
    {OptOp::kUnroll, "UNROLL"},
    {OptOp::kLocal, "LOCAL"},
    {OptOp::kThread, "THREAD"},
    {OptOp::kGroup, "GROUP"},
    {OptOp::kGroupTop, "GROUPTOP"},
    {OptOp::kNoLocals, "NOLOCALS"},
    {OptOp::kPadTo, "PADTO"},
    {OptOp::kSwap, "SWAP"},
};

}  // namespace

absl::string_view OptOpName(OptOp op) {
  for (const auto& [value, name] : kNames) {
    if (value == op) return name;
  }
  return "?";
}

absl::StatusOr<OptOp> ParseOptOp(absl::string_view name) {
  for (const auto& [value, spelled] : kNames) {
    if (spelled == name) return value;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown opt op '", name, "'"));
}

std::string Opt::ToString() const {
  if (op == OptOp::kNoLocals) return "NOLOCALS";
  std::string axis_text = axis.has_value() ? absl::StrCat(*axis) : "None";
  if (op == OptOp::kTc) {
    return absl::StrCat("TC(", axis_text, ", (", tc[0], ", ", tc[1], ", ", tc[2], "))");
  }
  return absl::StrCat(OptOpName(op), "(", axis_text, ", ", arg, ")");
}

std::string OptsToString(const std::vector<Opt>& opts) {
  return absl::StrJoin(opts, " ",
                       [](std::string* out, const Opt& o) { out->append(o.ToString()); });
}

}  // namespace uopd
