// The loop plan decides, for every backend, where loops read the stop word, which loops are
// register tiles and which masked loads are branched: checked on small linear programs.
#include "core/codegen/loop_plan.h"

#include "gtest/gtest.h"

namespace uopd {
namespace {

DType T(Scalar s, int count = 1) {
  DType d = DType::Of(s);
  d.count = count;
  return d;
}

struct Builder {
  int Add(Instr instr) {
    program.instrs.push_back(std::move(instr));
    return static_cast<int>(program.instrs.size()) - 1;
  }
  int Const(int64_t v) {
    return Add(Instr{.kind = InstrKind::kConst, .dtype = T(Scalar::kIndex), .arg = Arg::I64(v)});
  }
  int Var() { return Add(Instr{.kind = InstrKind::kVar, .dtype = T(Scalar::kIndex), .var = 0}); }
  int Loop(int end) {
    const int start = Const(0);
    return Add(
        Instr{.kind = InstrKind::kLoopBegin, .dtype = T(Scalar::kIndex), .src = {start, end}});
  }
  void EndLoop(int loop) { Add(Instr{.kind = InstrKind::kLoopEnd, .src = {loop}}); }
  int Acc() {
    const int zero = Add(Instr{.kind = InstrKind::kConst, .dtype = T(Scalar::kFloat32)});
    return Add(Instr{.kind = InstrKind::kAccDefine, .dtype = T(Scalar::kFloat32), .src = {zero}});
  }
  void Update(int acc, int value) {
    Add(Instr{.kind = InstrKind::kAccUpdate,
              .op = Op::kAdd,
              .dtype = T(Scalar::kFloat32),
              .src = {acc, value}});
  }
  int Load(int index, int mask = -1) {
    Instr load{.kind = InstrKind::kLoad, .dtype = T(Scalar::kFloat32), .src = {index}, .slot = 1};
    if (mask >= 0) load.src.push_back(mask);
    return Add(std::move(load));
  }
  int Less(int a, int b) {
    return Add(
        Instr{.kind = InstrKind::kAlu, .op = Op::kCmplt, .dtype = T(Scalar::kBool), .src = {a, b}});
  }
  LinearProgram program;
};

CodegenTarget Checked(int64_t chunk) {
  CodegenTarget target;
  target.stop_chunk = chunk;
  return target;
}

TEST(LoopPlan, ShortConstantNestsLeaveTheStopCheckToTheLoopsAroundThem) {
  Builder b;
  const int outer = b.Loop(b.Var());       // unbounded: checks
  const int middle = b.Loop(b.Const(64));  // 64 x 16 iterations: checked
  const int inner = b.Loop(b.Const(16));   // 16 iterations: too short to check
  b.EndLoop(inner);
  b.EndLoop(middle);
  b.EndLoop(outer);
  const LoopPlan plan = PlanLoops(b.program, Checked(256));
  EXPECT_EQ(plan.stop[outer], StopCheck::kEachIteration);
  EXPECT_EQ(plan.stop[middle], StopCheck::kEachIteration);
  EXPECT_EQ(plan.stop[inner], StopCheck::kNone);
  EXPECT_TRUE(plan.ChecksStop());
  EXPECT_EQ(plan.stop_chunk, 256);
}

TEST(LoopPlan, LongInnermostLoopsCheckBetweenChunksAndNothingChecksWithoutAChunk) {
  Builder b;
  const int outer = b.Loop(b.Const(4));
  const int inner = b.Loop(b.Var());
  b.EndLoop(inner);
  b.EndLoop(outer);
  const LoopPlan plan = PlanLoops(b.program, Checked(256));
  EXPECT_EQ(plan.stop[inner], StopCheck::kBetweenChunks);
  EXPECT_EQ(plan.stop[outer], StopCheck::kEachIteration);

  const LoopPlan never = PlanLoops(b.program, CodegenTarget{});
  EXPECT_FALSE(never.ChecksStop());
}

TEST(LoopPlan, AGridLoopWithoutAnEndIsCheckedLikeAnyOther) {
  Builder b;
  const int grid = b.Add(
      Instr{.kind = InstrKind::kGlobalIndex, .dtype = T(Scalar::kIndex), .src = {b.Const(1000)}});
  const LoopPlan plan = PlanLoops(b.program, Checked(256));
  EXPECT_EQ(plan.stop[grid], StopCheck::kBetweenChunks);
}

TEST(LoopPlan, InnermostLoopsUpdatingMoreAccumulatorsThanTheTargetWidensAreRegisterTiles) {
  Builder b;
  std::vector<int> accs;
  for (int k = 0; k < 3; ++k) accs.push_back(b.Acc());
  const int loop = b.Loop(b.Const(8));
  const int x = b.Load(loop);
  for (int acc : accs) b.Update(acc, x);
  b.EndLoop(loop);
  CodegenTarget target;
  target.max_widened_accumulators = 2;
  EXPECT_TRUE(PlanLoops(b.program, target).register_tile[loop]);
  target.max_widened_accumulators = 3;
  EXPECT_FALSE(PlanLoops(b.program, target).register_tile[loop]);
  target.max_widened_accumulators = 0;  // the backend's vectorizer decides
  EXPECT_FALSE(PlanLoops(b.program, target).register_tile[loop]);
}

TEST(LoopPlan, OnlyMasksFollowingTheLoadsOwnLoopCounterAreBranched) {
  Builder b;
  const int outer = b.Loop(b.Const(8));
  const int inner = b.Loop(b.Const(8));
  const int by_counter = b.Load(inner, b.Less(inner, b.Const(4)));  // periodic: branched
  const int fixed = b.Load(inner, b.Less(outer, b.Const(4)));       // fixed in this loop
  const int loaded = b.Load(inner);
  const int by_data = b.Load(inner, b.Less(loaded, b.Const(4)));  // follows the data
  b.EndLoop(inner);
  b.EndLoop(outer);
  CodegenTarget target;
  target.branch_masked_loads = true;
  const LoopPlan plan = PlanLoops(b.program, target);
  EXPECT_TRUE(plan.branched[by_counter]);
  EXPECT_FALSE(plan.branched[fixed]);
  EXPECT_FALSE(plan.branched[by_data]);
  target.branch_masked_loads = false;
  EXPECT_FALSE(PlanLoops(b.program, target).branched[by_counter]);
}

}  // namespace
}  // namespace uopd
