// Where the tests find the reference corpus and how they read graphs written inline as JSON.
#ifndef UOPD_TESTS_TESTING_CORPUS_PATHS_H_
#define UOPD_TESTS_TESTING_CORPUS_PATHS_H_

#include <cstdlib>
#include <string>
#include <vector>

#include "core/corpus/corpus_file.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "uopd/v1/graph.pb.h"

namespace uopd::testing {

// The build's checkout, unless UOPD_CORPUS_DIR names another (test binaries built on one machine
// and run from another checkout, as bench/gpu_check.sh does).
inline std::string CorpusDir() {
  const char* dir = std::getenv("UOPD_CORPUS_DIR");
  return dir != nullptr && *dir != '\0' ? dir : UOPD_CORPUS_DIR;
}

// Every case and plan of tests/corpus, loaded. Fails the test on a file that does not parse.
inline std::vector<CorpusEntry> LoadWholeCorpus() {
  std::vector<CorpusEntry> entries;
  auto files = ListCorpusFiles({CorpusDir() + "/cases", CorpusDir() + "/plans"});
  EXPECT_TRUE(files.ok()) << files.status();
  if (!files.ok()) return entries;
  for (const std::string& file : *files) {
    auto entry = LoadCorpusFile(file);
    EXPECT_TRUE(entry.ok()) << entry.status();
    if (entry.ok()) entries.push_back(std::move(*entry));
  }
  return entries;
}

// Every kernel AST of the corpus with a label ("cases/x.json", "plans/y.json#2").
inline std::vector<std::pair<std::string, v1::Graph>> CorpusAsts() {
  std::vector<std::pair<std::string, v1::Graph>> asts;
  for (const CorpusEntry& entry : LoadWholeCorpus()) {
    if (!entry.is_plan) {
      asts.emplace_back(entry.path, entry.kase.ast());
      continue;
    }
    for (int k = 0; k < entry.plan.kernels_size(); ++k) {
      asts.emplace_back(entry.path + "#" + std::to_string(k), entry.plan.kernels(k).ast());
    }
  }
  return asts;
}

// Every kernel AST of tests/corpus14 (tinygrad 0.14's dialect), labelled "corpus14/x.json".
inline std::vector<std::pair<std::string, v1::Graph>> Corpus14Asts() {
  std::vector<std::pair<std::string, v1::Graph>> asts;
  auto files = ListCorpusFiles({CorpusDir() + "/../corpus14/cases"});
  EXPECT_TRUE(files.ok()) << files.status();
  if (!files.ok()) return asts;
  for (const std::string& file : *files) {
    auto entry = LoadCorpusFile(file);
    EXPECT_TRUE(entry.ok()) << entry.status();
    if (entry.ok())
      asts.emplace_back("corpus14/" + file.substr(file.rfind('/') + 1), entry->kase.ast());
  }
  return asts;
}

inline v1::Graph GraphFromJson(const std::string& json) {
  v1::Graph graph;
  auto status = google::protobuf::util::JsonStringToMessage(json, &graph);
  EXPECT_TRUE(status.ok()) << status.ToString() << "\n" << json;
  return graph;
}

}  // namespace uopd::testing

#endif  // UOPD_TESTS_TESTING_CORPUS_PATHS_H_
