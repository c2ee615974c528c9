// Kernels real tinygrad programs send that IR v1 first refused (issue 11): stores into a slice
// of a buffer (setitem, assign into a view, a KV-cache write) whose INDEX carries the slice's
// pointer size, and custom kernels that do nothing.
#include "backends/cpu/cpu_device.h"
#include "core/util/thread_pool.h"
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

}  // namespace
}  // namespace uopd
