// The pre-optimization passes (core/opt/preopt.h) against tinygrad, and against the meaning of
// the kernels they rewrite: every scheduled AST of the optimized corpus must become the AST
// tinygrad's optimizer received, and no kernel (corpus cases, corpus plans, random kernels) may
// compute anything else afterwards, as the reference interpreter runs them.
#include "core/opt/preopt.h"

#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include "absl/container/btree_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/corpus/compare.h"
#include "core/corpus/corpus_file.h"
#include "core/ir/printer.h"
#include "core/wire/decode.h"
#include "gtest/gtest.h"
#include "tests/testing/corpus_paths.h"
#include "tests/testing/random_kernels.h"
#include "tests/testing/reference_interpreter.h"
#include "tests/testing/status_matchers.h"

namespace uopd {
namespace {

const OptTarget kTargets[] = {OptTarget::Cpu(8), OptTarget::Cuda("sm_80")};

OptTarget TargetOf(const v1::CorpusCase& kase) {
  return kase.target() == "CPU" ? OptTarget::Cpu(8) : OptTarget::Cuda("sm_80");
}

std::vector<v1::CorpusCase> OptCorpus() {
  std::vector<v1::CorpusCase> cases;
  auto files = ListCorpusFiles({std::string(UOPD_CORPUS_OPT_DIR) + "/cases"});
  EXPECT_TRUE(files.ok()) << files.status();
  if (!files.ok()) return cases;
  for (const std::string& file : *files) {
    auto entry = LoadCorpusFile(file);
    EXPECT_TRUE(entry.ok()) << entry.status();
    if (entry.ok()) cases.push_back(std::move(entry->kase));
  }
  return cases;
}

TEST(PreOpt, ScheduledAstsBecomeTinygradsPreOptAsts) {
  int changed = 0, cpu_cuts = 0;
  const std::vector<v1::CorpusCase> cases = OptCorpus();
  for (const v1::CorpusCase& kase : cases) {
    SCOPED_TRACE(kase.name());
    auto scheduled = DecodeKernelAst(kase.ast_scheduled());
    auto preopt = DecodeKernelAst(kase.ast_preopt());
    UOPD_ASSERT_OK(scheduled);
    UOPD_ASSERT_OK(preopt);
    std::shared_ptr<const KernelAst> ours = RunPreOptPasses(*scheduled, TargetOf(kase));
    EXPECT_EQ(ours->hash, (*preopt)->hash) << "ours:\n"
                                           << PrintGraph(ours->root) << "\ntinygrad's:\n"
                                           << PrintGraph((*preopt)->root);
    // Nothing to do is no new AST.
    if ((*scheduled)->hash == (*preopt)->hash) {
      EXPECT_EQ(ours, *scheduled);
    }
    changed += (*scheduled)->hash != (*preopt)->hash;
    cpu_cuts += (*preopt)->root->src(0)->op() == Op::kGroup;
  }
  EXPECT_EQ(cases.size(), 55u);
  // Merges (elementwise, CUDA too), splits by `% c` (transposes), reordered index sums (convs)
  // and a store range cut (cat, CPU only).
  EXPECT_EQ(changed, 9);
  EXPECT_EQ(cpu_cuts, 1);
}

TEST(PreOpt, CutsStoreRangesOnlyOnTheCpu) {
  for (const v1::CorpusCase& kase : OptCorpus()) {
    if (kase.name() != "h_cpu_ew_cat_1d_20_12") continue;
    auto scheduled = DecodeKernelAst(kase.ast_scheduled());
    UOPD_ASSERT_OK(scheduled);
    std::shared_ptr<const KernelAst> cpu = RunPreOptPasses(*scheduled, OptTarget::Cpu(8));
    std::shared_ptr<const KernelAst> cuda = RunPreOptPasses(*scheduled, OptTarget::Cuda("sm_80"));
    EXPECT_EQ(cpu->root->src(0)->op(), Op::kGroup) << PrintGraph(cpu->root);
    // On CUDA the 32-element range stays one range compared with 20, as tinygrad leaves it.
    EXPECT_EQ(cuda, *scheduled) << PrintGraph(cuda->root);
    return;
  }
  FAIL() << "h_cpu_ew_cat_1d_20_12 is not in the corpus";
}

struct Tally {
  int kernels = 0;
  int changed = 0;
};

// The axes opts number, as "ids:TYPE:size" in opt order (tinygrad's axis_to_pos, then ids),
// every RANGE included.
std::string Axes(const KernelAst& ast) {
  std::vector<const UOp*> ranges;
  for (const UOp* n : Toposort(ast.root)) {
    if (n->op() == Op::kRange) ranges.push_back(n);
  }
  std::sort(ranges.begin(), ranges.end(), [](const UOp* a, const UOp* b) {
    const int pa = AxisPosition(a->arg().axis_type), pb = AxisPosition(b->arg().axis_type);
    return pa != pb ? pa < pb : a->arg().axis < b->arg().axis;
  });
  std::vector<std::string> out;
  for (const UOp* r : ranges) {
    const UOp* size = r->src(0);
    out.push_back(absl::StrCat(absl::StrJoin(r->arg().axis, "."), ":",
                               AxisTypeName(r->arg().axis_type), ":",
                               size->op() == Op::kConst ? absl::StrCat(size->arg().i) : "sym"));
  }
  return absl::StrJoin(out, " ");
}

// Every kernel of the reference corpus gets the axes tinygrad's own passes give it
// (tests/core/opt/preopt_axes.txt, written by running tinygrad 0.12's full_rewrite_to_sink steps
// 1-5 on each kernel), for both targets: a client's opts for it name the same ranges here.
TEST(PreOpt, NumbersEveryCorpusKernelsAxesAsTinygradDoes) {
  std::ifstream file(UOPD_PREOPT_AXES);
  ASSERT_TRUE(file.good()) << UOPD_PREOPT_AXES;
  absl::flat_hash_map<std::string, std::string> tinygrad;  // "label target" -> axes
  std::string line;
  while (std::getline(file, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string label, target, axis;
    words >> label >> target;
    std::vector<std::string> axes;
    while (words >> axis) axes.push_back(axis);
    tinygrad[label + " " + target] = absl::StrJoin(axes, " ");
  }
  // Gathers tinygrad's pm_load_collapse turns into loads by float rewrites of sums uopd leaves
  // out (preopt.h): one-hot cross-entropy keeps its REDUCE range here. (Bilinear interpolation,
  // a gather written exactly as a sum of WHERE(idx != r, 0, x[r]), is collapsed as tinygrad
  // collapses it.)
  const absl::btree_set<std::string> load_collapse = {
      "cases/nn_cross_entropy_4x6__k2.json", "cases/nn_train_mlp_xent_sgd__k4.json",
      "cases/nn_train_mlp_xent_sgd__k5.json", "plans/nn_cross_entropy_4x6.json#2"};
  absl::btree_set<std::string> differ;
  int matched = 0;
  const std::string prefix = testing::CorpusDir() + "/";
  for (const auto& [path, wire] : testing::CorpusAsts()) {
    const std::string label = absl::StartsWith(path, prefix) ? path.substr(prefix.size()) : path;
    auto ast = DecodeKernelAst(wire);
    UOPD_ASSERT_OK(ast);
    for (const OptTarget& target : kTargets) {
      const std::string name = target.device == "CPU" ? "CPU" : "CUDA";
      auto want = tinygrad.find(label + " " + name);
      ASSERT_NE(want, tinygrad.end()) << label << " " << name << " is not in " << UOPD_PREOPT_AXES;
      const std::string ours = Axes(*RunPreOptPasses(*ast, target));
      if (ours == want->second) {
        ++matched;
        continue;
      }
      differ.insert(label);
      EXPECT_TRUE(load_collapse.contains(label))
          << label << " (" << name << "): ours " << ours << ", tinygrad's " << want->second;
    }
  }
  EXPECT_EQ(differ, load_collapse);
  EXPECT_EQ(matched + 2 * static_cast<int>(load_collapse.size()),
            static_cast<int>(tinygrad.size()));
}

// Runs `original` and each target's pre-opt AST on copies of `buffers` and expects the same
// outcome: every buffer equal (floats within `tolerance`: merged reduce ranges may sum in another
// order, which the semantics leave open). Leaves `buffers` as the original kernel left them.
void ExpectSameMeaning(const std::string& label, const std::shared_ptr<const KernelAst>& original,
                       std::vector<std::string>& buffers, const std::vector<Scalar>& dtypes,
                       const absl::flat_hash_map<std::string, int64_t>& vars, Tolerance tolerance,
                       Tally& tally) {
  std::vector<std::string> want = buffers;
  absl::Status status = testing::Interpret(*original, want, vars);
  ASSERT_TRUE(status.ok()) << label << ": " << status;
  ++tally.kernels;
  for (const OptTarget& target : kTargets) {
    std::shared_ptr<const KernelAst> pre = RunPreOptPasses(original, target);
    if (pre == original) continue;
    ++tally.changed;
    std::vector<std::string> got = buffers;
    absl::Status ran = testing::Interpret(*pre, got, vars);
    ASSERT_TRUE(ran.ok()) << label << " (" << target.device << "): " << ran << "\n"
                          << PrintGraph(pre->root);
    for (size_t slot = 0; slot < want.size(); ++slot) {
      auto diff = CompareBuffers(dtypes[slot], got[slot], want[slot], tolerance);
      EXPECT_FALSE(diff.has_value()) << label << " (" << target.device << "), slot " << slot << ": "
                                     << *diff << "\nas written:\n"
                                     << PrintGraph(original->root) << "\nafter the passes:\n"
                                     << PrintGraph(pre->root);
    }
  }
  buffers = std::move(want);
}

TEST(PreOpt, KeepsWhatEveryCorpusKernelComputes) {
  Tally tally;
  // The optimized corpus, from the ASTs its clients send.
  for (const v1::CorpusCase& kase : OptCorpus()) {
    auto ast = DecodeKernelAst(kase.ast_scheduled());
    UOPD_ASSERT_OK(ast);
    std::vector<std::pair<int64_t, const v1::CorpusBuffer*>> slots;
    for (const v1::CorpusBuffer& b : kase.buffers()) slots.push_back({b.slot(), &b});
    std::sort(slots.begin(), slots.end());
    std::vector<std::string> bytes;
    std::vector<Scalar> dtypes;
    for (const auto& [slot, b] : slots) {
      bytes.push_back(b->init());
      dtypes.push_back(static_cast<Scalar>(b->dtype()));
    }
    absl::flat_hash_map<std::string, int64_t> vars(kase.vars().begin(), kase.vars().end());
    ExpectSameMeaning(kase.name(), *ast, bytes, dtypes, vars,
                      Tolerance{kase.tolerance().rtol(), kase.tolerance().atol()}, tally);
  }
  // The reference corpus: cases, and plans kernel after kernel on the state the earlier left.
  for (const CorpusEntry& entry : testing::LoadWholeCorpus()) {
    absl::flat_hash_map<int64_t, int> index;  // slot or buffer id -> position
    std::vector<std::string> bytes;
    std::vector<Scalar> dtypes;
    const auto& buffers = entry.is_plan ? entry.plan.buffers() : entry.kase.buffers();
    for (const v1::CorpusBuffer& b : buffers) {
      index[entry.is_plan ? b.id() : b.slot()] = static_cast<int>(bytes.size());
      bytes.push_back(b.init());
      dtypes.push_back(static_cast<Scalar>(b.dtype()));
    }
    const auto& vars_wire = entry.is_plan ? entry.plan.vars() : entry.kase.vars();
    const auto& tol = entry.is_plan ? entry.plan.tolerance() : entry.kase.tolerance();
    std::vector<std::pair<const v1::Graph*, std::vector<int64_t>>> kernels;
    if (entry.is_plan) {
      for (const auto& k : entry.plan.kernels()) {
        kernels.push_back({&k.ast(), {k.bufs().begin(), k.bufs().end()}});
      }
    } else {
      std::vector<int64_t> slots;
      for (const auto& b : entry.kase.buffers()) slots.push_back(b.slot());
      std::sort(slots.begin(), slots.end());
      kernels.push_back({&entry.kase.ast(), slots});
    }
    for (size_t k = 0; k < kernels.size(); ++k) {
      const auto& [wire, ids] = kernels[k];
      auto ast = DecodeKernelAst(*wire);
      ASSERT_TRUE(ast.ok()) << entry.path << ": " << ast.status();
      absl::flat_hash_map<std::string, int64_t> vars(vars_wire.begin(), vars_wire.end());
      if (entry.is_plan) {
        for (const auto& [name, value] : entry.plan.kernels(static_cast<int>(k)).vars()) {
          vars[name] = value;
        }
      }
      std::vector<std::string> by_slot;
      std::vector<Scalar> slot_dtypes;
      for (int64_t id : ids) {
        by_slot.push_back(bytes[index.at(id)]);
        slot_dtypes.push_back(dtypes[index.at(id)]);
      }
      ExpectSameMeaning(absl::StrCat(entry.path, "#", k), *ast, by_slot, slot_dtypes, vars,
                        Tolerance{tol.rtol(), tol.atol()}, tally);
      for (size_t s = 0; s < ids.size(); ++s) bytes[index.at(ids[s])] = by_slot[s];
    }
  }
  std::printf("[  NOTE    ] %d kernels, %d pre-opt ASTs that differ from theirs\n", tally.kernels,
              tally.changed);
  EXPECT_GT(tally.kernels, 500);
  EXPECT_GT(tally.changed, 250);
}

// Random kernels (tests/testing/random_kernels.h: random index arithmetic that may leave its
// buffer, a symbolic shift, casts, masked loads, reductions): where the kernel as written runs,
// the pre-opt AST runs too and writes the same output, except where the reference itself varies
// with what the semantics leave open (reduction order, NaN bits). A kernel that stops out of
// range may stop no more: a rewrite can drop a load whose value cannot matter.
TEST(PreOpt, KeepsWhatRandomKernelsCompute) {
  const testing::Unspecified variations[] = {{},
                                             {false, 0, true, 0, 0},
                                             {true, 2, false, 32, 0},
                                             {false, 0, false, 0, 1},
                                             {false, 0, false, 4, 0}};
  std::mt19937 data_rng(3);
  int checked = 0, changed = 0;
  for (uint32_t seed = 0; seed < 500; ++seed) {
    testing::Generator generator(seed, /*long_reductions=*/seed % 3 == 0, /*outputs=*/48);
    std::vector<testing::RandomInput> inputs;
    testing::S out_dtype;
    v1::Graph graph = generator.Make(&inputs, &out_dtype);
    std::vector<std::string> buffers = {std::string(48 * testing::Size(out_dtype), '\0')};
    for (const testing::RandomInput& input : inputs) {
      std::string bytes(input.elements * testing::Size(input.dtype), '\0');
      for (char& c : bytes) c = static_cast<char>(data_rng());
      if (input.dtype == v1::DType::BOOL) {
        for (char& c : bytes) c &= 1;
      }
      buffers.push_back(bytes);
    }
    const absl::flat_hash_map<std::string, int64_t> vars = {
        {"shift", static_cast<int64_t>(data_rng() % 41)}};
    auto ast = DecodeKernelAst(graph);
    ASSERT_TRUE(ast.ok()) << "seed " << seed << ": " << ast.status();
    std::vector<std::vector<std::string>> references;
    bool defined = true;
    for (const testing::Unspecified& variation : variations) {
      std::vector<std::string> reference = buffers;
      defined &= testing::Interpret(**ast, reference, vars, variation).ok();
      references.push_back(std::move(reference));
    }
    for (const OptTarget& target : kTargets) {
      std::shared_ptr<const KernelAst> pre = RunPreOptPasses(*ast, target);
      if (pre == *ast) continue;
      ++changed;
      if (!defined) continue;
      std::vector<std::string> got = buffers;
      absl::Status ran = testing::Interpret(*pre, got, vars);
      ASSERT_TRUE(ran.ok()) << "seed " << seed << " (" << target.device << "): " << ran;
      const Scalar out = static_cast<Scalar>(out_dtype);
      const size_t item = testing::Size(out_dtype);
      for (size_t e = 0; e < 48; ++e) {
        auto element = [&](const std::string& bytes) { return bytes.substr(e * item, item); };
        bool open = false;
        for (size_t r = 1; r < references.size(); ++r) {
          open |= element(references[r][0]) != element(references[0][0]);
        }
        if (open) continue;
        auto diff = CompareBuffers(out, element(got[0]), element(references[0][0]), Tolerance{});
        EXPECT_FALSE(diff.has_value()) << "seed " << seed << " (" << target.device << "), element "
                                       << e << ": " << *diff << "\nas written:\n"
                                       << PrintGraph((*ast)->root) << "\nafter the passes:\n"
                                       << PrintGraph(pre->root);
      }
      ++checked;
    }
  }
  std::printf("[  NOTE    ] %d random kernels rewritten, %d of them compared\n", changed, checked);
  EXPECT_GT(checked, 100);
}

}  // namespace
}  // namespace uopd
