// The compile worker pool with real workers (the uopd binary as `uopd compile-worker`): jobs
// for both backends, what the sandbox refuses them, and workers lost to crashes and stops.
#include "core/worker/compile_worker_pool.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

using testing::StatusIs;

// A CPU target every x86-64 machine runs: the generic CPU, no optional features.
constexpr char kCpuTarget[] = "x86_64-pc-linux-gnu;x86-64;";

class CompileWorkerPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CompileWorkerPoolOptions options;
    options.executable = UOPD_DAEMON_PATH;
    options.argv = {UOPD_DAEMON_PATH, "compile-worker"};
    options.workers = 1;
    options.compile_timeout = absl::Seconds(60);
    auto pool = CompileWorkerPool::Start(options);
    ASSERT_TRUE(pool.ok()) << pool.status();
    pool_ = *std::move(pool);
  }
  ProgramSpec Spec(const std::string& name, const std::string& src) {
    ProgramSpec spec;
    spec.name = name;
    spec.src = src;
    return spec;
  }
  std::unique_ptr<CompileWorkerPool> pool_;
};

TEST_F(CompileWorkerPoolTest, ReportsItsSandbox) {
  EXPECT_NE(pool_->sandbox().find("seccomp"), std::string::npos) << pool_->sandbox();
}

// The nice values of this process's children, from /proc/<pid>/stat (field 19).
std::vector<int> NiceOfChildren() {
  std::vector<int> nices;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return nices;
  while (dirent* entry = readdir(proc)) {
    int pid = 0;
    if (!absl::SimpleAtoi(entry->d_name, &pid)) continue;
    std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::vector<std::string> fields = absl::StrSplit(text.substr(close + 2), ' ');
    int parent = 0, nice = 0;  // fields[0] is field 3 (state): ppid is [1], nice [16]
    if (fields.size() > 16 && absl::SimpleAtoi(fields[1], &parent) && parent == getpid() &&
        absl::SimpleAtoi(fields[16], &nice)) {
      nices.push_back(nice);
    }
  }
  closedir(proc);
  return nices;
}

