// The codegen pipeline decides everything a renderer spells from the target's description:
// launch dims, core variables, vector lanes, plans. Checked here with targets described in the
// test and a renderer that records what it is asked to spell.
#include "core/codegen/pipeline.h"

#include "core/ir/value_range.h"
#include "core/wire/decode.h"
#include "gtest/gtest.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

using testing::GraphBuilder;
using v1::DType;
using v1::Node;

// out[i] = x[i] + 1 over `n` elements, its range upcast by 4 when `upcast`.
std::shared_ptr<const KernelAst> AddOne(int64_t n, bool upcast = false) {
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, n);
  int x = g.Buffer(1, DType::FLOAT32, n);
  int i = g.Range(g.Index(upcast ? n / 4 : n), 0);
  int index = i;
  if (upcast) {
    int lane = g.Range(g.Index(4), 1, v1::RangeArg::UPCAST);
    index =
        g.Node(Node::ADD, DType::INDEX, {g.Node(Node::MUL, DType::INDEX, {i, g.Index(4)}), lane});
    auto ast = DecodeKernelAst(g.Sink({g.End(
        g.Store(g.Target(out, index),
                g.Node(Node::ADD, DType::FLOAT32, {g.Load(x, index), g.Float(DType::FLOAT32, 1)})),
        {i, lane})}));
    EXPECT_TRUE(ast.ok()) << ast.status();
    return *ast;
  }
  auto ast = DecodeKernelAst(
      g.Sink({g.End(g.Store(g.Target(out, i), g.Node(Node::ADD, DType::FLOAT32,
                                                     {g.Load(x, i), g.Float(DType::FLOAT32, 1)})),
                    {i})}));
  EXPECT_TRUE(ast.ok()) << ast.status();
  return *ast;
}

CodegenTarget Gpu(int block, int warp = 0) {
  CodegenTarget target;
  target.device = "GPU";
  target.parallelism = CodegenTarget::Parallelism::kGrid;
  target.block_threads = block;
  target.warp_lanes = warp;
  target.shared_bytes = kCudaSharedBytes;  // for the tests that set group_threads
  return target;
}

TEST(CodegenPipeline, AGridTargetGetsBlocksOfItsThreadsAndNoCoreVariables) {
  auto kernel = LowerForTarget(AddOne(1000), "k", Gpu(128), {});
  UOPD_ASSERT_OK(kernel);
  EXPECT_EQ(kernel->global_size[0].constant, 8);  // ceil(1000 / 128)
  ASSERT_TRUE(kernel->local_size.has_value());
  EXPECT_EQ((*kernel->local_size)[0].constant, 128);
  EXPECT_TRUE(kernel->program.var_names.empty());
}

TEST(CodegenPipeline, LocalRangesAreThreadsOfTheGridNotLoops) {
  // out[i * 16 + l] = x[i * 16 + l] + 1 with l a LOCAL range of 16: one thread per (i, l).
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, 256);
  int x = g.Buffer(1, DType::FLOAT32, 256);
  int i = g.Range(g.Index(16), 0);
  int l = g.Range(g.Index(16), 1, v1::RangeArg::LOCAL);
  int index =
      g.Node(Node::ADD, DType::INDEX, {g.Node(Node::MUL, DType::INDEX, {i, g.Index(16)}), l});
  auto ast = DecodeKernelAst(g.Sink(
      {g.End(g.Store(g.Target(out, index), g.Node(Node::ADD, DType::FLOAT32,
                                                  {g.Load(x, index), g.Float(DType::FLOAT32, 1)})),
             {i, l})}));
  UOPD_ASSERT_OK(ast);
  auto kernel = LowerForTarget(*ast, "k", Gpu(128), {});
  UOPD_ASSERT_OK(kernel);
  EXPECT_EQ(kernel->program.grid_ends.size(), 2u);
  for (const Instr& in : kernel->program.instrs) {
    EXPECT_NE(in.kind, InstrKind::kLoopBegin) << kernel->program.Dump();
  }
  EXPECT_EQ(kernel->global_size[0].constant, 2);  // 256 threads in blocks of 128
}

