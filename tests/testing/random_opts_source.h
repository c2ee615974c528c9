// Test helper: a ProgramSource that optimizes every kernel with a random valid opt list (drawn
// from a seed and the kernel's AST hash) instead of what was asked: any valid list must keep a
// kernel's meaning.
#ifndef UOPD_TESTS_TESTING_RANDOM_OPTS_SOURCE_H_
#define UOPD_TESTS_TESTING_RANDOM_OPTS_SOURCE_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "core/corpus/corpus_file.h"
#include "core/opt/optimize.h"
#include "core/opt/search_space.h"
#include "core/plan/program_source.h"
#include "core/wire/decode.h"

namespace uopd::testing {

class RandomOptsSource : public ProgramSource {
 public:
  // Opts are drawn for and applied with `target`, or the device's own target when none (a GPU
  // target on the CPU's GPU lowering checks GPU opt lists without a GPU).
  RandomOptsSource(ProgramSource& inner, uint64_t seed,
                   std::optional<OptTarget> target = std::nullopt)
      : inner_(inner), seed_(seed), target_(std::move(target)) {}

  absl::StatusOr<std::shared_ptr<const LoadedProgram>> Get(Device& device,
                                                           std::shared_ptr<const KernelAst> ast,
                                                           const OptimizeRequest&,
                                                           const StopFlag* stop) override {
    const OptTarget target = target_.has_value()
                                 ? *target_
                                 : OptTargetFor(device.spec().base_device_key(),
                                                device.compiler().Target(), device.threads());
    OptimizeRequest request{OptMode::kOpts, {}};
    if (!IsAlreadyOptimized(*ast)) {
      const uint64_t seed = seed_ * 0x9E3779B97F4A7C15ull ^ std::hash<std::string>()(ast->hash);
      request.opts = RandomOptList(ast, target, seed, 1 + static_cast<int>(seed % 4));
    }
    {
      absl::MutexLock lock(&mu_);
      chosen_[ast->hash] = OptsToString(request.opts);
    }
    auto optimized = OptimizeKernel(ast, target, request);
    if (!optimized.ok()) return optimized.status();
    return inner_.Get(device, optimized->ast, OptimizeRequest{OptMode::kNone, {}}, stop);
  }

  // "k_abc: UPCAST(0, 4) ...; ..." for the kernels of `entry`: what a failure ran with.
  std::string Describe(const CorpusEntry& entry) {
    std::vector<const v1::Graph*> asts;
    if (entry.is_plan) {
      for (const auto& kernel : entry.plan.kernels()) asts.push_back(&kernel.ast());
    } else {
      asts.push_back(&entry.kase.ast());
    }
    std::string out;
    absl::MutexLock lock(&mu_);
    for (const v1::Graph* wire : asts) {
      auto ast = DecodeKernelAst(*wire);
      if (!ast.ok()) continue;
      auto it = chosen_.find((*ast)->hash);
      out += (*ast)->DefaultName() + ": " + (it == chosen_.end() ? "?" : it->second) + "; ";
    }
    return out;
  }

 private:
  ProgramSource& inner_;
  const uint64_t seed_;
  const std::optional<OptTarget> target_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::string> chosen_ ABSL_GUARDED_BY(mu_);
};

}  // namespace uopd::testing

#endif  // UOPD_TESTS_TESTING_RANDOM_OPTS_SOURCE_H_
