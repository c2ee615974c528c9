// ExecutionPlan: corpus plans, dependency hazards (also through views), parallel and serial
// execution observed through timings, variable rebinding without recompiling, and scale.
#include "core/plan/execution_plan.h"

#include <chrono>
#include <limits>
#include <thread>

#include "absl/synchronization/notification.h"
#include "backends/cpu/cpu_device.h"
#include "core/cache/memory_tier.h"
#include "core/cache/program_codec.h"
#include "core/corpus/corpus_runner.h"
#include "core/program/caching_program_source.h"
#include "core/wire/decode.h"
#include "gtest/gtest.h"
#include "tests/testing/corpus_paths.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/sample_kernels.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

using testing::GraphBuilder;
using testing::StatusIs;
using v1::DType;
using v1::Node;

class ExecutionPlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto device = CreateCpuDevice(&pool_);
    ASSERT_TRUE(device.ok()) << device.status();
    device_ = std::move(*device);
  }

  BufferView Floats(std::vector<float> values) {
    auto storage = DeviceBuffer::Create(*device_, values.size() * 4);
    EXPECT_TRUE(storage.ok());
    std::memcpy((*storage)->data(), values.data(), values.size() * 4);
    return *BufferView::Whole(*storage, Scalar::kFloat32);
  }
  BufferView Ints(std::vector<int32_t> values) {
    auto storage = DeviceBuffer::Create(*device_, values.size() * 4);
    EXPECT_TRUE(storage.ok());
    std::memcpy((*storage)->data(), values.data(), values.size() * 4);
    return *BufferView::Whole(*storage, Scalar::kInt32);
  }
  static std::vector<float> Read(const BufferView& view) {
    std::vector<float> out(view.size);
    std::memcpy(out.data(), view.data(), view.bytes());
    return out;
  }
  KernelBinding Bind(const v1::Graph& wire, std::vector<int> buffers,
                     std::map<std::string, int64_t> fixed = {}) {
    auto ast = DecodeKernelAst(wire);
    EXPECT_TRUE(ast.ok()) << ast.status();
    return KernelBinding{*ast, device_.get(), std::move(buffers), std::move(fixed)};
  }
  absl::StatusOr<std::unique_ptr<ExecutionPlan>> Build(std::vector<BufferView> buffers,
                                                       std::vector<KernelBinding> kernels) {
    return ExecutionPlan::Build(std::move(buffers), std::move(kernels), source_, &pool_);
  }

  ThreadPool pool_{3};
  std::unique_ptr<Device> device_;
  // Kernels compiled so far.
  int64_t Compilations() const {
    auto stats = cache_.compile_stats();
    return stats.contains("CPU") ? stats.at("CPU").compilations : 0;
  }

  KernelCache cache_;
  CachingProgramSource source_{cache_};
};

// out[i] = in[i] + c over n float32 elements.
v1::Graph AddConst(int64_t n, double c) {
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, n);
  int r = g.Range(g.Index(n), 0);
  int in = g.Buffer(1, DType::FLOAT32, n);
  int sum = g.Node(Node::ADD, DType::FLOAT32, {g.Load(in, r), g.Float(DType::FLOAT32, c)});
  return g.Sink({g.End(g.Store(g.Target(out, r), sum), {r})});
}

// out[i + n] = in[i] for i < n, out of 2n elements and in of n: tinygrad 0.14's kernel for
// buf[4:8].assign(buf[0:4]), which binds buf whole to out and its first half to in.
v1::Graph CopyIntoSecondHalf(int64_t n) {
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, 2 * n);
  int r = g.Range(g.Index(n), 0);
  int in = g.Buffer(1, DType::FLOAT32, n);
  int shifted = g.Node(Node::ADD, DType::INDEX, {r, g.Index(n)});
  return g.Sink({g.End(g.Store(g.Target(out, shifted), g.Load(in, r)), {r})});
}

// A RANGE of a narrow integer type.
int NarrowRange(GraphBuilder& g, DType::Scalar scalar, int64_t end, int axis,
                v1::RangeArg::AxisType type) {
  int n = g.Node(Node::RANGE, scalar, {g.Int(scalar, end)});
  g.Mut(n)->mutable_arg()->mutable_range()->add_axis(axis);
  g.Mut(n)->mutable_arg()->mutable_range()->set_type(type);
  return n;
}

// out[uint8(r + 254)] = in[r] over an UPCAST r < 4 of type uint8: elements 254, 255, 0 and 1,
// which wrap (found by a review helper: a vector store from lane 0's element wrote 254..257).
v1::Graph WrappingVectorStore(int64_t out_size) {
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, out_size);
  int in = g.Buffer(1, DType::FLOAT32, 4);
  int r = NarrowRange(g, DType::UINT8, 4, 0, v1::RangeArg::UPCAST);
  int at = g.Node(Node::CAST, DType::INDEX,
                  {g.Node(Node::ADD, DType::UINT8, {r, g.Int(DType::UINT8, 254)})});
  int from = g.Node(Node::CAST, DType::INDEX, {r});
  return g.Sink({g.End(g.Store(g.Target(out, at), g.Load(in, from)), {r})});
}

// out[0] = v < 3 ? in[v] : 0 with `in` of no elements: a masked load that never happens.
v1::Graph MaskedLoadOfAnEmptyBuffer() {
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, 1);
  int in = g.Buffer(1, DType::FLOAT32, 0);
  int v = g.Var("v", 0, 5);
  int valid = g.Node(Node::CMPLT, DType::BOOL, {v, g.Index(3)});
  int idx = g.Node(Node::WHERE, DType::INDEX, {valid, v, g.Invalid()});
  return g.Sink({g.Store(g.Target(out, g.Index(0)), g.Load(in, idx))});
}