// out[i] = sum over g < 4, r < 16 of x[i * 64 + g * 16 + r], g a GROUP_REDUCE range.
std::shared_ptr<const KernelAst> GroupSum(int64_t outputs) {
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, outputs);
  int x = g.Buffer(1, DType::FLOAT32, outputs * 64);
  int i = g.Range(g.Index(outputs), 0, v1::RangeArg::GLOBAL);
  int grp = g.Range(g.Index(4), 1, v1::RangeArg::GROUP_REDUCE);
  int r = g.Range(g.Index(16), 2, v1::RangeArg::REDUCE);
  auto mul = [&](int a, int64_t c) { return g.Node(Node::MUL, DType::INDEX, {a, g.Index(c)}); };
  auto add = [&](int a, int b) { return g.Node(Node::ADD, DType::INDEX, {a, b}); };
  int index = add(add(mul(i, 64), mul(grp, 16)), r);
  int sum = g.Reduce(Node::ADD, DType::FLOAT32, g.Load(x, index), {grp, r});
  auto ast = DecodeKernelAst(g.Sink({g.End(g.Store(g.Target(out, i), sum), {i})}));
  EXPECT_TRUE(ast.ok()) << ast.status();
  return *ast;
}

// out[l1 * 8 + l2] = x[l1 * 8 + l2] with LOCAL ranges of axes 1 (size 4) and 2 (size 8): as
// tinygrad's gpudims numbers a block's threads, the lowest axis varies fastest (its lidx0 is
// threadIdx.x), so the flattened index ends with axis 1's range, then axis 2's.
TEST(CodegenPipeline, ABlocksLowestLocalAxisVariesFastestAsInTinygrad) {
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, 32);
  int x = g.Buffer(1, DType::FLOAT32, 32);
  int l1 = g.Range(g.Index(4), 1, v1::RangeArg::LOCAL);
  int l2 = g.Range(g.Index(8), 2, v1::RangeArg::LOCAL);
  int index =
      g.Node(Node::ADD, DType::INDEX, {g.Node(Node::MUL, DType::INDEX, {l1, g.Index(8)}), l2});
  auto ast =
      DecodeKernelAst(g.Sink({g.End(g.Store(g.Target(out, index), g.Load(x, index)), {l1, l2})}));
  UOPD_ASSERT_OK(ast);
  auto kernel = LowerForTarget(*ast, "k", Gpu(128), {});
  UOPD_ASSERT_OK(kernel);
  const std::vector<const UOp*>& ends = kernel->program.grid_ends;
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_EQ(ConstIntValue(*ends[0]), 8);  // axis 2: slower
  EXPECT_EQ(ConstIntValue(*ends[1]), 4);  // axis 1: fastest
}

TEST(CodegenPipeline, AGroupReductionMeetsInSharedMemoryAfterABarrier) {
  CodegenTarget gpu = Gpu(128);
  gpu.group_threads = 128;
  auto kernel = LowerForTarget(GroupSum(10), "k", gpu, {});
  UOPD_ASSERT_OK(kernel);
  const LinearProgram& p = kernel->program;
  EXPECT_EQ(p.group_threads, 128);
  auto count = [&](InstrKind kind) {
    return std::count_if(p.instrs.begin(), p.instrs.end(),
                         [&](const Instr& in) { return in.kind == kind; });
  };
  EXPECT_EQ(count(InstrKind::kThreadIndex), 1) << p.Dump();
  EXPECT_EQ(count(InstrKind::kGlobalIndex), 0) << p.Dump();  // no thread leaves early
  EXPECT_EQ(count(InstrKind::kBarrier), 1) << p.Dump();
  EXPECT_EQ(count(InstrKind::kArrayLoad), 4) << p.Dump();  // the group's 4 partial sums
  EXPECT_EQ(kernel->global_size[0].constant, 1);           // 10 x 4 threads: one block
  EXPECT_FALSE(kernel->warps.enabled);

  gpu.group_threads = 0;  // no shared memory: the group is a loop in each thread
  auto serial = LowerForTarget(GroupSum(10), "k", gpu, {});
  UOPD_ASSERT_OK(serial);
  EXPECT_EQ(serial->program.group_threads, 0);
}

