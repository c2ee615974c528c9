// One randomized kernel (tests/testing/random_kernels.h) through a whole backend, checked against
// the reference interpreter: it must run, or stop with OUT_OF_RANGE exactly when an index leaves
// its buffer, and its output must agree. Shared by the CPU and GPU tests so both hold a backend
// to the same contract.
#ifndef UOPD_TESTS_TESTING_RANDOM_KERNEL_CHECK_H_
#define UOPD_TESTS_TESTING_RANDOM_KERNEL_CHECK_H_

#include <atomic>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "core/corpus/compare.h"
#include "core/ir/printer.h"
#include "core/opt/scheduler.h"
#include "core/wire/decode.h"
#include "gtest/gtest.h"
#include "tests/testing/kernel_runner.h"
#include "tests/testing/random_kernels.h"
#include "tests/testing/reference_interpreter.h"

namespace uopd::testing {

struct RandomKernelOutcomes {
  std::atomic<int> completed{0};
  std::atomic<int> stopped_out_of_range{0};
  std::atomic<int> elements_compared{0};
  std::atomic<int> elements_unspecified{0};  // depend on what the semantics leave open
};

// Applies a random list of valid opts for `target` (1 to 4 draws of op, axis and amount; draws
// that do not apply are skipped) and returns the optimized AST and what was applied.
inline std::shared_ptr<const KernelAst> RandomlyOptimized(const KernelAst& ast,
                                                          const OptTarget& target,
                                                          std::mt19937& rng, std::string* applied) {
  Scheduler scheduler(ast, target);
  const OptOp ops[] = {OptOp::kUpcast, OptOp::kUpcast, OptOp::kUnroll, OptOp::kUnroll,
                       OptOp::kPadTo,  OptOp::kThread, OptOp::kSwap};
  const int amounts[] = {0, 2, 3, 4, 8, 16};
  const int draws = 1 + static_cast<int>(rng() % 4);
  for (int d = 0; d < draws; ++d) {
    Opt opt;
    opt.op = ops[rng() % std::size(ops)];
    opt.axis = static_cast<int>(rng() % 4);
    opt.arg = opt.op == OptOp::kSwap ? static_cast<int>(rng() % 4) : amounts[rng() % 6];
    (void)scheduler.Apply(opt);
  }
  *applied = OptsToString(scheduler.applied());
  return scheduler.Finish();
}

// Runs the kernel of `seed` on `device` with bytes from `data_rng`; records failures with gtest.
// Safe to call from several threads at once, each with its own `data_rng`. With `opt_rng`, the
// kernel first gets a random list of valid opts (the reference runs it as written), for
// `opt_target` or else the device's.
inline void CheckRandomKernel(Device& device, uint32_t seed, std::mt19937& data_rng,
                              RandomKernelOutcomes& outcomes, bool long_reductions = false,
                              std::mt19937* opt_rng = nullptr, int64_t outputs = kN,
                              const OptTarget* opt_target = nullptr) {
  Generator generator(seed, long_reductions, outputs);
  std::vector<RandomInput> inputs;
  S out_dtype;
  v1::Graph graph = generator.Make(&inputs, &out_dtype);
  std::vector<HostBuffer> buffers;
  buffers.push_back(HostBuffer{std::string(outputs * Size(out_dtype), '\0')});
  for (const RandomInput& input : inputs) {
    std::string bytes(input.elements * Size(input.dtype), '\0');
    for (char& c : bytes) c = static_cast<char>(data_rng());
    if (input.dtype == v1::DType::BOOL) {
      for (char& c : bytes) c &= 1;
    }
    buffers.push_back(HostBuffer{bytes});
  }
  const int64_t shift = static_cast<int64_t>(data_rng() % 41);
  auto ast = DecodeKernelAst(graph);
  ASSERT_TRUE(ast.ok()) << "seed " << seed << ": " << ast.status();
  // The reference interpreter runs the same kernel on copies of the same bytes, under the
  // host's choices of what the semantics leave open and under others (NaN bits, the last bits
  // of transcendentals, 2 ulp either way, reduction order: reversed, split among a warp's 32
  // lanes, among 8 vector lanes, shuffled): outputs that differ between them are not held
  // against the backend.
  // Vector partial sums of an unrolled reduction split it among 2 to 16 lanes as well, and a
  // PADTO of a reduce axis combines the identity after the last value.
  const Unspecified variations[] = {{},
                                    {false, 0, true, 0, 0},
                                    {true, 2, false, 32, 0},
                                    {true, -2, false, 8, 0},
                                    {false, 0, false, 0, 1},
                                    {true, 0, false, 0, 2},
                                    {false, 0, false, 2, 0},
                                    {false, 0, false, 4, 0},
                                    {false, 0, false, 16, 0},
                                    {false, 0, false, 0, 0, true}};
  std::vector<std::vector<std::string>> references;
  absl::Status expected;
  for (const Unspecified& variation : variations) {
    std::vector<std::string> reference;
    for (const HostBuffer& b : buffers) reference.push_back(b.bytes);
    absl::Status status = Interpret(**ast, reference, {{"shift", shift}}, variation);
    if (references.empty()) expected = status;
    if (status.code() != expected.code()) return;  // whether it stops depends on them: skip
    references.push_back(std::move(reference));
  }
  const std::vector<HostBuffer> original = buffers;
  std::shared_ptr<const KernelAst> run = *ast;
  std::string opts = "as written";
  if (opt_rng != nullptr) {
    run = RandomlyOptimized(**ast,
                            opt_target != nullptr
                                ? *opt_target
                                : OptTargetFor("CPU", device.compiler().Target(), device.threads()),
                            *opt_rng, &opts);
  }
  absl::Status status = RunAstOn(device, run, buffers, {{"shift", shift}});
  // Only slot 0 is written: every input reads back as it was sent (nothing else wrote there).
  for (size_t i = 1; i < buffers.size(); ++i) {
    EXPECT_EQ(buffers[i].bytes, original[i].bytes)
        << "seed " << seed << (long_reductions ? " (long)" : "") << ", " << opts << ": input slot "
        << i << " changed on the device";
  }
  // Indices may leave their buffers: the kernel must then stop cleanly, and say so.
  EXPECT_TRUE(status.ok() || status.code() == absl::StatusCode::kOutOfRange)
      << "seed " << seed << ", " << opts << ": " << status;
  EXPECT_EQ(status.code(), expected.code())
      << "seed " << seed << ", " << opts << ": " << status << " vs " << expected;
  (status.ok() ? outcomes.completed : outcomes.stopped_out_of_range)++;
  if (!status.ok() || !expected.ok()) return;
  // Reductions may be reassociated (vectorized) and products fused (FMA), so floats compare
  // with a tolerance.
  Scalar out = static_cast<Scalar>(out_dtype);
  double tolerance = IsNarrowFloat(out) ? 2e-2 : 1e-4;
  Tolerance within{tolerance, tolerance};
  const size_t item = Size(out_dtype);
  std::string expected_bytes = references[0][0];
  for (size_t e = 0; e < expected_bytes.size() / item; ++e) {
    auto element = [&](const std::string& bytes) { return bytes.substr(e * item, item); };
    bool open = false;
    for (size_t r = 1; r < references.size(); ++r) {
      open |= CompareBuffers(out, element(references[r][0]), element(references[0][0]), within)
                  .has_value();
    }
    if (open) {  // any value is right here: expect the backend's own
      expected_bytes.replace(e * item, item, element(buffers[0].bytes));
      outcomes.elements_unspecified++;
    } else {
      outcomes.elements_compared++;
    }
  }
  auto diff = CompareBuffers(out, buffers[0].bytes, expected_bytes, within);
  if (!diff.has_value()) return;
  // Tell a deterministic difference from one that depends on what ran beside it: run the kernel
  // and the reference again, alone.
  static absl::Mutex alone;
  absl::MutexLock lock(&alone);
  std::vector<HostBuffer> again = original;
  absl::Status rerun = RunAstOn(device, run, again, {{"shift", shift}});
  std::vector<std::string> reference;
  for (const HostBuffer& b : original) reference.push_back(b.bytes);
  (void)Interpret(**ast, reference, {{"shift", shift}});
  ADD_FAILURE() << "seed " << seed << (long_reductions ? " (long)" : "") << " (" << ScalarName(out)
                << ", " << opts << "): " << *diff << "; run again alone: "
                << (!rerun.ok()                          ? rerun.ToString()
                    : again[0].bytes == buffers[0].bytes ? "the same output"
                                                         : "a different output")
                << ", the reference "
                << (reference[0] == references[0][0] ? "the same" : "different")
                << (std::getenv("UOPD_RANDOM_DUMP") != nullptr ? "\n" + PrintGraph(run->root) : "");
}

// How many seeds to run: UOPD_RANDOM_KERNELS=N overrides the default (more for a longer hunt).
inline uint32_t RandomKernelCount(uint32_t default_count) {
  const char* count = std::getenv("UOPD_RANDOM_KERNELS");
  return count != nullptr ? static_cast<uint32_t>(std::atoi(count)) : default_count;
}

}  // namespace uopd::testing

#endif  // UOPD_TESTS_TESTING_RANDOM_KERNEL_CHECK_H_
