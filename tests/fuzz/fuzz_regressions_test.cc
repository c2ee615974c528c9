// Replays every input fuzzing found a crash with (tests/fuzz/regressions/), in the normal build:
// each must now pass kernel_ast_check without crashing.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"
#include "tests/fuzz/kernel_ast_check.h"

namespace uopd {
namespace {

TEST(FuzzRegressions, EveryInputThatOnceCrashedIsHandled) {
  int replayed = 0;
  for (const auto& file : std::filesystem::directory_iterator(UOPD_FUZZ_REGRESSIONS_DIR)) {
    if (file.path().filename().string()[0] == '.') continue;
    std::ifstream in(file.path(), std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    const std::string data = bytes.str();
    SCOPED_TRACE(file.path().string());
    fuzz::CheckKernelAst(reinterpret_cast<const uint8_t*>(data.data()), data.size());
    ++replayed;
  }
  std::printf("[  NOTE    ] replayed %d fuzzing regression inputs\n", replayed);
}

}  // namespace
}  // namespace uopd