// GroupSum with a LOCAL range of axis 1 (size 2) made before the GROUP_REDUCE range (axis 3):
// tinygrad numbers the older axis fastest, so the group's 4 members are 2 threads apart and
// its range comes before the LOCAL one in the flattened index.
TEST(CodegenPipeline, AGroupNewerThanALocalIsStridedByIt) {
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, 20);
  int x = g.Buffer(1, DType::FLOAT32, 20 * 64);
  int i = g.Range(g.Index(10), 0, v1::RangeArg::GLOBAL);
  int l = g.Range(g.Index(2), 1, v1::RangeArg::LOCAL);
  int grp = g.Range(g.Index(4), 3, v1::RangeArg::GROUP_REDUCE);
  int r = g.Range(g.Index(16), 2, v1::RangeArg::REDUCE);
  auto mul = [&](int a, int64_t c) { return g.Node(Node::MUL, DType::INDEX, {a, g.Index(c)}); };
  auto add = [&](int a, int b) { return g.Node(Node::ADD, DType::INDEX, {a, b}); };
  int row = add(mul(i, 2), l);
  int sum = g.Reduce(Node::ADD, DType::FLOAT32, g.Load(x, add(add(mul(row, 64), mul(grp, 16)), r)),
                     {grp, r});
  auto ast = DecodeKernelAst(g.Sink({g.End(g.Store(g.Target(out, row), sum), {i, l})}));
  UOPD_ASSERT_OK(ast);
  CodegenTarget gpu = Gpu(128);
  gpu.group_threads = 128;
  auto kernel = LowerForTarget(*ast, "k", gpu, {});
  UOPD_ASSERT_OK(kernel);
  const LinearProgram& p = kernel->program;
  EXPECT_EQ(p.group_threads, 128);
  ASSERT_EQ(p.grid_ends.size(), 3u);
  EXPECT_EQ(ConstIntValue(*p.grid_ends[1]), 4);  // the group
  EXPECT_EQ(ConstIntValue(*p.grid_ends[2]), 2);  // the LOCAL: fastest
}

TEST(CodegenPipeline, AGroupWhosePartialsOverflowSharedMemoryStaysALoop) {
  CodegenTarget gpu = Gpu(16384);
  gpu.group_threads = 16384;  // 16,384 float partials: 64 KiB, past a block's static 48 KiB
  auto kernel = LowerForTarget(GroupSum(10), "k", gpu, {});
  UOPD_ASSERT_OK(kernel);
  EXPECT_EQ(kernel->program.group_threads, 0);
  gpu.block_threads = gpu.group_threads = 8192;  // 32 KiB
  kernel = LowerForTarget(GroupSum(10), "k", gpu, {});
  UOPD_ASSERT_OK(kernel);
  EXPECT_EQ(kernel->program.group_threads, 8192);
  gpu.shared_bytes = 16 << 10;  // the target's own budget, not a fixed 48 KiB
  kernel = LowerForTarget(GroupSum(10), "k", gpu, {});
  UOPD_ASSERT_OK(kernel);
  EXPECT_EQ(kernel->program.group_threads, 0);
}

TEST(CodegenPipeline, WithoutBlocksAGroupRunsAsWorkGroupLoops) {
  CodegenTarget gpu = Gpu(0);
  gpu.group_threads = 8;  // 10 x 4 threads: five blocks of two groups
  auto kernel = LowerForTarget(GroupSum(10), "k", gpu, {});
  UOPD_ASSERT_OK(kernel);
  const LinearProgram& p = kernel->program;
  int loops = 0, grid = 0;
  for (const Instr& in : p.instrs) {
    EXPECT_NE(in.kind, InstrKind::kBarrier) << p.Dump();
    EXPECT_NE(in.kind, InstrKind::kThreadIndex) << p.Dump();
    loops += in.kind == InstrKind::kLoopBegin;
    grid += in.kind == InstrKind::kGlobalIndex;
  }
  EXPECT_EQ(grid, 1) << p.Dump();   // over the blocks
  EXPECT_EQ(loops, 3) << p.Dump();  // the threads before and after the barrier, the reduction
}

