// Kernels real tinygrad programs send that IR v1 first refused (issue 11): stores into a slice
// of a buffer (setitem, assign into a view, a KV-cache write) whose INDEX carries the slice's
// pointer size, and custom kernels that do nothing.
#include "backends/cpu/cpu_device.h"
#include "core/util/thread_pool.h"
#include "core/wire/decode.h"
#include "gtest/gtest.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/kernel_runner.h"
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

}  // namespace
}  // namespace uopd