// --compile_nice: a client keeping every worker busy slowed other clients' Executes and cache
// hits 2.7x (p99) with workers at the daemon's priority, 1.2x with workers at nice +10.
TEST_F(CompileWorkerPoolTest, WorkersRunAtTheNiceValueAsked) {
  errno = 0;
  const int own = getpriority(PRIO_PROCESS, 0);
  ASSERT_EQ(errno, 0);
  ASSERT_EQ(NiceOfChildren(), std::vector<int>{own}) << "the fixture's one worker, not nicer";
  pool_.reset();
  CompileWorkerPoolOptions options;
  options.executable = UOPD_DAEMON_PATH;
  options.argv = {UOPD_DAEMON_PATH, "compile-worker"};
  options.workers = 2;
  options.priority.nice = 7;
  auto nicer = CompileWorkerPool::Start(options);
  ASSERT_TRUE(nicer.ok()) << nicer.status();
  // Start waits for the first worker only, and a worker is made nicer just after it is spawned.
  const std::vector<int> expected(2, std::min(19, own + 7));
  std::vector<int> nices;
  for (int i = 0; i < 200 && (nices = NiceOfChildren()) != expected; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(nices, expected);
}

#ifdef UOPD_WITH_CUDA
TEST_F(CompileWorkerPoolTest, NvrtcReadsTheCudaHeadersButNoOtherFile) {
  auto fp16 = pool_->Compile("CUDA", "sm_90",
                             Spec("k",
                                  "#include <cuda_fp16.h>\n"
                                  "extern \"C\" __global__ void k(__half* x) { x[0] = x[1]; }\n"),
                             nullptr);
  UOPD_ASSERT_OK(fp16);
  EXPECT_NE(fp16->ptx.find(".entry k"), std::string::npos);
  // Client CUDA C that includes a host file: NVRTC cannot open it inside the sandbox.
  auto passwd = pool_->Compile(
      "CUDA", "sm_90", Spec("k", "#include \"/etc/passwd\"\nextern \"C\" __global__ void k() {}\n"),
      nullptr);
  EXPECT_FALSE(passwd.ok());
  EXPECT_EQ(passwd.status().message().find("root:"), std::string::npos) << passwd.status();
  UOPD_EXPECT_OK(pool_->Compile(
      "CUDA", "sm_80", Spec("k", "extern \"C\" __global__ void k(int* x) { *x = 1; }\n"), nullptr))
      << "a target the worker had not warmed up";
}
#endif

// LLVM IR that takes LLVM about a second or more at -O3: `n` chains of float arithmetic, each
// loaded, mixed with its neighbours and stored.
std::string SlowToCompile(int n) {
  std::string ir = "define i32 @slow(ptr %b, ptr %v) {\n";
  for (int i = 0; i < n; ++i) {
    absl::StrAppend(&ir, "  %p", i, " = getelementptr float, ptr %b, i64 ", i, "\n", "  %x", i,
                    " = load float, ptr %p", i, "\n", "  %y", i, " = fmul float %x", i, ", ",
                    i == 0 ? "%x0" : absl::StrCat("%y", i - 1), "\n", "  %z", i, " = fadd float %y",
                    i, ", 1.5\n", "  store float %z", i, ", ptr %p", i, "\n");
  }
  return ir + "  ret i32 0\n}\n";
}

// A kernel that took seconds to compile held its worker (and a core) at full priority: with one
// worker, another caller's compile of a trivial kernel waited for all of it. Past demote_after
// the slow compile's worker is made nicer and hands its turn back, a worker starts in its
// place, and the other caller's compile is done while the slow one still runs.
TEST_F(CompileWorkerPoolTest, ASlowCompileIsDemotedAndAnotherCallersCompileDoesNotWaitForIt) {
  errno = 0;
  const int own = getpriority(PRIO_PROCESS, 0);
  ASSERT_EQ(errno, 0);
  StopFlag alice, carol;
  alice.set_share("alice");
  carol.set_share("carol");
  std::atomic<bool> slow_done{false};
  absl::Duration slow_took;
  std::thread slow([&] {
    const absl::Time start = absl::Now();
    UOPD_EXPECT_OK(pool_->Compile("CPU", kCpuTarget, Spec("slow", SlowToCompile(6000)), &alice));
    slow_took = absl::Now() - start;
    slow_done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // past the 250 ms default
  std::vector<int> nices = NiceOfChildren();
  const std::string ok = "define i32 @k(ptr %b, ptr %v) {\n  ret i32 0\n}\n";
  const absl::Time start = absl::Now();
  UOPD_EXPECT_OK(pool_->Compile("CPU", kCpuTarget, Spec("k", ok), &carol));
  const absl::Duration quick_took = absl::Now() - start;
  const bool slow_still_running = !slow_done;
  slow.join();
  ASSERT_TRUE(slow_still_running) << "the slow compile took only " << slow_took;
  EXPECT_NE(std::find(nices.begin(), nices.end(), std::min(19, own + 10)), nices.end())
      << "no worker was made nicer";
  EXPECT_LT(quick_took, slow_took / 2) << "the trivial compile waited for the slow one";
  EXPECT_EQ(pool_->stats().demoted, 1);
  UOPD_EXPECT_OK(pool_->Compile("CPU", kCpuTarget, Spec("k", ok), &carol));
}

TEST_F(CompileWorkerPoolTest, ACrashOrAStopCostsTheWorkerAndTheNextJobGetsAFreshOne) {
  const std::string ok = "define i32 @k(ptr %b, ptr %v) {\n  ret i32 0\n}\n";
  auto parsed = pool_->Compile("CPU", kCpuTarget, Spec("k", ok), nullptr);
  UOPD_ASSERT_OK(parsed);
  EXPECT_EQ(parsed->bytes.substr(1, 3), "ELF");
  const std::string select =
      "declare i64 @llvm.aarch64.get.fpcr()\n"
      "define i32 @k(ptr %b, ptr %v) {\n  %x = call i64 @llvm.aarch64.get.fpcr()\n"
      "  %t = trunc i64 %x to i32\n  ret i32 %t\n}\n";
  EXPECT_TRUE(StatusIs(pool_->Compile("CPU", kCpuTarget, Spec("k", select), nullptr),
                       absl::StatusCode::kInternal, {"Cannot select"}));
  UOPD_EXPECT_OK(pool_->Compile("CPU", kCpuTarget, Spec("k", ok), nullptr));
  StopFlag stop;
  stop.Stop();
  EXPECT_TRUE(StatusIs(pool_->Compile("CPU", kCpuTarget, Spec("k", ok), &stop),
                       absl::StatusCode::kCancelled));
  EXPECT_TRUE(StatusIs(pool_->Compile("CPU", "nonsense", Spec("k", ok), nullptr),
                       absl::StatusCode::kInvalidArgument, {"not a CPU target"}));
  CompileWorkerStats stats = pool_->stats();
  EXPECT_EQ(stats.crashes, 1);
  EXPECT_GE(stats.started, 2);
}

}  // namespace
}  // namespace uopd
