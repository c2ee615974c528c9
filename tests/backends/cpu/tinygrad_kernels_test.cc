// Kernels real tinygrad programs send that IR v1 first refused (issue 11): stores into a slice
// of a buffer (setitem, assign into a view, a KV-cache write) whose INDEX carries the slice's
// pointer size, custom kernels that do nothing, and custom kernels that accumulate in register
// arrays (tinygrad 0.14's REG placeholders).
#include "backends/cpu/cpu_device.h"
#include "core/opt/optimize.h"
#include "core/util/thread_pool.h"
#include "core/wire/decode.h"
#include "gtest/gtest.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/kernel_runner.h"
#include "tests/testing/reference_interpreter.h"
#include "tests/testing/sample_kernels.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

using testing::GraphBuilder;
using testing::HostBuffer;
using S = v1::DType;

class TinygradKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    auto device = CreateCpuDevice(&pool_);
    ASSERT_TRUE(device.ok()) << device.status();
    device_ = std::move(*device);
  }
  ThreadPool pool_{1};
  std::unique_ptr<Device> device_;
};

// cache[row * 8 + j] = value[j] for j < 8: tinygrad's `cache[row:row+1, :].assign(value)`,
// whose store INDEX is a float32*[8] into the float32*[32] cache.
v1::Graph KvCacheWrite(int64_t row) {
  GraphBuilder g;
  int cache = g.Buffer(0, S::FLOAT32, 32);
  int j = g.Range(g.Index(8), 0);
  int at = g.Node(v1::Node::ADD, S::INDEX, {j, g.Index(row * 8)});
  int target = g.Node(v1::Node::INDEX, S::FLOAT32, {cache, at});
  g.Mut(target)->mutable_dtype()->set_ptr(true);
  g.Mut(target)->mutable_dtype()->set_size(8);
  int value = g.Buffer(1, S::FLOAT32, 8);
  return g.Sink({g.End(g.Store(target, g.Load(value, j)), {j})});
}

// out[i] = sum over j of (i < valid ? src[j] : Invalid) for i < 4, as tinygrad 0.14 spells a
// gather through an index that is Invalid past `valid` (test_invalid_tensor::test_tensor_index);
// with `mask_elements`, (j < valid ? src[j] : Invalid): elements left out of each sum.
v1::Graph InvalidPastSum(int64_t valid, bool mask_elements = false) {
  GraphBuilder g;
  auto weak = [&](int64_t v) { return g.Int(S::WEAKINT, v); };
  auto param = [&](int slot, int64_t size) {
    int p = g.Node(v1::Node::PARAM, S::FLOAT32, {weak(size)});
    g.Mut(p)->mutable_arg()->mutable_param()->set_slot(slot);
    return p;
  };
  int out = param(0, 4);
  int i = g.Range(weak(4), 0, v1::RangeArg::WEAK);
  g.Mut(i)->mutable_dtype()->set_scalar(S::WEAKINT);
  int src = param(1, 4);
  int j = g.Range(weak(4), 1, v1::RangeArg::REDUCE);
  g.Mut(j)->mutable_dtype()->set_scalar(S::WEAKINT);
  int invalid = g.Node(v1::Node::CONST, S::BOOL);
  g.Mut(invalid)->mutable_arg()->set_invalid(true);
  int masked = g.Node(v1::Node::WHERE, S::FLOAT32,
                      {g.Node(v1::Node::CMPLT, S::BOOL, {mask_elements ? j : i, weak(valid)}),
                       g.Node(v1::Node::INDEX, S::FLOAT32, {src, j}), invalid});
  int sum = g.Reduce(v1::Node::ADD, S::FLOAT32, masked, {j});
  g.Mut(sum)->mutable_arg()->add_ints(0);
  int store = g.Store(g.Node(v1::Node::INDEX, S::FLOAT32, {out, i}), sum);
  v1::Graph graph = g.Sink({g.End(store, {i})});
  graph.set_dialect(v1::TINYGRAD_0_14);
  return graph;
}