// out[uint8(r + 1)] = 7 over an UPCAST r < 4 of type uint8, the index left uint8.
v1::Graph NarrowVectorIndex() {
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, 8);
  int r = NarrowRange(g, DType::UINT8, 4, 0, v1::RangeArg::UPCAST);
  int at = g.Node(Node::ADD, DType::UINT8, {r, g.Int(DType::UINT8, 1)});
  return g.Sink({g.End(g.Store(g.Target(out, at), g.Float(DType::FLOAT32, 7)), {r})});
}

// out[i] = c over n float32 elements (reads nothing).
v1::Graph Fill(int64_t n, double c) {
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, n);
  int r = g.Range(g.Index(n), 0);
  return g.Sink({g.End(g.Store(g.Target(out, r), g.Float(DType::FLOAT32, c)), {r})});
}

// out[0] = in[0] + sum(k for k < iterations): a single-threaded kernel that takes a while.
v1::Graph Slow(int64_t iterations) {
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, 1);
  int in = g.Buffer(1, DType::FLOAT32, 1);
  int k = g.Range(g.Index(iterations), 0, v1::RangeArg::REDUCE);
  int value = g.Node(Node::CAST, DType::FLOAT32, {k});
  // A MUL reduction over (1 + k*1e-9) keeps LLVM from summing the series in closed form.
  int term = g.Node(Node::ADD, DType::FLOAT32,
                    {g.Float(DType::FLOAT32, 1.0),
                     g.Node(Node::MUL, DType::FLOAT32, {value, g.Float(DType::FLOAT32, 1e-12)})});
  int product = g.Reduce(Node::MUL, DType::FLOAT32, term, {k});
  int result = g.Node(Node::ADD, DType::FLOAT32, {g.Load(in, g.Index(0)), product});
  return g.Sink({g.Store(g.Target(out, g.Index(0)), result)});
}

TEST_F(ExecutionPlanTest, CorpusPlansMatchTinygradAndSequentialRuns) {
  int plans = 0;
  for (const CorpusEntry& entry : testing::LoadWholeCorpus()) {
    if (!entry.is_plan) continue;
    ++plans;
    UOPD_EXPECT_OK(RunCorpusEntry(*device_, entry, {&source_, &pool_}));
    auto parallel = RunCorpusPlan(*device_, entry.plan, {&source_, &pool_, false});
    auto sequential = RunCorpusPlan(*device_, entry.plan, {&source_, &pool_, true});
    UOPD_ASSERT_OK(parallel);
    UOPD_ASSERT_OK(sequential);
    EXPECT_EQ(*parallel, *sequential) << entry.path;
  }
  EXPECT_GE(plans, 30);
}

TEST_F(ExecutionPlanTest, ReadAfterWriteWaitsForTheWriter) {
  auto plan = Build({Floats({1, 2}), Floats({0, 0}), Floats({0, 0})},
                    {Bind(AddConst(2, 1), {1, 0}), Bind(AddConst(2, 10), {2, 1})});
  UOPD_ASSERT_OK(plan);
  EXPECT_EQ((*plan)->kernels()[1].dependencies, std::vector<int>{0});
  UOPD_ASSERT_OK((*plan)->ExecuteWithVars({}));
  EXPECT_EQ(Read((*plan)->buffers()[2]), (std::vector<float>{12, 13}));
}

TEST_F(ExecutionPlanTest, WriteAfterReadWaitsForTheReader) {
  auto plan = Build({Floats({1, 2}), Floats({0, 0})},
                    {Bind(AddConst(2, 1), {1, 0}), Bind(Fill(2, 7), {0})});
  UOPD_ASSERT_OK(plan);
  EXPECT_EQ((*plan)->kernels()[1].dependencies, std::vector<int>{0});
  UOPD_ASSERT_OK((*plan)->ExecuteWithVars({}));
  EXPECT_EQ(Read((*plan)->buffers()[1]), (std::vector<float>{2, 3})) << "read the old values";
  EXPECT_EQ(Read((*plan)->buffers()[0]), (std::vector<float>{7, 7}));
}

TEST_F(ExecutionPlanTest, WriteAfterWriteKeepsSubmissionOrder) {
  auto plan = Build({Floats({0, 0})}, {Bind(Fill(2, 1), {0}), Bind(Fill(2, 2), {0})});
  UOPD_ASSERT_OK(plan);
  EXPECT_EQ((*plan)->kernels()[1].dependencies, std::vector<int>{0});
  UOPD_ASSERT_OK((*plan)->ExecuteWithVars({}));
  EXPECT_EQ(Read((*plan)->buffers()[0]), (std::vector<float>{2, 2}));
}

TEST_F(ExecutionPlanTest, ViewsOfOneBufferAreOneStorage) {
  BufferView base = Floats({1, 2, 3, 4});
  BufferView low = *BufferView::Of(base, 0, Scalar::kFloat32, 2);
  BufferView high = *BufferView::Of(base, 8, Scalar::kFloat32, 2);
  // k0 writes high = low + 1 (distinct, non-overlapping windows of one buffer: allowed);
  // k1 reads the whole base: it must wait for k0.
  auto plan = Build({base, low, high, Floats({0, 0, 0, 0})},
                    {Bind(AddConst(2, 1), {2, 1}), Bind(AddConst(4, 0), {3, 0})});
  UOPD_ASSERT_OK(plan);
  EXPECT_EQ((*plan)->kernels()[1].dependencies, std::vector<int>{0});
  UOPD_ASSERT_OK((*plan)->ExecuteWithVars({}));
  EXPECT_EQ(Read((*plan)->buffers()[3]), (std::vector<float>{1, 2, 2, 3}));
}

TEST_F(ExecutionPlanTest, RefusesOverlappingBindingsThatAreWritten) {
  BufferView base = Floats({1, 2, 3, 4});
  BufferView first3 = *BufferView::Of(base, 0, Scalar::kFloat32, 3);
  BufferView last3 = *BufferView::Of(base, 4, Scalar::kFloat32, 3);
  auto plan = Build({first3, last3}, {Bind(AddConst(3, 1), {0, 1})});
  EXPECT_TRUE(StatusIs(plan, absl::StatusCode::kInvalidArgument,
                       {"kernel 0", "slots 0 and 1 access overlapping bytes"}));
}

