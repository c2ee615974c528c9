#include "backends/cuda/ptxas_report.h"

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

absl::StatusOr<PtxasReport> ParsePtxasReport(absl::string_view log, absl::string_view entry) {
  PtxasReport report;
  bool in_entry = false, properties = false, usage = false;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (absl::StrContains(line, "Compiling entry function") ||
        absl::StrContains(line, "Function properties for")) {
      in_entry = absl::StrContains(line, absl::StrCat("'", entry, "'")) ||
                 absl::EndsWith(absl::StripTrailingAsciiWhitespace(line), absl::StrCat(" ", entry));
      continue;
    }
    if (!in_entry) continue;
    if (absl::StrContains(line, "stack frame")) {
      report.stack_bytes = NumberBefore(line, "bytes stack frame");
      report.spill_store_bytes = NumberBefore(line, "bytes spill stores");
      report.spill_load_bytes = NumberBefore(line, "bytes spill loads");
      properties = true;
    } else if (absl::StrContains(line, "Used ") && absl::StrContains(line, "registers")) {
      report.registers = static_cast<int>(NumberBefore(line, "registers"));
      const int64_t smem = NumberBefore(line, "bytes smem");
      report.shared_bytes = smem < 0 ? 0 : smem;
      usage = true;
    }
  }
  if (!usage || report.registers < 0) {
    return absl::NotFoundError(absl::StrCat("no ptxas report for ", entry, " in the log"));
  }
  if (!properties) report.stack_bytes = report.spill_store_bytes = report.spill_load_bytes = 0;
  return report;
}

}  // namespace uopd