// tinygrad lifts a mask that does not depend on the reduction out of it: where it is false the
// sum is Invalid, and Invalid is not stored (the buffer keeps what it held). uopd reduced the
// identity there and stored 0.
TEST_F(TinygradKernels, AnInvalidReductionIsNotStored) {
  std::vector<HostBuffer> buffers = {HostBuffer::Of(std::vector<float>(4, -1.0f)),
                                     HostBuffer::Of(std::vector<float>{1, 2, 3, 4})};
  UOPD_ASSERT_OK(testing::RunOn(*device_, InvalidPastSum(2), buffers));
  EXPECT_EQ(buffers[0].As<float>(), (std::vector<float>{10, 10, -1, -1}));
  // A mask on the reduction's own range leaves elements out of every sum; all are stored.
  UOPD_ASSERT_OK(testing::RunOn(*device_, InvalidPastSum(2, /*mask_elements=*/true), buffers));
  EXPECT_EQ(buffers[0].As<float>(), (std::vector<float>{3, 3, 3, 3}));
}

TEST_F(TinygradKernels, StoresIntoASliceOfABuffer) {
  std::vector<float> cache(32, -1.0f), value(8);
  for (int i = 0; i < 8; ++i) value[i] = static_cast<float>(i);
  std::vector<HostBuffer> buffers = {HostBuffer::Of(cache), HostBuffer::Of(value)};
  UOPD_ASSERT_OK(testing::RunOn(*device_, KvCacheWrite(2), buffers));
  std::vector<float> out = buffers[0].As<float>();
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(out[i], i >= 16 && i < 24 ? static_cast<float>(i - 16) : -1.0f) << i;
  }
}

TEST_F(TinygradKernels, ASliceIndexIsStillCheckedAgainstTheBuffer) {
  // Row 4 of a 4-row cache: in bounds of the slice's own size, outside the buffer.
  std::vector<HostBuffer> buffers = {HostBuffer::Of(std::vector<float>(32)),
                                     HostBuffer::Of(std::vector<float>(8))};
  EXPECT_FALSE(testing::RunOn(*device_, KvCacheWrite(4), buffers).ok());
}

TEST_F(TinygradKernels, ASliceOfAnotherElementTypeIsRefused) {
  v1::Graph graph = KvCacheWrite(0);
  for (v1::Node& node : *graph.mutable_nodes()) {
    if (node.op() == v1::Node::INDEX && node.dtype().ptr())
      node.mutable_dtype()->set_scalar(S::INT32);
  }
  EXPECT_TRUE(testing::StatusIs(DecodeKernelAst(graph), absl::StatusCode::kInvalidArgument,
                                {"INDEX", "pointer to the buffer's"}));
}

TEST_F(TinygradKernels, AnEmptyKernelRunsAndDoesNothing) {
  GraphBuilder g;
  v1::Graph empty = g.Sink({}, "empty");
  std::vector<HostBuffer> none;
  UOPD_ASSERT_OK(testing::RunOn(*device_, empty, none));
}