TEST_F(ExecutionPlanTest, OverlappingBindingsWhoseAccessesDoNotOverlapRun) {
  // Slot 0 is bound to all of base and writes its second half; slot 1 to its first half, read.
  BufferView base = Floats({1, 2, 3, 4, 5, 6, 7, 8});
  BufferView first_half = *BufferView::Of(base, 0, Scalar::kFloat32, 4);
  auto plan = Build({base, first_half}, {Bind(CopyIntoSecondHalf(4), {0, 1})});
  UOPD_ASSERT_OK(plan);
  UOPD_ASSERT_OK((*plan)->ExecuteWithVars({}));
  EXPECT_EQ(Read((*plan)->buffers()[0]), (std::vector<float>{1, 2, 3, 4, 1, 2, 3, 4}));
  // Shifted by one element, what slot 1 reads overlaps what slot 0 writes: refused.
  BufferView shifted = *BufferView::Of(base, 8, Scalar::kFloat32, 4);
  EXPECT_TRUE(StatusIs(Build({base, shifted}, {Bind(CopyIntoSecondHalf(4), {0, 1})}),
                       absl::StatusCode::kInvalidArgument,
                       {"slots 0 and 1 access overlapping bytes"}));
}

// A vectorized range whose index wraps in its narrow type is not contiguous: each lane reaches its
// own element. Before, one vector store from lane 0's element wrote past the view bound to it
// (a daemon's heap: "double free or corruption"), and into another slot's window of the same
// buffer, which the overlap check, trusting the proven interval [0, 256), let through.
TEST_F(ExecutionPlanTest, AVectorAccessThroughAWrappingIndexStaysInItsLanesElements) {
  BufferView base = Floats(std::vector<float>(1040, -1));
  BufferView out = *BufferView::Of(base, 0, Scalar::kFloat32, 1024);
  BufferView in = *BufferView::Of(base, 256 * 4, Scalar::kFloat32, 4);
  std::memcpy(in.data(), std::vector<float>{10, 11, 12, 13}.data(), 16);
  auto plan = Build({out, in}, {Bind(WrappingVectorStore(1024), {0, 1})});
  UOPD_ASSERT_OK(plan);
  UOPD_ASSERT_OK((*plan)->ExecuteWithVars({}));
  std::vector<float> b = Read(base);
  EXPECT_EQ(b[254], 10);
  EXPECT_EQ(b[255], 11);
  EXPECT_EQ(b[0], 12);
  EXPECT_EQ(b[1], 13);
  EXPECT_EQ(b[256], 10) << "slot 1's window was written through slot 0";
  EXPECT_EQ(b[257], 11);
}

// Found by the same review: a vector index left in a narrow type compiled to LLVM IR that did
// not parse (INTERNAL), and a buffer of no elements recorded element 0 as accessed, which the
// cache's codec then refused (its entry was dropped and compiled again after every restart).
TEST_F(ExecutionPlanTest, NarrowVectorIndicesAndEmptyBuffersCompileAndRoundTrip) {
  auto narrow = Build({Floats(std::vector<float>(8, 0))}, {Bind(NarrowVectorIndex(), {0})});
  UOPD_ASSERT_OK(narrow);
  UOPD_ASSERT_OK((*narrow)->ExecuteWithVars({}));
  EXPECT_EQ(Read((*narrow)->buffers()[0]), (std::vector<float>{0, 7, 7, 7, 7, 0, 0, 0}));

  auto empty = DeviceBuffer::Create(*device_, 0);
  UOPD_ASSERT_OK(empty);
  auto plan = Build({Floats({5}), *BufferView::Whole(*empty, Scalar::kFloat32)},
                    {Bind(MaskedLoadOfAnEmptyBuffer(), {0, 1})});
  UOPD_ASSERT_OK(plan);
  const ProgramSpec& spec = *(*plan)->kernels()[0].program->spec;
  UOPD_ASSERT_OK(DecodeProgramMetadata(EncodeProgramMetadata(spec)));
}

// out[r] = in[WHERE(9 < 8, 9, Invalid)] + 1 and out2[WHERE(9 < 8, 9, Invalid)] = 5 over r < 8,
// the guard's 9 spelled as arithmetic ((-(-17 & 7)) & 15) that folds only once simplified.
v1::Graph AccessesBehindAGuardThatFoldsToFalse() {
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, 8);
  int in = g.Buffer(1, DType::FLOAT32, 8);
  int out2 = g.Buffer(2, DType::FLOAT32, 8);
  int r = g.Range(g.Index(8), 0);
  int nine = g.Node(Node::AND, DType::INDEX,
                    {g.Node(Node::NEG, DType::INDEX,
                            {g.Node(Node::AND, DType::INDEX, {g.Index(-17), g.Index(7)})}),
                     g.Index(15)});
  int valid = g.Node(Node::CMPLT, DType::BOOL, {nine, g.Index(8)});
  int idx = g.Node(Node::WHERE, DType::INDEX, {valid, nine, g.Invalid()});
  int sum = g.Node(Node::ADD, DType::FLOAT32, {g.Load(in, idx), g.Float(DType::FLOAT32, 1)});
  return g.Sink({g.End(g.Store(g.Target(out, r), sum), {r}),
                 g.Store(g.Target(out2, idx), g.Float(DType::FLOAT32, 5))});
}

