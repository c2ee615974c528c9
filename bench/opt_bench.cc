// Kernel time of a plan file (bench/tinygrad exports) on the CPU with a given opt list applied to
// each of its kernels: for trying optimizations by hand.
//
//   opt_bench PLAN.json [--opts "UPCAST(1,16) UPCAST(0,8)"] [--reps N]
#include <cstdio>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "backends/cpu/cpu_device.h"
#include "bench/bench_util.h"
#include "core/cache/caching_program_source.h"
#include "core/corpus/corpus_file.h"
#include "core/corpus/corpus_runner.h"
#include "core/opt/scheduler.h"

namespace {

// "UPCAST(1,16) UNROLL(0,4)" -> opts.
std::vector<uopd::Opt> ParseOpts(const std::string& text) {
  std::vector<uopd::Opt> opts;
  for (absl::string_view item : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    size_t open = item.find('(');
    uopd::Opt opt;
    opt.op = *uopd::ParseOptOp(item.substr(0, open));
    std::vector<std::string> args =
        absl::StrSplit(absl::StripSuffix(item.substr(open + 1), ")"), ',');
    int axis = 0;
    if (absl::SimpleAtoi(args[0], &axis)) opt.axis = axis;
    if (args.size() > 1) (void)absl::SimpleAtoi(args[1], &opt.arg);
    opts.push_back(opt);
  }
  return opts;
}

class OptimizingSource : public uopd::ProgramSource {
 public:
  OptimizingSource(uopd::CachingProgramSource& inner, std::vector<uopd::Opt> opts, int cores)
      : inner_(inner), opts_(std::move(opts)), cores_(cores) {}
  absl::StatusOr<std::shared_ptr<const uopd::LoadedProgram>> Get(
      uopd::Device& device, std::shared_ptr<const uopd::KernelAst> ast,
      const uopd::OptimizeRequest&, const uopd::StopFlag* stop) override {
    uopd::Scheduler scheduler(*ast, uopd::OptTarget::Cpu(cores_));
    for (const uopd::Opt& opt : opts_) {
      if (absl::Status s = scheduler.Apply(opt); !s.ok()) return s;
    }
    uopd::OptimizeRequest none;
    none.mode = uopd::OptMode::kNone;
    return inner_.Get(device, scheduler.Finish(), none, stop);
  }

 private:
  uopd::CachingProgramSource& inner_;
  std::vector<uopd::Opt> opts_;
  int cores_;
};

}  // namespace

int main(int argc, char** argv) {
  std::string path, opts_text;
  int reps = 5;
  bool emit = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--opts" && i + 1 < argc) {
      opts_text = argv[++i];
    } else if (arg == "--emit") {
      emit = true;
    } else if (arg == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else {
      path = arg;
    }
  }
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  uopd::ThreadPool pool(cores - 1);
  auto device = uopd::CreateCpuDevice(&pool);
  auto entry = uopd::LoadCorpusFile(path);
  if (!device.ok() || !entry.ok() || !entry->is_plan) {
    std::fprintf(stderr, "usage: opt_bench PLAN.json [--opts ...]\n");
    return 2;
  }
  if (emit) {
    auto ast = uopd::DecodeKernelAst(entry->plan.kernels(0).ast());
    uopd::Scheduler scheduler(**ast, uopd::OptTarget::Cpu(cores));
    for (const uopd::Opt& opt : ParseOpts(opts_text)) (void)scheduler.Apply(opt);
    auto optimized = scheduler.Finish();
    auto spec = (*device)->renderer().Render(optimized, "k");
    std::printf("%s\n", spec.ok() ? spec->src.c_str() : spec.status().ToString().c_str());
    return 0;
  }
  uopd::KernelCache cache;
  uopd::CachingProgramSource inner(cache);
  OptimizingSource source(inner, ParseOpts(opts_text), cores);
  uopd::CorpusRunOptions options;
  options.source = &source;
  options.pool = &pool;
  absl::Status first = uopd::RunCorpusEntry(**device, *entry, options);
  std::printf("result: %s\n",
              first.ok() ? "matches tinygrad" : first.ToString().substr(0, 300).c_str());
  std::vector<double> times =
      uopd::bench::Sample(1, reps, [&] { (void)uopd::RunCorpusEntry(**device, *entry, options); });
  std::printf("plan time (incl. buffer setup and checks): median %.2f ms\n",
              1e3 * uopd::bench::Percentile(times, 0.5));
  return 0;
}