// tinygrad's custom_eye_kernel: C = placeholder((rows, cols)) = RESHAPE(DEFINE_GLOBAL), and
// C[i, j] = (i == j) with one index per dimension.
v1::Graph Eye(int64_t rows, int64_t cols, bool with_input) {
  GraphBuilder g;
  int buf = g.Buffer(0, S::FLOAT32, rows * cols);
  int c = g.Node(v1::Node::RESHAPE, S::FLOAT32, {buf});
  *g.Mut(c)->mutable_dtype() = g.Mut(buf)->dtype();
  g.Mut(c)->mutable_arg()->add_ints(rows);
  g.Mut(c)->mutable_arg()->add_ints(cols);
  int i = g.Range(g.Index(rows), 0);
  int j = g.Range(g.Index(cols), 1);
  int target = g.Node(v1::Node::INDEX, S::FLOAT32, {c, i, j});
  *g.Mut(target)->mutable_dtype() = g.Mut(buf)->dtype();
  int eq = g.Node(v1::Node::CMPEQ, S::BOOL, {i, j});
  int value = g.Node(v1::Node::CAST, S::FLOAT32, {eq});
  int store = g.End(g.Store(target, value), {i, j});
  if (!with_input) return g.Sink({store});
  // And a second placeholder read by dimension, transposed: C[i, j] = 2 * A[j, i] + (i == j).
  int in = g.Buffer(1, S::FLOAT32, rows * cols);
  int a = g.Node(v1::Node::RESHAPE, S::FLOAT32, {in});
  *g.Mut(a)->mutable_dtype() = g.Mut(in)->dtype();
  g.Mut(a)->mutable_arg()->add_ints(cols);
  g.Mut(a)->mutable_arg()->add_ints(rows);
  int read = g.Node(v1::Node::INDEX, S::FLOAT32, {a, j, i});
  int twice = g.Node(v1::Node::MUL, S::FLOAT32, {read, g.Float(S::FLOAT32, 2.0)});
  int sum = g.Node(v1::Node::ADD, S::FLOAT32, {twice, value});
  int target2 = g.Node(v1::Node::INDEX, S::FLOAT32, {c, i, j});
  *g.Mut(target2)->mutable_dtype() = g.Mut(buf)->dtype();
  return g.Sink({g.End(g.Store(target2, sum), {i, j})});
}

TEST_F(TinygradKernels, CustomKernelsIndexReshapedPlaceholdersByDimension) {
  std::vector<HostBuffer> buffers = {HostBuffer::Of(std::vector<float>(12, -1.0f))};
  UOPD_ASSERT_OK(testing::RunOn(*device_, Eye(3, 4, false), buffers));
  std::vector<float> eye = buffers[0].As<float>();
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 4; ++j) EXPECT_EQ(eye[i * 4 + j], i == j ? 1.0f : 0.0f) << i << "," << j;
  }
  std::vector<float> a(12);
  for (int n = 0; n < 12; ++n) a[n] = static_cast<float>(n);  // A is 4 x 3
  std::vector<HostBuffer> two = {HostBuffer::Of(std::vector<float>(12, -1.0f)), HostBuffer::Of(a)};
  UOPD_ASSERT_OK(testing::RunOn(*device_, Eye(3, 4, true), two));
  std::vector<float> c = two[0].As<float>();
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 4; ++j) {
      EXPECT_EQ(c[i * 4 + j], 2.0f * a[j * 3 + i] + (i == j ? 1.0f : 0.0f)) << i << "," << j;
    }
  }
}

TEST_F(TinygradKernels, ReshapesAreCheckedAndHashedAsSent) {
  auto ast = DecodeKernelAst(Eye(3, 4, false));
  UOPD_ASSERT_OK(ast);
  auto again = DecodeKernelAst(Eye(3, 4, false));
  EXPECT_EQ((*ast)->hash, (*again)->hash);
  auto other = DecodeKernelAst(Eye(4, 3, false));
  UOPD_ASSERT_OK(other);
  EXPECT_NE((*ast)->hash, (*other)->hash) << "the shape is part of the kernel";

  v1::Graph wrong_size = Eye(3, 4, false);
  for (v1::Node& n : *wrong_size.mutable_nodes()) {
    if (n.op() == v1::Node::RESHAPE) n.mutable_arg()->set_ints(1, 5);
  }
  EXPECT_TRUE(testing::StatusIs(DecodeKernelAst(wrong_size), absl::StatusCode::kInvalidArgument,
                                {"RESHAPE", "15 elements, the buffer 12"}));
  v1::Graph one_index = Eye(3, 4, false);
  for (v1::Node& n : *one_index.mutable_nodes()) {
    if (n.op() == v1::Node::INDEX) n.mutable_src()->RemoveLast();
  }
  EXPECT_TRUE(testing::StatusIs(DecodeKernelAst(one_index), absl::StatusCode::kInvalidArgument,
                                {"INDEX", "one index per dimension"}));
}