// An access whose guard simplifies to false, leaving the Invalid index alone, never happens: its
// load gives 0 and its store is dropped, as in tinygrad, with any opts. Under UPCAST(0, 4) it was
// INVALID_ARGUMENT "Invalid appears outside a WHERE(valid, idx, Invalid) guard" (a review
// helper's random kernels), though the kernel as written ran.
TEST_F(ExecutionPlanTest, AccessesBehindAGuardThatFoldsToFalseNeverHappen) {
  for (const OptimizeRequest& request :
       {OptimizeRequest{OptMode::kNone, {}},
        OptimizeRequest{OptMode::kOpts, {Opt{OptOp::kUpcast, 0, 4}}}, OptimizeRequest{}}) {
    KernelBinding binding = Bind(AccessesBehindAGuardThatFoldsToFalse(), {0, 1, 2});
    binding.optimization = request;
    auto plan = Build({Floats(std::vector<float>(8, -1)), Floats(std::vector<float>(8, 3)),
                       Floats(std::vector<float>(8, -1))},
                      {binding});
    UOPD_ASSERT_OK(plan);
    UOPD_ASSERT_OK((*plan)->ExecuteWithVars({}));
    EXPECT_EQ(Read((*plan)->buffers()[0]), std::vector<float>(8, 1)) << request.Key();
    EXPECT_EQ(Read((*plan)->buffers()[2]), std::vector<float>(8, -1)) << request.Key();
  }
}

// out[CAST(index, r + 5)] = 1 over a RANGE r of `scalar` to `end`, the sum in `scalar`.
v1::Graph StoreOverANarrowRange(DType::Scalar scalar, int64_t end, int64_t out_size) {
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, out_size);
  int r = g.Node(Node::RANGE, scalar, {g.Index(end)});  // the end an index, as tinygrad's
  g.Mut(r)->mutable_arg()->mutable_range()->add_axis(0);
  g.Mut(r)->mutable_arg()->mutable_range()->set_type(v1::RangeArg::LOOP);
  int at = g.Node(Node::CAST, DType::INDEX, {g.Node(Node::ADD, scalar, {r, g.Int(scalar, 5)})});
  return g.Sink({g.End(g.Store(g.Target(out, at), g.Float(DType::FLOAT32, 1)), {r})});
}

// A RANGE of a narrower integer dtype (tinygrad's UOp.range(n, dtype=dtypes.int)) runs when its
// dtype holds every value its counter takes, and computes in that dtype; one that cannot count
// to its end is refused. Before, a uint8 RANGE to 1000 over 256 elements was proven (value ranges
// took it for [0, 255]) and its loop wrote 744 elements past them; arithmetic in its dtype was
// INTERNAL (LLVM IR mixing i8 and i32) (a review helper's finding).
TEST_F(ExecutionPlanTest, ANarrowRangeRunsWhereItsDTypeHoldsItsCounter) {
  for (DType::Scalar scalar : {DType::INT32, DType::UINT8, DType::INT16}) {
    auto plan = Build({Floats(std::vector<float>(16, 0))},
                      {Bind(StoreOverANarrowRange(scalar, 8, 16), {0})});
    UOPD_ASSERT_OK(plan);
    UOPD_ASSERT_OK((*plan)->ExecuteWithVars({}));
    std::vector<float> expected(16, 0);
    for (int i = 5; i < 13; ++i) expected[i] = 1;
    EXPECT_EQ(Read((*plan)->buffers()[0]), expected) << DType::Scalar_Name(scalar);
  }
  BufferView base = Floats(std::vector<float>(1200, -1));
  auto past = Build({*BufferView::Of(base, 0, Scalar::kFloat32, 256)},
                    {Bind(StoreOverANarrowRange(DType::UINT8, 1000, 256), {0})});
  EXPECT_TRUE(StatusIs(past, absl::StatusCode::kInvalidArgument,
                       {"RANGE", "uint8", "cannot count to 999"}));
  EXPECT_EQ(Read(base), std::vector<float>(1200, -1));
}

TEST_F(ExecutionPlanTest, RefusesBadBindings) {
  auto missing = Build({Floats({0, 0})}, {Bind(AddConst(2, 1), {0, 5})});
  EXPECT_TRUE(StatusIs(missing, absl::StatusCode::kInvalidArgument,
                       {"kernel 0", "slot 1 is bound to buffer 5, which does not exist"}));
  auto too_few = Build({Floats({0, 0})}, {Bind(AddConst(2, 1), {0})});
  // tinygrad's kernels are unnamed: errors name them by their AST hash.
  const std::string hash = (*DecodeKernelAst(AddConst(2, 1)))->hash;
  EXPECT_TRUE(StatusIs(too_few, absl::StatusCode::kInvalidArgument,
                       {"kernel 0 (k_" + hash.substr(0, 12) + ")", "has 2 buffer slots, 1 bound"}));
  v1::Graph named = AddConst(2, 1);
  named.mutable_nodes(named.nodes_size() - 1)->mutable_arg()->mutable_kernel()->set_name("E_2");
  const std::string named_hash = (*DecodeKernelAst(named))->hash;
  EXPECT_TRUE(StatusIs(Build({Floats({0, 0})}, {Bind(named, {0})}),
                       absl::StatusCode::kInvalidArgument,
                       {"kernel 0 (E_2, ast " + named_hash.substr(0, 12) + ")"}));
  auto small = Build({Floats({0}), Floats({0, 0})}, {Bind(AddConst(2, 1), {0, 1})});
  EXPECT_TRUE(StatusIs(small, absl::StatusCode::kInvalidArgument,
                       {"slot 0 needs 2 elements, buffer 0 has 1"}));
  auto ints = DeviceBuffer::Create(*device_, 8);
  auto wrong_type = Build({*BufferView::Whole(*ints, Scalar::kInt32), Floats({0, 0})},
                          {Bind(AddConst(2, 1), {0, 1})});
  EXPECT_TRUE(StatusIs(wrong_type, absl::StatusCode::kInvalidArgument,
                       {"slot 0 expects FLOAT32, buffer 0 is INT32"}));
}

bool Overlap(const KernelTiming& a, const KernelTiming& b) {
  return a.start_ns < b.end_ns && b.start_ns < a.end_ns;
}

