// The reference interpreter is only an oracle if it agrees with tinygrad: it must reproduce every
// corpus case and plan.
#include "tests/testing/reference_interpreter.h"

#include "absl/strings/str_cat.h"
#include "core/corpus/compare.h"
#include "core/wire/decode.h"
#include "gtest/gtest.h"
#include "tests/testing/corpus_paths.h"
#include "tests/testing/graph_builder.h"

namespace uopd::testing {
namespace {

// Found by RandomKernels at 3,000 seeds (seed 1933): the interpreter rounded a CAST from fp8 e5m2
// to itself, turning a loaded infinity (0xfc) into -57344 (0xfb), where compiled kernels (and
// tinygrad) leave the value as it is.
TEST(ReferenceInterpreter, ACastToItsOwnTypeKeepsAnFp8Infinity) {
  GraphBuilder g;
  const int out = g.Buffer(0, v1::DType::INT8, 3), in = g.Buffer(1, v1::DType::FP8E5M2, 3);
  const int i = g.Range(g.Index(3), 0);
  const int same = g.Node(v1::Node::CAST, v1::DType::FP8E5M2, {g.Load(in, i)});
  const int bits = g.Node(v1::Node::BITCAST, v1::DType::INT8, {same});
  auto ast = DecodeKernelAst(g.Sink({g.End(g.Store(g.Target(out, i), bits), {i})}));
  ASSERT_TRUE(ast.ok()) << ast.status();
  std::vector<std::string> buffers = {std::string(3, '\0'), std::string("\xfc\x7c\x7b", 3)};
  ASSERT_TRUE(Interpret(**ast, buffers, {}).ok());
  EXPECT_EQ(buffers[0], std::string("\xfc\x7c\x7b", 3));
}

TEST(ReferenceInterpreter, ReproducesTinygradOnTheWholeCorpus) {
  int checked = 0;
  for (const CorpusEntry& entry : LoadWholeCorpus()) {
    absl::flat_hash_map<int64_t, int> index;  // slot or buffer id -> position
    std::vector<std::string> bytes;
    std::vector<const v1::CorpusBuffer*> meta;
    const auto& buffers = entry.is_plan ? entry.plan.buffers() : entry.kase.buffers();
    for (const v1::CorpusBuffer& b : buffers) {
      index[entry.is_plan ? b.id() : b.slot()] = static_cast<int>(bytes.size());
      bytes.push_back(b.init());
      meta.push_back(&b);
    }
    const auto& vars_wire = entry.is_plan ? entry.plan.vars() : entry.kase.vars();
    absl::flat_hash_map<std::string, int64_t> vars(vars_wire.begin(), vars_wire.end());
    std::vector<std::pair<const v1::Graph*, std::vector<int64_t>>> kernels;
    if (entry.is_plan) {
      for (const auto& k : entry.plan.kernels())
        kernels.push_back({&k.ast(), {k.bufs().begin(), k.bufs().end()}});
    } else {
      std::vector<int64_t> slots;
      for (const auto& b : entry.kase.buffers()) slots.push_back(b.slot());
      std::sort(slots.begin(), slots.end());
      kernels.push_back({&entry.kase.ast(), slots});
    }
    bool ran = true;
    for (const auto& [wire, ids] : kernels) {
      auto ast = DecodeKernelAst(*wire);
      ASSERT_TRUE(ast.ok()) << entry.path << ": " << ast.status();
      std::vector<std::string> by_slot;
      for (int64_t id : ids) by_slot.push_back(bytes[index.at(id)]);
      absl::Status status = Interpret(**ast, by_slot, vars);
      EXPECT_TRUE(status.ok()) << entry.path << ": " << status;
      ran &= status.ok();
      for (size_t s = 0; s < ids.size(); ++s) bytes[index.at(ids[s])] = by_slot[s];
    }
    if (!ran) continue;
    const auto& outputs = entry.is_plan ? entry.plan.outputs() : entry.kase.outputs();
    const auto& tol = entry.is_plan ? entry.plan.tolerance() : entry.kase.tolerance();
    for (const v1::CorpusOutput& out : outputs) {
      int position = index.at(entry.is_plan ? out.id() : out.slot());
      auto diff = CompareBuffers(static_cast<Scalar>(meta[position]->dtype()), bytes[position],
                                 out.expected(), Tolerance{tol.rtol(), tol.atol()});
      EXPECT_FALSE(diff.has_value()) << entry.path << ": " << *diff;
    }
    ++checked;
  }
  EXPECT_GT(checked, 380);
}

}  // namespace
}  // namespace uopd::testing