// Runs `wire` on the CPU and in the reference interpreter over the same inputs: both results in
// slot `out`.
void RunBoth(Device& device, const v1::Graph& wire, std::vector<HostBuffer> buffers,
             std::vector<float>* compiled, std::vector<float>* reference, int out = 0) {
  auto ast = DecodeKernelAst(wire);
  ASSERT_TRUE(ast.ok()) << ast.status();
  std::vector<std::string> bytes;
  for (const HostBuffer& b : buffers) bytes.push_back(b.bytes);
  UOPD_ASSERT_OK(testing::Interpret(**ast, bytes, {}));
  UOPD_ASSERT_OK(testing::RunAstOn(device, *ast, buffers));
  *compiled = buffers[out].As<float>();
  *reference = HostBuffer{bytes[out]}.As<float>();
}

// tinygrad 0.14's test_custom_kernel::test_slice_sum: refused before ("register placeholder not
// in the dialect").
TEST_F(TinygradKernels, RegisterArraysAccumulateAsTinygradsSliceSum) {
  std::vector<float> in(32);
  for (int k = 0; k < 32; ++k) in[k] = static_cast<float>(k % 7) - 2.5f;
  std::vector<float> out, reference;
  RunBoth(*device_, testing::RegisterRowSumKernel(4, 8),
          {HostBuffer::Of(std::vector<float>(4, -1.0f)), HostBuffer::Of(in)}, &out, &reference);
  for (int row = 0; row < 4; ++row) {
    float sum = 0;
    for (int k = 0; k < 8; ++k) sum += in[row * 8 + k];
    EXPECT_EQ(out[row], sum) << row;
    EXPECT_EQ(reference[row], sum) << row;
  }
}

// tinygrad 0.14's test_custom_kernel::test_simple_qkv: the inner register's reset runs for every
// (i, c, j) as tinygrad places it, not once per (i, j) (lowering answered UNIMPLEMENTED before).
TEST_F(TinygradKernels, ARegisterResetInsideAnOuterLoopRunsForEveryIterationOfIt) {
  constexpr int n = 8, d = 4;
  std::vector<float> q(n * d), k(n * d), v(n * d);
  for (int x = 0; x < n * d; ++x) {
    q[x] = static_cast<float>(x % 5) - 2;
    k[x] = static_cast<float>(x % 3) - 1;
    v[x] = static_cast<float>(x % 4);
  }
  std::vector<float> out, reference;
  RunBoth(*device_, testing::RegisterAttentionKernel(n, d),
          {HostBuffer::Of(std::vector<float>(n * d)), HostBuffer::Of(q), HostBuffer::Of(k),
           HostBuffer::Of(v)},
          &out, &reference);
  for (int i = 0; i < n; ++i) {
    for (int c = 0; c < d; ++c) {
      float acc = 0;
      for (int j = 0; j < n; ++j) {
        float score = 0;
        for (int x = 0; x < d; ++x) score += q[i * d + x] * k[j * d + x];
        acc += score * v[j * d + c];
      }
      EXPECT_EQ(out[i * d + c], acc) << i << ", " << c;
      EXPECT_EQ(reference[i * d + c], acc) << i << ", " << c;
    }
  }
}