TEST_F(ExecutionPlanTest, IndependentKernelsOfADiamondOverlapAndAChainNeverDoes) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "needs two cores to overlap";
  const int64_t iterations = 100'000'000;
  // 0 -> {1, 2} -> 3 through buffers a -> b, c -> d.
  auto diamond = Build({Floats({1}), Floats({0}), Floats({0}), Floats({0}), Floats({0})},
                       {Bind(AddConst(1, 1), {1, 0}), Bind(Slow(iterations), {2, 1}),
                        Bind(Slow(iterations), {3, 1}), Bind(AddConst(1, 1), {4, 2})});
  UOPD_ASSERT_OK(diamond);
  EXPECT_EQ((*diamond)->kernels()[1].dependencies, std::vector<int>{0});
  EXPECT_EQ((*diamond)->kernels()[2].dependencies, std::vector<int>{0});
  EXPECT_EQ((*diamond)->kernels()[3].dependencies, std::vector<int>{1});
  bool overlapped = false;
  for (int attempt = 0; attempt < 10 && !overlapped; ++attempt) {
    auto timings = (*diamond)->ExecuteWithVars({});
    UOPD_ASSERT_OK(timings);
    EXPECT_LE((*timings)[0].end_ns, (*timings)[1].start_ns);
    EXPECT_LE((*timings)[1].end_ns, (*timings)[3].start_ns);
    overlapped = Overlap((*timings)[1], (*timings)[2]);
  }
  EXPECT_TRUE(overlapped) << "the two middle kernels never ran at the same time";

  auto chain = Build({Floats({1}), Floats({0}), Floats({0}), Floats({0})},
                     {Bind(Slow(iterations / 4), {1, 0}), Bind(Slow(iterations / 4), {2, 1}),
                      Bind(Slow(iterations / 4), {3, 2})});
  UOPD_ASSERT_OK(chain);
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto timings = (*chain)->ExecuteWithVars({});
    UOPD_ASSERT_OK(timings);
    EXPECT_FALSE(Overlap((*timings)[0], (*timings)[1]));
    EXPECT_FALSE(Overlap((*timings)[1], (*timings)[2]));
  }
}

// out[i] = i * 2 for i < n, n in [1, 16].
// out[i] = 2 i for i < n, n in [1, 16] and a multiple of `multiple_of` (0: any).
v1::Graph Symbolic(int64_t multiple_of = 0) {
  GraphBuilder g;
  int out = g.Buffer(0, DType::INT32, 16);
  int n = g.Var("n", 1, 16);
  if (multiple_of > 0) g.Mut(n)->mutable_arg()->mutable_var()->set_multiple_of(multiple_of);
  int r = g.Range(n, 0);
  int value = g.Node(Node::CAST, DType::INT32, {g.Node(Node::MUL, DType::INDEX, {r, g.Index(2)})});
  return g.Sink({g.End(g.Store(g.Target(out, r), value), {r})});
}

TEST_F(ExecutionPlanTest, RebindsVariablesWithoutRecompiling) {
  auto storage = DeviceBuffer::Create(*device_, 64);
  BufferView out = *BufferView::Whole(*storage, Scalar::kInt32);
  auto plan = Build({out}, {Bind(Symbolic(), {0})});
  UOPD_ASSERT_OK(plan);
  const int64_t compiled = Compilations();
  for (int64_t n : {3, 7, 16, 1}) {
    std::memset(out.data(), 0xff, 64);
    UOPD_ASSERT_OK((*plan)->ExecuteWithVars({{"n", n}}));
    const int32_t* data = static_cast<const int32_t*>(out.data());
    for (int64_t i = 0; i < 16; ++i) {
      ASSERT_EQ(data[i], i < n ? 2 * i : -1) << "n=" << n << " element " << i;
    }
  }
  EXPECT_EQ(Compilations(), compiled) << "runs must not compile";
}

// out[v] = 2 * v for a client variable v of [0, 15] named `name`.
v1::Graph StoreTwiceVariable(const std::string& name) {
  GraphBuilder g;
  int out = g.Buffer(0, DType::INT32, 16);
  int v = g.Var(name, 0, 15);
  int value = g.Node(Node::CAST, DType::INT32, {g.Node(Node::MUL, DType::INDEX, {v, g.Index(2)})});
  return g.Sink({g.Store(g.Target(out, v), value)});
}

// A client's variables named as the CPU runtime's own (core_id, core_count) get their values.
// Before, they were skipped by name and ran as 0 (found by a review helper): with a variable of
// [-40, -40] indexing element v + 40, the proof and the overlap check said element 0 while the
// kernel wrote element 40, past a one-element view.
TEST_F(ExecutionPlanTest, AClientVariableNamedLikeARuntimeVariableGetsItsValue) {
  for (const char* name : {"core_id", "core_count"}) {
    auto storage = DeviceBuffer::Create(*device_, 64);
    BufferView out = *BufferView::Whole(*storage, Scalar::kInt32);
    std::memset(out.data(), 0xff, 64);
    auto plan = Build({out}, {Bind(StoreTwiceVariable(name), {0})});
    UOPD_ASSERT_OK(plan);
    UOPD_ASSERT_OK((*plan)->ExecuteWithVars({{name, 5}}));
    const int32_t* data = static_cast<const int32_t*>(out.data());
    EXPECT_EQ(data[5], 10) << name;
    EXPECT_EQ(data[0], -1) << name << ": element 0 is not the variable's";
    auto fixed = Build({out}, {Bind(StoreTwiceVariable(name), {0}, {{name, 7}})});
    UOPD_ASSERT_OK(fixed);
    UOPD_ASSERT_OK((*fixed)->ExecuteWithVars({}));
    EXPECT_EQ(data[7], 14) << name << " fixed";
  }
}

