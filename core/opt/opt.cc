#include "core/opt/opt.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

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

absl::StatusOr<std::vector<Opt>> ParseOptList(absl::string_view text) {
  std::vector<Opt> opts;
  size_t i = 0;
  auto fail = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("opt ", opts.size(), " of '", text, "': ", why));
  };
  while (true) {
    while (i < text.size() && (absl::ascii_isspace(text[i]) || text[i] == ',')) ++i;
    if (i == text.size()) return opts;
    if (opts.size() == kMaxOptsPerKernel) {
      return absl::InvalidArgumentError(
          absl::StrCat("more than ", kMaxOptsPerKernel, " opts for one kernel"));
    }
    size_t name_end = i;
    while (name_end < text.size() && absl::ascii_isalpha(text[name_end])) ++name_end;
    absl::StatusOr<OptOp> op = ParseOptOp(text.substr(i, name_end - i));
    if (!op.ok()) return fail(op.status().message());
    Opt opt;
    opt.op = *op;
    i = name_end;
    if (i < text.size() && text[i] == '(') {
      // Up to the matching parenthesis (TC's argument is itself parenthesized).
      size_t close = i;
      for (int depth = 0; close < text.size(); ++close) {
        depth += text[close] == '(' ? 1 : text[close] == ')' ? -1 : 0;
        if (depth == 0) break;
      }
      if (close == text.size()) return fail("no closing parenthesis");
      std::string inner(text.substr(i + 1, close - i - 1));
      for (char& c : inner) {
        if (c == '(' || c == ')') c = ' ';
      }
      std::vector<std::string> fields =
          absl::StrSplit(inner, absl::ByAnyChar(", "), absl::SkipWhitespace());
      std::vector<int> numbers;
      for (const std::string& f : fields) {
        int v = 0;
        if (!absl::SimpleAtoi(f, &v)) return fail(absl::StrCat("'", f, "' is not an integer"));
        numbers.push_back(v);
      }
      if (numbers.empty()) return fail("no axis");
      opt.axis = numbers[0];
      if (opt.op == OptOp::kTc) {
        if (numbers.size() != 4) return fail("TC takes (axis, (tc_select, tc_opt, use_tc))");
        opt.tc = {numbers[1], numbers[2], numbers[3]};
      } else if (numbers.size() > 2) {
        return fail("takes an axis and an amount");
      } else if (numbers.size() == 2) {
        opt.arg = numbers[1];
      }
      i = close + 1;
    } else if (opt.op != OptOp::kNoLocals) {
      return fail(absl::StrCat(OptOpName(opt.op), " needs (axis, amount)"));
    }
    opts.push_back(opt);
  }
}

}  // namespace uopd
