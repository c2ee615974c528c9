// Randomized kernels through the whole CPU pipeline: every well-formed graph the generator makes
// must render, compile and run, or stop with OUT_OF_RANGE when an index leaves its buffer, and
// agree with the reference interpreter (tests/testing/reference_interpreter.cc). Anything else is
// a uopd bug (INTERNAL means we generated source LLVM rejects).
//
// Over 1,500 seeds (UOPD_RANDOM_KERNELS=1500) the only disagreements seen are the ones the
// semantics allow: reassociated float reductions seen through BITCAST or overflow, and the bits
// of NaNs that arithmetic produced (x86 makes negative ones) seen through BITCAST.
#include <cstdlib>
#include <random>

#include "absl/strings/str_cat.h"
#include "backends/cpu/cpu_device.h"
#include "core/corpus/compare.h"
#include "gtest/gtest.h"
#include "tests/testing/kernel_runner.h"
#include "tests/testing/random_kernels.h"
#include "tests/testing/reference_interpreter.h"

namespace uopd {
namespace {

using testing::Generator;
using testing::HostBuffer;
using testing::kN;
using testing::S;
using testing::Size;
using v1::DType;
TEST(RandomKernels, RenderCompileAndRunOnTheCpu) {
  ThreadPool pool(1);
  auto device = CreateCpuDevice(&pool);
  ASSERT_TRUE(device.ok()) << device.status();
  std::mt19937 data_rng(99);
  int outcomes[2] = {0, 0};
  // UOPD_RANDOM_KERNELS=N runs more (the default keeps the suite quick).
  const char* count = std::getenv("UOPD_RANDOM_KERNELS");
  const uint32_t kernels = count != nullptr ? static_cast<uint32_t>(std::atoi(count)) : 400;
  for (uint32_t seed = 0; seed < kernels; ++seed) {
    Generator generator(seed);
    std::vector<std::pair<S, int>> inputs;
    S out_dtype;
    v1::Graph graph = generator.Make(&inputs, &out_dtype);
    std::vector<HostBuffer> buffers;
    buffers.push_back(HostBuffer{std::string(kN * Size(out_dtype), '\0')});
    for (const auto& [dtype, node] : inputs) {
      std::string bytes(kN * Size(dtype), '\0');
      for (char& c : bytes) c = static_cast<char>(data_rng());
      if (dtype == DType::BOOL) {
        for (char& c : bytes) c &= 1;
      }
      buffers.push_back(HostBuffer{bytes});
    }
    const int64_t shift = static_cast<int64_t>(data_rng() % 41);
    // The reference interpreter runs the same kernel on copies of the same bytes.
    std::vector<std::string> reference;
    for (const HostBuffer& b : buffers) reference.push_back(b.bytes);
    auto ast = DecodeKernelAst(graph);
    ASSERT_TRUE(ast.ok()) << "seed " << seed << ": " << ast.status();
    absl::Status expected = testing::Interpret(**ast, reference, {{"shift", shift}});
    absl::Status status = testing::RunOn(**device, graph, buffers, {{"shift", shift}});
    // Indices may leave their buffers: the kernel must then stop cleanly, and say so.
    EXPECT_TRUE(status.ok() || status.code() == absl::StatusCode::kOutOfRange)
        << "seed " << seed << ": " << status;
    EXPECT_EQ(status.code(), expected.code())
        << "seed " << seed << ": " << status << " vs " << expected;
    outcomes[status.ok() ? 0 : 1]++;
    if (!status.ok() || !expected.ok()) continue;
    // Reductions may be reassociated (vectorized), so floats compare with a tolerance.
    Scalar out = static_cast<Scalar>(out_dtype);
    double tolerance = IsNarrowFloat(out) ? 2e-2 : 1e-4;
    auto diff =
        CompareBuffers(out, buffers[0].bytes, reference[0], Tolerance{tolerance, tolerance});
    EXPECT_FALSE(diff.has_value()) << "seed " << seed << " (" << ScalarName(out) << "): " << *diff;
  }
  EXPECT_GT(outcomes[0], 0) << "no kernel ran to completion";
  EXPECT_GT(outcomes[1], 0) << "no kernel exercised a run-time bounds check";
}

}  // namespace
}  // namespace uopd