TEST_F(ExecutionPlanTest, RefusesOutOfBoundsValuesBeforeRunningAnything) {
  auto storage = DeviceBuffer::Create(*device_, 64);
  BufferView out = *BufferView::Whole(*storage, Scalar::kInt32);
  // Kernel 0 has no variables and would run first; the bad value belongs to kernel 1.
  auto fill = DeviceBuffer::Create(*device_, 8);
  auto plan = Build({out, *BufferView::Whole(*fill, Scalar::kFloat32)},
                    {Bind(Fill(2, 5), {1}), Bind(Symbolic(), {0})});
  UOPD_ASSERT_OK(plan);
  EXPECT_TRUE(StatusIs((*plan)->ExecuteWithVars({{"n", 17}}), absl::StatusCode::kInvalidArgument,
                       {"kernel 1", "'n' = 17 is outside [1, 16]"}));
  EXPECT_TRUE(StatusIs((*plan)->ExecuteWithVars({}), absl::StatusCode::kInvalidArgument,
                       {"no value for variable 'n'"}));
  EXPECT_TRUE(StatusIs((*plan)->ExecuteWithVars({{"n", 2}, {"typo", 1}}),
                       absl::StatusCode::kInvalidArgument, {"'typo' is not a run-time variable"}));
  EXPECT_EQ(static_cast<const float*>((*plan)->buffers()[1].data())[0], 0.0f)
      << "nothing ran for the refused values";
}

TEST_F(ExecutionPlanTest, FixedVariablesWinOverSuppliedOnes) {
  auto storage = DeviceBuffer::Create(*device_, 64);
  BufferView out = *BufferView::Whole(*storage, Scalar::kInt32);
  auto plan = Build({out}, {Bind(Symbolic(), {0}, {{"n", 4}})});
  UOPD_ASSERT_OK(plan);
  EXPECT_TRUE((*plan)->kernels()[0].runtime_vars.empty());
  EXPECT_TRUE(StatusIs((*plan)->ExecuteWithVars({{"n", 9}}), absl::StatusCode::kInvalidArgument,
                       {"'n' is not a run-time variable"}))
      << "a fixed variable cannot be overridden";
  UOPD_ASSERT_OK((*plan)->ExecuteWithVars({}));
  const int32_t* data = static_cast<const int32_t*>(out.data());
  EXPECT_EQ(data[3], 6);
  EXPECT_EQ(data[4], 0) << "n stayed 4";
  auto bad = Build({out}, {Bind(Symbolic(), {0}, {{"n", 99}})});
  EXPECT_TRUE(StatusIs(bad, absl::StatusCode::kInvalidArgument, {"fixed variable 'n' = 99"}));
}

TEST_F(ExecutionPlanTest, AValueThatIsNotAMultipleOfItsVariablesMultipleIsRefused) {
  auto storage = DeviceBuffer::Create(*device_, 64);
  BufferView out = *BufferView::Whole(*storage, Scalar::kInt32);
  auto plan = Build({out}, {Bind(Symbolic(4), {0})});
  UOPD_ASSERT_OK(plan);
  ASSERT_EQ((*plan)->RuntimeVars().size(), 1u);
  EXPECT_EQ((*plan)->RuntimeVars()[0].multiple, 4);
  EXPECT_TRUE(StatusIs((*plan)->ExecuteWithVars({{"n", 6}}), absl::StatusCode::kInvalidArgument,
                       {"'n' = 6 is not a multiple of 4"}));
  UOPD_ASSERT_OK((*plan)->ExecuteWithVars({{"n", 8}}));
  EXPECT_EQ(static_cast<const int32_t*>(out.data())[7], 14);
  EXPECT_TRUE(StatusIs(Build({out}, {Bind(Symbolic(4), {0}, {{"n", 6}})}),
                       absl::StatusCode::kInvalidArgument,
                       {"fixed variable 'n' = 6 is not a multiple of 4"}));
  // Two kernels' multiples of one variable: its values are multiples of both.
  auto both = Build({out}, {Bind(Symbolic(4), {0}), Bind(Symbolic(6), {0})});
  UOPD_ASSERT_OK(both);
  EXPECT_EQ((*both)->RuntimeVars()[0].multiple, 12);
  // Coprime multiples whose least common multiple passes int64 (std::lcm overflowed: undefined
  // behaviour, a review helper's note): no value but 0 is a multiple of both.
  auto huge = Build({out}, {Bind(Symbolic((int64_t{1} << 32) + 15), {0}),
                            Bind(Symbolic((int64_t{1} << 32) + 17), {0})});
  UOPD_ASSERT_OK(huge);
  EXPECT_EQ((*huge)->RuntimeVars()[0].multiple, std::numeric_limits<int64_t>::max());
}

// out[i] = x[i] != 0 ? 0 : 0 (tinygrad's gradient of x**0): the optimizer's passes fold the
// WHERE to 0 and x is read no more, but the caller binds both buffers as its AST says (the
// optimized kernel took one slot and refused them: "has 1 buffer slots, 2 bound").
TEST_F(ExecutionPlanTest, ABufferTheOptimizerFoldsAwayIsStillBound) {
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, 2925);
  int x = g.Buffer(1, DType::FLOAT32, 2925);
  int i = g.Range(g.Index(45), 0);
  int j = g.Range(g.Index(65), 1);
  int index = g.RowMajor(i, 65, j);
  int zero = g.Float(DType::FLOAT32, 0);
  int nonzero = g.Node(Node::CMPNE, DType::BOOL, {g.Load(x, index), zero});
  int value = g.Node(Node::WHERE, DType::FLOAT32, {nonzero, zero, zero});
  v1::Graph kernel = g.Sink({g.End(g.Store(g.Target(out, index), value), {i, j})});
  auto plan = Build({Floats(std::vector<float>(2925, 7)), Floats(std::vector<float>(2925, 1))},
                    {Bind(kernel, {0, 1})});
  UOPD_ASSERT_OK(plan);
  UOPD_ASSERT_OK((*plan)->ExecuteWithVars({}));
  EXPECT_EQ(Read((*plan)->buffers()[0]), std::vector<float>(2925, 0));
  // The caller still binds what its AST says, no more and no fewer.
  EXPECT_TRUE(StatusIs(Build({Floats(std::vector<float>(2925, 7))}, {Bind(kernel, {0})}),
                       absl::StatusCode::kInvalidArgument, {"2 buffer slots, 1 bound"}));
}

