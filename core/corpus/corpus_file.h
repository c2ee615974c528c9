// Reading the reference corpus (tests/corpus/README.md): case and plan files, parsed from JSON
// with protobuf's JSON parser into the messages of proto/uopd/v1/corpus.proto.
#ifndef UOPD_CORE_CORPUS_CORPUS_FILE_H_
#define UOPD_CORE_CORPUS_CORPUS_FILE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "uopd/v1/corpus.pb.h"

namespace uopd {

// A corpus file holds a case (one kernel) or a plan (a schedule): plans have "kernels".
struct CorpusEntry {
  std::string path;
  bool is_plan = false;
  v1::CorpusCase kase;  // when !is_plan
  v1::CorpusPlan plan;  // when is_plan
  const std::string& name() const { return is_plan ? plan.name() : kase.name(); }
};

// A case as a one-kernel plan: buffer i is slot i, the case's outputs and variables the plan's.
v1::CorpusPlan CaseAsPlan(const v1::CorpusCase& kase);

absl::StatusOr<std::string> ReadFileToString(const std::string& path);
absl::StatusOr<CorpusEntry> LoadCorpusFile(const std::string& path);
// The .json files under each path (a file, or a folder searched recursively), sorted; folders
// named in `paths` that hold no corpus file are an error (NOT_FOUND).
absl::StatusOr<std::vector<std::string>> ListCorpusFiles(const std::vector<std::string>& paths);

}  // namespace uopd

#endif  // UOPD_CORE_CORPUS_CORPUS_FILE_H_