TEST(CodegenPipeline, AGridWithoutBlocksRunsAsALoopThatTakesTheCoreVariables) {
  auto kernel = LowerForTarget(AddOne(1000), "k", Gpu(0), {});
  UOPD_ASSERT_OK(kernel);
  EXPECT_FALSE(kernel->local_size.has_value());
  EXPECT_EQ(kernel->program.var_names, (std::vector<std::string>{kCoreIdVar, kCoreCountVar}));
}

TEST(CodegenPipeline, ALoopTargetSplitsOnlyKernelsWithEnoughWork) {
  CodegenTarget cpu = CodegenTarget::CpuLoops();
  cpu.min_parallel_work = 512;
  auto big = LowerForTarget(AddOne(1024), "k", cpu, {});
  UOPD_ASSERT_OK(big);
  EXPECT_TRUE(big->program.parallel);
  EXPECT_EQ(big->global_size[0].constant, 1024);
  auto small = LowerForTarget(AddOne(256), "k", cpu, {});
  UOPD_ASSERT_OK(small);
  EXPECT_FALSE(small->program.parallel);
}

TEST(CodegenPipeline, VectorsTheTargetDoesNotSpellAreWrittenLaneByLane) {
  CodegenTarget cpu = CodegenTarget::CpuLoops();
  auto has_vectors = [](const LinearProgram& p) {
    for (const Instr& in : p.instrs) {
      if (in.dtype.count > 1) return true;
    }
    return false;
  };
  auto vectors = LowerForTarget(AddOne(64, /*upcast=*/true), "k", cpu, {});
  UOPD_ASSERT_OK(vectors);
  EXPECT_TRUE(has_vectors(vectors->program)) << vectors->program.Dump();

  cpu.spells_vector = [](const LinearProgram&, const Instr& in) {
    return in.kind != InstrKind::kAlu;  // no vector arithmetic
  };
  auto lanes = LowerForTarget(AddOne(64, /*upcast=*/true), "k", cpu, {});
  UOPD_ASSERT_OK(lanes);
  for (const Instr& in : lanes->program.instrs) {
    if (in.kind == InstrKind::kAlu) {
      EXPECT_EQ(in.dtype.count, 1) << lanes->program.Dump();
    }
  }

  cpu.max_vector_lanes = 0;  // scalars only: the upcast range is written out
  auto scalars = LowerForTarget(AddOne(64, /*upcast=*/true), "k", cpu, {});
  UOPD_ASSERT_OK(scalars);
  EXPECT_FALSE(has_vectors(scalars->program)) << scalars->program.Dump();
}

TEST(CodegenPipeline, CudasGridKeepsVectorLoadsAndStoresAndWritesOutTheirArithmetic) {
  // tinygrad's float4: 16 bytes a thread in one access; the ALU ops lane by lane.
  auto kernel = LowerForTarget(AddOne(64, /*upcast=*/true), "k", CodegenTarget::CudaGrid(), {});
  UOPD_ASSERT_OK(kernel);
  int vector_loads = 0, vector_stores = 0;
  for (const Instr& in : kernel->program.instrs) {
    if (in.kind == InstrKind::kLoad) vector_loads += in.dtype.count == 4;
    if (in.kind == InstrKind::kStore)
      vector_stores += kernel->program.instrs[in.src[1]].dtype.count == 4;
    if (in.kind == InstrKind::kAlu) EXPECT_EQ(in.dtype.count, 1) << kernel->program.Dump();
  }
  EXPECT_EQ(vector_loads, 1) << kernel->program.Dump();
  EXPECT_EQ(vector_stores, 1) << kernel->program.Dump();
}