TEST_F(ExecutionPlanTest, StopsStartingKernelsOnceCancelled) {
  for (bool sequential : {true, false}) {
    auto plan =
        Build({Floats({0})}, {Bind(Fill(1, 1), {0}), Bind(Fill(1, 2), {0}), Bind(Fill(1, 3), {0})});
    UOPD_ASSERT_OK(plan);
    int asked = 0;
    RunOptions options;
    options.sequential = sequential;
    options.cancelled = [&asked] { return ++asked > 1; };  // cancelled after the first kernel
    EXPECT_TRUE(StatusIs((*plan)->ExecuteWithVars({}, options), absl::StatusCode::kCancelled,
                         {"before kernel 1"}));
    EXPECT_EQ(Read((*plan)->buffers()[0]), (std::vector<float>{1})) << "only kernel 0 ran";
  }
}

// A run waiting for another run of its plan ends when its call does (its stop flag), not when
// the run before it ends: it held its thread past its deadline (a review helper's finding).
TEST_F(ExecutionPlanTest, ARunWaitingForAnotherEndsWhenItsCallDoes) {
  auto plan = Build({Floats({0, 0}), Floats({1, 2})}, {Bind(AddConst(2, 1), {0, 1})});
  UOPD_ASSERT_OK(plan);
  absl::Notification first_running, release_first;
  std::thread first([&] {
    RunOptions options;
    options.after_run = [&] {
      first_running.Notify();
      release_first.WaitForNotification();
      return absl::OkStatus();
    };
    UOPD_EXPECT_OK((*plan)->ExecuteWithVars({}, std::move(options)));
  });
  first_running.WaitForNotification();
  StopFlag stop;
  absl::Notification second_ended;
  absl::Status second_status;
  std::thread second([&] {
    RunOptions options;
    options.stop = &stop;
    second_status = (*plan)->ExecuteWithVars({}, std::move(options)).status();
    second_ended.Notify();
  });
  stop.Stop();
  const bool ended = second_ended.WaitForNotificationWithTimeout(absl::Seconds(10));
  release_first.Notify();
  first.join();
  second.join();
  EXPECT_TRUE(ended) << "the second run waited for the first to end";
  EXPECT_TRUE(StatusIs(second_status, absl::StatusCode::kCancelled, {"waiting"}));
  UOPD_EXPECT_OK((*plan)->ExecuteWithVars({})) << "the plan runs again once the first run ended";
}

// A stop flag set while a kernel runs stops that kernel (on the CPU) and the run, in both modes.
TEST_F(ExecutionPlanTest, StopsARunningKernelWhenAsked) {
  for (bool sequential : {true, false}) {
    // Kernel 0 would run for hours; kernel 1 never starts. Two reduce loops: LLVM sums a
    // chunk of one loop's in[j % 4] in closed form, which took 2^44 iterations to ~100 ms.
    auto plan = Build({Ints({0}), Ints({1, 2, 3, 4})},
                      {Bind(testing::ModSumKernel(1, {int64_t{1} << 40, 1 << 20}), {0, 1}),
                       Bind(testing::ModSumKernel(1, {4}), {0, 1})});
    UOPD_ASSERT_OK(plan);
    StopFlag stop;
    RunOptions options;
    options.sequential = sequential;
    options.stop = &stop;
    absl::StatusOr<std::vector<KernelTiming>> result;
    std::thread run([&] { result = (*plan)->ExecuteWithVars({}, options); });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    stop.Stop();
    run.join();
    EXPECT_TRUE(StatusIs(result, absl::StatusCode::kCancelled, {"kernel 0", "stopped"}))
        << (sequential ? "sequential: " : "dataflow: ") << result.status();
  }
}

TEST_F(ExecutionPlanTest, PreparesAThousandKernelsQuickly) {
  std::vector<BufferView> buffers = {Floats({0, 0, 0, 0}), Floats({0, 0, 0, 0})};
  auto ast = DecodeKernelAst(AddConst(4, 1));
  UOPD_ASSERT_OK(ast);
  std::vector<KernelBinding> kernels;
  for (int i = 0; i < 1000; ++i) {
    kernels.push_back(KernelBinding{*ast, device_.get(), {(i + 1) % 2, i % 2}, {}});
  }
  auto start = std::chrono::steady_clock::now();
  auto plan = Build(buffers, std::move(kernels));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  UOPD_ASSERT_OK(plan);
  EXPECT_LT(seconds, 0.5) << "preparing 1000 kernels took " << seconds << " s";
  EXPECT_EQ(Compilations(), 1) << "one AST, one compilation";
  UOPD_ASSERT_OK((*plan)->ExecuteWithVars({}));
  EXPECT_EQ(Read((*plan)->buffers()[0])[0], 1000.0f);
}

// Copies between the host and a view go through the view (its device's allocator), checked
// against the view's own bytes: the server used to reach through the storage's device for each.
TEST_F(ExecutionPlanTest, AViewCopiesInAndOutWithinItsOwnBytesOnly) {
  BufferView base = Floats({1, 2, 3, 4});
  BufferView high = *BufferView::Of(base, 8, Scalar::kFloat32, 2);
  const float in[2] = {7, 8};
  UOPD_ASSERT_OK(high.CopyIn(0, in, sizeof(in)));
  EXPECT_EQ(Read(base), (std::vector<float>{1, 2, 7, 8}));
  float out = 0;
  UOPD_ASSERT_OK(high.CopyOut(4, &out, 4));
  EXPECT_EQ(out, 8.0f);
  EXPECT_TRUE(StatusIs(high.CopyIn(4, in, sizeof(in)), absl::StatusCode::kOutOfRange));
  EXPECT_TRUE(StatusIs(high.CopyOut(int64_t{1} << 62, &out, int64_t{1} << 62),
                       absl::StatusCode::kOutOfRange));
  EXPECT_EQ(Read(base), (std::vector<float>{1, 2, 7, 8}));  // a refused copy wrote nothing
}

