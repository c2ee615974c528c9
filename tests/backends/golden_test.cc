// Golden tests: the rendered source of a few corpus kernels, checked in under tests/golden/.
// A renderer change shows up as a diff reviewers read; a pure refactor produces none.
// Regenerate with UOPD_REGENERATE_GOLDEN=1 ./golden_test (then review `git diff tests/golden`).
#include <cstdlib>
#include <fstream>

#include "backends/cpu/llvm_renderer.h"
#include "core/corpus/corpus_file.h"
#include "core/wire/decode.h"
#include "gtest/gtest.h"
#include "tests/testing/corpus_paths.h"
#include "tests/testing/status_matchers.h"
#ifdef UOPD_WITH_CUDA
#include "backends/cuda/cuda_renderer.h"
#endif

namespace uopd {
namespace {

// The last is a row reduction the lanes of a GPU warp share.
constexpr const char* kKernels[] = {"hw_masked_shift_9",  "red_sum_4d_2x3x4x5",
                                    "sym_two_vars_i4_j1", "cast_f32_to_f16_overflow_6",
                                    "hw_threefry_u64_12", "sym_softmax_n8__k1"};

// `start` marks where a kernel's own text begins: the shared prelude before it (helpers every
// kernel carries) is not part of a kernel's golden.
void CheckGolden(const Renderer& renderer, const std::string& backend, const std::string& ext,
                 const std::string& start) {
  const bool regenerate = std::getenv("UOPD_REGENERATE_GOLDEN") != nullptr;
  for (const char* name : kKernels) {
    auto entry = LoadCorpusFile(testing::CorpusDir() + "/cases/" + name + ".json");
    ASSERT_TRUE(entry.ok()) << entry.status();
    auto ast = DecodeKernelAst(entry->kase.ast());
    ASSERT_TRUE(ast.ok()) << ast.status();
    auto spec = renderer.Render(*ast, name);
    ASSERT_TRUE(spec.ok()) << spec.status();
    const std::string path = std::string(UOPD_GOLDEN_DIR) + "/" + backend + "/" + name + ext;
    const size_t begin = spec->src.find(start);
    ASSERT_NE(begin, std::string::npos) << "no '" << start << "' in:\n" << spec->src;
    std::string src = spec->src.substr(begin);
    if (regenerate) {
      std::ofstream(path) << src;
      continue;
    }
    auto golden = ReadFileToString(path);
    ASSERT_TRUE(golden.ok()) << path << " is missing: run with UOPD_REGENERATE_GOLDEN=1";
    EXPECT_EQ(src, *golden) << backend << " rendering of " << name << " changed; if intended, "
                            << "regenerate with UOPD_REGENERATE_GOLDEN=1 and review the diff";
  }
}

TEST(Golden, CpuLlvmIr) { CheckGolden(LlvmRenderer(), "cpu", ".ll", "; kernel "); }

#ifdef UOPD_WITH_CUDA
TEST(Golden, CudaC) { CheckGolden(CudaRenderer(), "cuda", ".cu", "// kernel "); }
#endif

}  // namespace
}  // namespace uopd
