// uopd-render-corpus: writes the source every renderer makes of every corpus case, unoptimized,
// with the heuristics, and with random valid opt lists, one file each under OUT_DIR:
//
//   uopd-render-corpus OUT_DIR CORPUS_PATH...
//
// A codegen change that should not change what is spelled (a refactor) is checked by rendering
// before and after it and diffing the two folders (`diff -r`); a change that should is reviewed
// the same way. The golden tests pin six kernels; this covers every case and opt list.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/llvm_renderer.h"
#include "core/corpus/corpus_file.h"
#include "core/opt/optimize.h"
#include "core/opt/search_space.h"
#include "core/wire/decode.h"
#ifdef UOPD_WITH_CUDA
#include "backends/cuda/cuda_renderer.h"
#endif

namespace {

struct Variant {
  std::string name;
  std::shared_ptr<const uopd::Renderer> renderer;
  uopd::OptTarget target;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: uopd-render-corpus OUT_DIR CORPUS_PATH...\n");
    return 2;
  }
  const std::filesystem::path out = argv[1];
  std::vector<std::string> paths(argv + 2, argv + argc);
  auto files = uopd::ListCorpusFiles(paths);
  if (!files.ok()) {
    std::fprintf(stderr, "%s\n", files.status().ToString().c_str());
    return 2;
  }
  uopd::LlvmRendererOptions narrow;  // what x86 without AVX-512 gets (backends/cpu/cpu_device.cc)
  narrow.max_widened_accumulators = 16;
  narrow.max_masked_vector_bits = 256;
  uopd::LlvmRendererOptions grid;
  grid.gpu_lowering = true;
  std::vector<Variant> variants = {
      {"cpu", std::make_shared<uopd::LlvmRenderer>(), uopd::OptTarget::Cpu(8)},
      {"cpu-avx2", std::make_shared<uopd::LlvmRenderer>(narrow), uopd::OptTarget::Cpu(8)},
      {"cpu-grid", std::make_shared<uopd::LlvmRenderer>(grid), uopd::OptTarget::Cuda("sm_90")},
#ifdef UOPD_WITH_CUDA
      {"cuda", std::make_shared<uopd::CudaRenderer>(), uopd::OptTarget::Cuda("sm_90")},
#endif
  };
  int written = 0, failed = 0;
  for (const std::string& file : *files) {
    auto entry = uopd::LoadCorpusFile(file);
    if (!entry.ok() || entry->is_plan) continue;
    auto ast = uopd::DecodeKernelAst(entry->kase.ast());
    if (!ast.ok()) continue;
    const std::string stem = std::filesystem::path(file).stem().string();
    for (const Variant& v : variants) {
      std::filesystem::create_directories(out / v.name);
      std::vector<std::pair<std::string, uopd::OptimizeRequest>> requests = {
          {"none", {uopd::OptMode::kNone, {}}}, {"heuristic", {uopd::OptMode::kHeuristic, {}}}};
      uopd::OptimizeRequest fma{uopd::OptMode::kHeuristic, {}};
      fma.render.allow_fma = true;
      requests.push_back({"heuristic-fma", fma});
      for (uint64_t seed = 1; seed <= 3; ++seed) {
        requests.push_back(
            {"random" + std::to_string(seed),
             {uopd::OptMode::kOpts, uopd::RandomOptList(*ast, v.target, seed * 7919, 1 + seed)}});
      }
      for (const auto& [mode, request] : requests) {
        std::string text;
        auto optimized = uopd::OptimizeKernel(*ast, v.target, request);
        if (!optimized.ok()) {
          text = "optimize: " + optimized.status().ToString();
        } else {
          auto spec = v.renderer->Render(optimized->ast, stem, request.render);
          text = spec.ok() ? spec->src : "render: " + spec.status().ToString();
          if (spec.ok()) {
            text += "\n; global " + std::to_string(spec->global_size[0].constant) +
                    (spec->global_size[0].expr != nullptr ? " (symbolic)" : "");
            if (spec->local_size)
              text += " local " + std::to_string((*spec->local_size)[0].constant);
          }
          if (!spec.ok()) ++failed;
        }
        std::ofstream(out / v.name / (stem + "." + mode + ".txt")) << text;
        ++written;
      }
    }
  }
  std::printf("%d sources written (%d refused)\n", written, failed);
  return 0;
}