// Source a client rendered itself goes through the cache layer as kernels do (the server used to
// build its key and entry): one compile per digest on a device kind, a hit after it, and what
// the compiler rejects is the client's source (INVALID_ARGUMENT), not a server error.
TEST_F(ExecutionPlanTest, ClientSourceIsCompiledOncePerDigestAndItsErrorsAreTheClients) {
  std::vector<std::unique_ptr<CacheTier>> tiers;
  tiers.push_back(std::make_unique<MemoryTier>(64 << 20));
  KernelCache cache(std::move(tiers));
  CachingProgramSource source(cache);
  ProgramSpec spec;
  spec.name = "k";
  spec.src = "define i32 @k(ptr %b, ptr %v) {\n  ret i32 0\n}\n";
  auto first = source.CompileSource(*device_, spec, "digest-1");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->lookup.answered_by, "compiled");
  EXPECT_EQ(first->lookup.entry->spec.src, spec.src);
  auto hit = source.CompileSource(*device_, spec, "digest-1");
  ASSERT_TRUE(hit.ok()) << hit.status();
  EXPECT_EQ(hit->lookup.answered_by, "memory");
  EXPECT_EQ(hit->key_hex, first->key_hex);
  auto other = source.CompileSource(*device_, spec, "digest-2");
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_NE(other->key_hex, first->key_hex);
  ProgramSpec broken = spec;
  broken.src = "define i32 @k(ptr %b, ptr %v) {\n  ret i64 0\n}\n";
  EXPECT_TRUE(StatusIs(source.CompileSource(*device_, broken, "digest-3"),
                       absl::StatusCode::kInvalidArgument, {"source: "}));
}

TEST_F(ExecutionPlanTest, CompileRemembersTheOptsItChoseAndRecompilesAfterAnEviction) {
  // The heuristics' choice is remembered per AST (a memory hit skips them); an entry evicted
  // from the cache is compiled again with the same opts under the same key.
  std::vector<std::unique_ptr<CacheTier>> tiers;
  tiers.push_back(std::make_unique<MemoryTier>(64 << 20));
  KernelCache cache(std::move(tiers));
  CachingProgramSource source(cache);
  auto ast = DecodeKernelAst(testing::ColumnSumKernel(256, 256));
  ASSERT_TRUE(ast.ok()) << ast.status();
  auto first = source.Compile(*device_, *ast);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->lookup.answered_by, "compiled");
  EXPECT_FALSE(first->applied.empty()) << "a column sum the heuristics leave alone tests less";
  auto hit = source.Compile(*device_, *ast);
  ASSERT_TRUE(hit.ok()) << hit.status();
  EXPECT_EQ(hit->key_hex, first->key_hex);
  EXPECT_EQ(OptsToString(hit->applied), OptsToString(first->applied));
  EXPECT_EQ(hit->lookup.answered_by, "memory");

  cache.Invalidate(first->key_hex);
  auto again = source.Compile(*device_, *ast);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->lookup.answered_by, "compiled");
  EXPECT_EQ(again->key_hex, first->key_hex);
  EXPECT_EQ(again->lookup.entry->kernel.bytes, first->lookup.entry->kernel.bytes);

  // Another request for the same AST is its own choice.
  auto none = source.Compile(*device_, *ast, OptimizeRequest{OptMode::kNone, {}});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->applied.empty());
  EXPECT_NE(none->key_hex, first->key_hex);
}

// An entry compiled from other source than this build renders for the kernel (an older codegen
// whose change kept the key and the metadata: the review helper's case, a fix that changed the
// code a wrapping index compiles to) is dropped and compiled anew before anything runs, never
// loaded.
TEST_F(ExecutionPlanTest, AnEntryCompiledFromOtherSourceIsCompiledAnewBeforeItRuns) {
  std::vector<std::unique_ptr<CacheTier>> tiers;
  tiers.push_back(std::make_unique<MemoryTier>(64 << 20));
  KernelCache cache(std::move(tiers));
  auto ast = DecodeKernelAst(AddConst(64, 1.0));
  ASSERT_TRUE(ast.ok()) << ast.status();
  auto compilations = [&] { return cache.compile_stats().at("CPU").compilations; };
  std::string key_hex, fresh_source;
  {
    CachingProgramSource source(cache);
    auto first = source.Get(*device_, *ast, {}, nullptr);
    ASSERT_TRUE(first.ok()) << first.status();
    key_hex = (*first)->key_hex;
    fresh_source = (*first)->spec->src;
  }
  ASSERT_EQ(compilations(), 1);
  std::optional<std::string> stored = cache.GetSerialized(key_hex);
  ASSERT_TRUE(stored.has_value());
  auto entry = ParseCacheEntry(*stored);
  ASSERT_TRUE(entry.ok()) << entry.status();
  entry->spec.src += "; rendered by an older codegen\n";
  UOPD_ASSERT_OK(cache.PutSerialized(key_hex, SerializeCacheEntry(*entry)));

  CachingProgramSource restarted(cache);  // a daemon started again: nothing loaded yet
  auto again = restarted.Get(*device_, *ast, {}, nullptr);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(compilations(), 2) << "the stale entry was loaded";
  auto replaced = ParseCacheEntry(*cache.GetSerialized(key_hex));
  ASSERT_TRUE(replaced.ok()) << replaced.status();
  EXPECT_EQ(replaced->spec.src, fresh_source);
  auto hit = CachingProgramSource(cache).Get(*device_, *ast, {}, nullptr);
  ASSERT_TRUE(hit.ok()) << hit.status();
  EXPECT_EQ(compilations(), 2) << "an entry of this build's source is used";
}

}  // namespace
}  // namespace uopd