// tinygrad 0.14's test_uops::test_matmul: C[i, j] = 0, then C[i, j] = C.after(k)[i, j] + A[i, k] *
// B[k, j], all in one END(i, j, k). The zeroing depends on i and j only: it runs before the K
// loop, once per (i, j), as tinygrad places it (lowering answered UNIMPLEMENTED before).
TEST_F(TinygradKernels, AStatementRunsInTheLoopOfTheInnermostRangeItDependsOn) {
  constexpr int n = 6;
  GraphBuilder g;
  int a = g.Buffer(0, S::FLOAT32, n * n);
  int b = g.Buffer(1, S::FLOAT32, n * n);
  int c = g.Buffer(2, S::FLOAT32, n * n);
  int i = g.Range(g.Index(n), 0);
  int j = g.Range(g.Index(n), 1);
  int k = g.Range(g.Index(n), 2, v1::RangeArg::REDUCE);
  int zeroed = g.After(c, {g.Store(g.Target(c, g.RowMajor(i, n, j)), g.Float(S::FLOAT32, 0))});
  int product = g.Node(v1::Node::MUL, S::FLOAT32,
                       {g.Load(a, g.RowMajor(i, n, k)), g.Load(b, g.RowMajor(k, n, j))});
  int sum = g.Node(v1::Node::ADD, S::FLOAT32,
                   {g.Load(g.After(zeroed, {k}), g.RowMajor(i, n, j)), product});
  int accumulated = g.Store(g.Target(zeroed, g.RowMajor(i, n, j)), sum);
  v1::Graph wire = g.Sink({g.End(accumulated, {i, j, k})});
  std::vector<float> av(n * n), bv(n * n);
  for (int x = 0; x < n * n; ++x) {
    av[x] = static_cast<float>(x % 5) - 2;
    bv[x] = static_cast<float>(x % 3);
  }
  std::vector<float> out, reference;
  RunBoth(*device_, wire,
          {HostBuffer::Of(av), HostBuffer::Of(bv), HostBuffer::Of(std::vector<float>(n * n, 7.0f))},
          &out, &reference, /*out=*/2);
  for (int row = 0; row < n; ++row) {
    for (int col = 0; col < n; ++col) {
      float want = 0;
      for (int x = 0; x < n; ++x) want += av[row * n + x] * bv[x * n + col];
      EXPECT_EQ(out[row * n + col], want) << row << ", " << col;
      EXPECT_EQ(reference[row * n + col], want) << row << ", " << col;
    }
  }
}

// A RANGE of one iteration folds to 0, and an AFTER naming it as a dependency orders nothing
// (before: INVALID_ARGUMENT "CONST ... is not a statement", or UNIMPLEMENTED).
TEST_F(TinygradKernels, AnAfterOnARangeOfOneIterationOrdersNothing) {
  for (auto [rows, cols] : {std::pair<int, int>{1, 8}, {4, 1}}) {
    std::vector<float> in(rows * cols);
    for (int k = 0; k < rows * cols; ++k) in[k] = static_cast<float>(k + 1);
    std::vector<float> out, reference;
    RunBoth(*device_, testing::RegisterRowSumKernel(rows, cols),
            {HostBuffer::Of(std::vector<float>(rows)), HostBuffer::Of(in)}, &out, &reference);
    for (int row = 0; row < rows; ++row) {
      float sum = 0;
      for (int k = 0; k < cols; ++k) sum += in[row * cols + k];
      EXPECT_EQ(out[row], sum) << rows << "x" << cols << ", row " << row;
      EXPECT_EQ(reference[row], sum) << rows << "x" << cols << ", row " << row;
    }
  }
}

// out[i] = reg[i] for i < n, with `fill` stored into every element first unless it is 0: a read
// before any store.
v1::Graph RegisterRead(int64_t n, double fill) {
  GraphBuilder g;
  int out = g.Buffer(0, S::FLOAT32, n);
  int reg = g.Registers(0, S::FLOAT32, n);
  int i = g.Range(g.Index(n), 0);
  int read = reg;
  if (fill != 0) {
    int j = g.Range(g.Index(n), 1);
    read = g.After(reg, {g.End(g.Store(g.Target(reg, j), g.Float(S::FLOAT32, fill)), {j})});
  }
  return g.Sink({g.End(g.Store(g.Target(out, i), g.Load(read, i)), {i})});
}

