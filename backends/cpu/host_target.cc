#include "backends/cpu/host_target.h"

#include <algorithm>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"

namespace uopd {

std::string HostTarget::Describe() const { return absl::StrCat(triple, ";", cpu, ";", features); }

absl::StatusOr<HostTarget> HostTarget::Parse(absl::string_view described) {
  std::vector<std::string> parts = absl::StrSplit(described, ';');
  if (parts.size() != 3 || parts[0].empty() || parts[1].empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", described, "' is not a CPU target (triple;cpu;features)"));
  }
  return HostTarget{parts[0], parts[1], parts[2]};
}

void InitializeLlvmOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

const HostTarget& GetHostTarget() {
  static const HostTarget* target = [] {
    InitializeLlvmOnce();
    auto* t = new HostTarget;
    t->triple = llvm::sys::getProcessTriple();
    t->cpu = llvm::sys::getHostCPUName().str();
    std::vector<std::string> features;
    for (const auto& feature : llvm::sys::getHostCPUFeatures()) {
      features.push_back(absl::StrCat(feature.second ? "+" : "-", feature.first().str()));
    }
    // StringMap iteration order is unspecified: sort so the key is stable across processes.
    std::sort(features.begin(), features.end(),
              [](const std::string& a, const std::string& b) { return a.substr(1) < b.substr(1); });
    t->features = absl::StrJoin(features, ",");
    return t;
  }();
  return *target;
}

}  // namespace uopd
