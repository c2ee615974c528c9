// Writes the kernel ASTs of corpus files as binary uopd.v1.Graph messages, one file each: the
// seeds of kernel_ast_fuzzer.
//
//   make_fuzz_seeds OUT_DIR CORPUS_PATH...
#include <cstdio>
#include <fstream>

#include "core/corpus/corpus_file.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: make_fuzz_seeds OUT_DIR CORPUS_PATH...\n");
    return 2;
  }
  auto files = uopd::ListCorpusFiles(std::vector<std::string>(argv + 2, argv + argc));
  if (!files.ok()) {
    std::fprintf(stderr, "%s\n", files.status().ToString().c_str());
    return 1;
  }
  int written = 0;
  for (const std::string& file : *files) {
    auto entry = uopd::LoadCorpusFile(file);
    if (!entry.ok() || entry->is_plan) continue;
    std::ofstream(std::string(argv[1]) + "/seed_" + std::to_string(written++), std::ios::binary)
        << entry->kase.ast().SerializeAsString();
  }
  std::printf("%d seeds\n", written);
  return 0;
}