// A register array starts as zeros: before, a read before any store returned what the thread's
// stack held, here the values an earlier kernel left in its own array (and in the daemon, other
// clients' values and addresses).
TEST_F(TinygradKernels, ARegisterArrayStartsAsZeros) {
  std::vector<HostBuffer> filled = {HostBuffer::Of(std::vector<float>(256))};
  UOPD_ASSERT_OK(testing::RunOn(*device_, RegisterRead(256, 7.0), filled));
  EXPECT_EQ(filled[0].As<float>()[255], 7.0f);
  std::vector<HostBuffer> unset = {HostBuffer::Of(std::vector<float>(256, -1.0f))};
  UOPD_ASSERT_OK(testing::RunOn(*device_, RegisterRead(256, 0), unset));
  EXPECT_EQ(unset[0].As<float>(), std::vector<float>(256, 0.0f));
}

// Register arrays live on the stack of the thread running the kernel: 12,000 of 8 KiB crashed
// the daemon (a 96 MiB frame past the thread's 8 MiB stack), 2,000 wrote into a neighbouring
// thread's stack.
TEST_F(TinygradKernels, AKernelsRegisterArraysAreBoundedTogether) {
  GraphBuilder g;
  int out = g.Buffer(0, S::FLOAT64, 1);
  int total = g.Float(S::FLOAT64, 0);
  for (int id = 0; id < 3; ++id) {
    int reg = g.Registers(id, S::FLOAT64, 1024);
    total = g.Node(v1::Node::ADD, S::FLOAT64, {total, g.Load(reg, g.Index(id))});
  }
  std::vector<HostBuffer> buffers = {HostBuffer::Of(std::vector<double>(1))};
  absl::Status status =
      testing::RunOn(*device_, g.Sink({g.Store(g.Target(out, g.Index(0)), total)}), buffers);
  EXPECT_TRUE(testing::StatusIs(status, absl::StatusCode::kInvalidArgument,
                                {"register arrays take more than 16384 bytes"}))
      << status;
}

TEST_F(TinygradKernels, ARegisterIndexThatMayLeaveItsArrayIsRefused) {
  using S = v1::DType;
  GraphBuilder g;
  int out = g.Buffer(0, S::FLOAT32, 4);
  int reg = g.Registers(0, S::FLOAT32, 2);
  int i = g.Range(g.Index(4), 0);
  int zeroed = g.After(reg, {g.Store(g.Target(g.After(reg, {i}), i), g.Float(S::FLOAT32, 1))});
  int stored = g.Store(g.Target(out, i), g.Load(zeroed, i));
  std::vector<HostBuffer> buffers = {HostBuffer::Of(std::vector<float>(4))};
  absl::Status status = testing::RunOn(*device_, g.Sink({g.End(stored, {i})}), buffers);
  EXPECT_TRUE(testing::StatusIs(status, absl::StatusCode::kInvalidArgument,
                                {"provably within its 2 elements"}))
      << status;
}

// An upcast or split of a range a register array is used in would share one array among what
// were separate iterations: the heuristics leave such kernels as written, explicit opts are
// refused.
TEST_F(TinygradKernels, KernelsWithRegisterArraysRunAsWritten) {
  auto ast = DecodeKernelAst(testing::RegisterRowSumKernel(64, 64));
  ASSERT_TRUE(ast.ok()) << ast.status();
  const OptTarget target = OptTargetFor("CPU", device_->compiler().Target(), device_->threads());
  auto heuristic = OptimizeKernel(*ast, target, OptimizeRequest{OptMode::kHeuristic});
  ASSERT_TRUE(heuristic.ok()) << heuristic.status();
  EXPECT_TRUE(heuristic->applied.empty());
  auto opts =
      OptimizeKernel(*ast, target, OptimizeRequest{OptMode::kOpts, {Opt{OptOp::kUpcast, 0, 4}}});
  EXPECT_TRUE(
      testing::StatusIs(opts.status(), absl::StatusCode::kInvalidArgument, {"register arrays"}))
      << opts.status();
}

}  // namespace
}  // namespace uopd
