#include "backends/cuda/ptxas_report.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace uopd {
namespace {

// The number just before `unit` in `line` ("1024 bytes smem" with unit "bytes smem"), or -1.
int64_t NumberBefore(absl::string_view line, absl::string_view unit) {
  size_t at = line.find(unit);
  if (at == absl::string_view::npos) return -1;
  absl::string_view head = absl::StripTrailingAsciiWhitespace(line.substr(0, at));
  size_t start = head.find_last_of(" ,:");
  absl::string_view digits = start == absl::string_view::npos ? head : head.substr(start + 1);
  int64_t value = -1;
  return absl::SimpleAtoi(digits, &value) ? value : -1;
}

}  // namespace

absl::StatusOr<KernelResources> ParsePtxasReport(absl::string_view log, absl::string_view entry) {
  KernelResources report;
  bool in_entry = false, usage = false;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (absl::StrContains(line, "Compiling entry function") ||
        absl::StrContains(line, "Function properties for")) {
      in_entry = absl::StrContains(line, absl::StrCat("'", entry, "'")) ||
                 absl::EndsWith(absl::StripTrailingAsciiWhitespace(line), absl::StrCat(" ", entry));
      continue;
    }
    if (!in_entry) continue;
    if (absl::StrContains(line, "stack frame")) {
      report.spilled_bytes = std::max<int64_t>(
          {0, NumberBefore(line, "bytes spill stores"), NumberBefore(line, "bytes spill loads")});
    } else if (absl::StrContains(line, "Used ") && absl::StrContains(line, "registers")) {
      report.registers = static_cast<int>(NumberBefore(line, "registers"));
      report.shared_bytes = std::max<int64_t>(0, NumberBefore(line, "bytes smem"));
      usage = true;
    }
  }
  if (!usage || report.registers < 0) {
    return absl::NotFoundError(absl::StrCat("no ptxas report for ", entry, " in the log"));
  }
  return report;
}

}  // namespace uopd
