#include "core/corpus/corpus_file.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"

namespace uopd {

absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

v1::CorpusPlan CaseAsPlan(const v1::CorpusCase& kase) {
  v1::CorpusPlan plan;
  plan.set_name(kase.name());
  plan.set_family(kase.family());
  plan.set_program(kase.program());
  v1::CorpusKernel* kernel = plan.add_kernels();
  *kernel->mutable_ast() = kase.ast();
  for (const v1::CorpusBuffer& b : kase.buffers()) {
    v1::CorpusBuffer* copy = plan.add_buffers();
    *copy = b;
    copy->set_id(b.slot());
    kernel->add_bufs(b.slot());
  }
  for (const v1::CorpusOutput& o : kase.outputs()) {
    v1::CorpusOutput* copy = plan.add_outputs();
    *copy = o;
    copy->set_id(o.slot());
  }
  *plan.mutable_vars() = kase.vars();
  *plan.mutable_tolerance() = kase.tolerance();
  return plan;
}

absl::StatusOr<CorpusEntry> LoadCorpusFile(const std::string& path) {
  auto text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  CorpusEntry entry;
  entry.path = path;
  // Plans carry a "kernels" list; cases an "ast". Peeking at the key avoids parsing twice.
  entry.is_plan = absl::StrContains(*text, "\"kernels\"");
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  auto status = entry.is_plan
                    ? google::protobuf::util::JsonStringToMessage(*text, &entry.plan, options)
                    : google::protobuf::util::JsonStringToMessage(*text, &entry.kase, options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", status.ToString()));
  }
  return entry;
}

absl::StatusOr<std::vector<std::string>> ListCorpusFiles(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (const std::string& path : paths) {
    std::error_code ec;
    if (fs::is_regular_file(path, ec)) {
      files.push_back(path);
      continue;
    }
    if (!fs::is_directory(path, ec))
      return absl::NotFoundError(absl::StrCat("no such path: ", path));
    size_t before = files.size();
    for (const auto& item : fs::recursive_directory_iterator(path, ec)) {
      std::string name = item.path().filename().string();
      if (item.is_regular_file() && absl::EndsWith(name, ".json") && name != "manifest.json") {
        files.push_back(item.path().string());
      }
    }
    if (files.size() == before) {
      return absl::NotFoundError(absl::StrCat("no corpus files under ", path));
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace uopd