TEST(CodegenPipeline, AGroupReductionWithAContiguousUnrollStillMeetsInSharedMemory) {
  // A vector range would take the group's place in the block: the kernel stays scalar.
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, 10);
  int x = g.Buffer(1, DType::FLOAT32, 10 * 64);
  int i = g.Range(g.Index(10), 0, v1::RangeArg::GLOBAL);
  int grp = g.Range(g.Index(4), 1, v1::RangeArg::GROUP_REDUCE);
  int r = g.Range(g.Index(4), 2, v1::RangeArg::REDUCE);
  int u = g.Range(g.Index(4), 3, v1::RangeArg::UNROLL);
  auto mul = [&](int a, int64_t c) { return g.Node(Node::MUL, DType::INDEX, {a, g.Index(c)}); };
  auto add = [&](int a, int b) { return g.Node(Node::ADD, DType::INDEX, {a, b}); };
  int index = add(add(add(mul(i, 64), mul(grp, 16)), mul(r, 4)), u);
  int sum = g.Reduce(Node::ADD, DType::FLOAT32, g.Load(x, index), {grp, r, u});
  auto ast = DecodeKernelAst(g.Sink({g.End(g.Store(g.Target(out, i), sum), {i})}));
  UOPD_ASSERT_OK(ast);
  auto kernel = LowerForTarget(*ast, "k", CodegenTarget::CudaGrid(), {});
  UOPD_ASSERT_OK(kernel);
  EXPECT_EQ(kernel->program.group_threads, kCudaBlockThreads) << kernel->program.Dump();
}

// Records the kernel it is asked to spell.
class RecordingRenderer : public SpellingRenderer {
 public:
  explicit RecordingRenderer(CodegenTarget target) : SpellingRenderer(std::move(target)) {}
  std::string Identity() const override { return "recording"; }
  std::string Spell(const LoweredKernel& kernel) const override {
    spelled_ = kernel.program.name;
    return "source of " + kernel.program.name;
  }
  mutable std::string spelled_;
};

TEST(CodegenPipeline, ARendererSpellsWhatThePipelineDecidedAndTheSpecCarriesIt) {
  RecordingRenderer renderer(Gpu(64));
  auto spec = renderer.Render(AddOne(100), "my kernel");
  UOPD_ASSERT_OK(spec);
  EXPECT_EQ(renderer.spelled_, "my_kernel");  // made a C identifier before lowering
  EXPECT_EQ(spec->src, "source of my_kernel");
  EXPECT_EQ(spec->device, "GPU");
  EXPECT_EQ(spec->global_size[0].constant, 2);
  ASSERT_TRUE(spec->local_size.has_value());
  EXPECT_EQ((*spec->local_size)[0].constant, 64);
  EXPECT_EQ(spec->outs, (std::vector<int>{0}));
  EXPECT_EQ(spec->ins, (std::vector<int>{1}));
}

TEST(CodegenPipeline, LoweringErrorsReachTheCallerBeforeAnythingIsSpelled) {
  GraphBuilder g;
  int out = g.Buffer(0, DType::FLOAT32, 4);
  int i = g.Range(g.Index(4), 0);
  // The range is used after the END that closes it: not a kernel the lowering can order.
  int stored = g.End(g.Store(g.Target(out, i), g.Float(DType::FLOAT32, 1)), {i});
  int again = g.Store(g.Target(out, i), g.Float(DType::FLOAT32, 2));
  auto ast = DecodeKernelAst(g.Sink({stored, again}));
  if (!ast.ok()) GTEST_SKIP() << "refused at decode: " << ast.status();
  RecordingRenderer renderer(Gpu(64));
  auto spec = renderer.Render(*ast, "k");
  EXPECT_FALSE(spec.ok());
  EXPECT_EQ(renderer.spelled_, "");
}

}  // namespace
}  // namespace uopd
