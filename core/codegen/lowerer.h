// Lowerer: the lowering of one kernel AST to a LinearProgram (core/codegen/lower.h), internal
// to core/codegen. One file per part: the signature, values and statements (lower.cc), loops,
// the parallel loop and the GPU grid (lower_loops.cc), buffer accesses (lower_memory.cc) and
// reductions (lower_reduce.cc).
#ifndef UOPD_CORE_CODEGEN_LOWERER_H_
#define UOPD_CORE_CODEGEN_LOWERER_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/codegen/lower.h"
#include "core/ir/value_range.h"

namespace uopd::lowering {

// INVALID_ARGUMENT "lower: NODE: what".
absl::Status NodeError(const UOp& node, absl::string_view what);

// Ranges opened together (by one END or REDUCE) run outermost-first in tinygrad's axis order:
// by type (LOOP, GLOBAL, LOCAL, ..., REDUCE), then by axis id, the memory order the scheduler
// numbers them in. A THREAD range goes outermost: it is the loop CPU threads split.
// A range the rewrites folded to its one value (RANGE(1) -> CONST 0) is no loop: skipped.
std::vector<const UOp*> SortedRanges(absl::Span<const UOp* const> ranges);

class Lowerer {
 public:
  Lowerer(const KernelAst& ast, const LowerOptions& options) : ast_(ast), options_(options) {}

  absl::StatusOr<LinearProgram> Run(const std::string& name);

 private:
  // ---- Signature: buffers, variables --------------------------------------------------------

  absl::Status CollectSignature();

  // Every RANGE of an integer dtype other than INDEX holds each value its counter takes.
  absl::Status CheckRangesFitTheirDTypes();

  static int SlotOf(const UOp* buffer);

  // The DEFINE_GLOBAL or DEFINE_REG an INDEX's buffer operand names (through AFTERs).
  static const UOp* BaseBuffer(const UOp* buffer);

  // One kRegDefine per DEFINE_REG, before the statements; not in programs that work in groups
  // (their threads' parts run one after another on the CPU oracle, sharing one array).
  absl::Status DefineRegisters();

  // int32 for INDEX when every index value, and every loop counter's increment, fits.
  void ChooseIndexWidth();

  // Split the outermost loop across threads when the kernel is one parallel loop nest with
  // enough work. Only a kernel whose every statement sits inside that loop can be split:
  // anything outside it would run once per thread.
  void ChooseParallelLoop();

  // GPU: the leading parallel ranges of a kernel that is one loop nest become grid threads.
  void ChooseGridRanges();

  // Opens the grid ranges: total = product of their ends; each range's value comes from the
  // thread index, innermost range fastest (adjacent threads touch adjacent elements).
  absl::Status EmitGridIndex();

  bool IsGridRange(const UOp* range) const;

  // GPU with group_threads: the GROUP_REDUCE range whose threads share a block's shared
  // memory, when the kernel has one that can (LowerOptions::group_threads); null otherwise.
  const UOp* ChooseGroupRange();
  // Puts group_range_ among grid_ranges_ (where tinygrad numbers it, else last) and sets
  // group_stride_.
  void PlaceGroupRange();
  void PlaceGroupRangeLast();
  // The threads of group_range_'s groups (a constant).
  int64_t GroupSize() const { return static_cast<int64_t>(ConstIntValue(*group_range_->src(0))); }

  // ---- Emission -------------------------------------------------------------------------------

  int Emit(Instr instr);
  int EmitConst(const DType& dtype, Arg arg, const UOp* origin = nullptr);
  int IndexConst(int64_t v) { return EmitConst(DType::Of(Scalar::kIndex), Arg::I64(v)); }
  int Alu(Op op, const DType& dtype, std::vector<int> src, const UOp* origin = nullptr);

  // ---- Vectors ---------------------------------------------------------------------------------

  bool IsVector(int instr) const { return program_.instrs[instr].dtype.count > 1; }
  // A tensor core's fragment (VECTORIZE: kBuild, a CONST vector of zeros: kBuild of the
  // constant) or its instruction over three of them (WMMA: kWmma).
  absl::StatusOr<int> Fragment(const UOp* node);
  // Whether `node`'s value varies across the lanes of the vectorized range.
  bool IsVectorNode(const UOp* node);
  DType VectorOf(DType d) const;
  int Broadcast(int scalar);
  // Lane `lane` of a value (a scalar is the same in every lane).
  int Lane(int value, int lane);

  const int* Memo(const UOp* node) const;

  absl::Status OpenLoop(const UOp* range);

  void CloseLoop(const UOp* range);

  absl::Status Statement(const UOp* node);

  absl::Status AfterDeps(const UOp* after);

  // Emits, before the loops over `inner` open, each statement one of `afters` (the AFTERs of an
  // END's body) orders after that depends on the loops open now and on none of `inner`:
  // tinygrad places a statement in the loop of the innermost range it depends on (a matmul's
  // zeroing store before its K loop).
  absl::Status PlaceOuterDependencies(const std::vector<const UOp*>& afters,
                                      absl::Span<const UOp* const> inner);

  // The RANGEs `node` depends on that are not closed within it (by an END or REDUCE).
  const absl::flat_hash_set<const UOp*>& FreeRanges(const UOp* node);

  // Follows an AFTER chain to its DEFINE_GLOBAL or DEFINE_REG, emitting what each AFTER orders
  // the buffer after, innermost first: AFTER(AFTER(buf, a), b) means a, then b, then the access.
  absl::StatusOr<const UOp*> Buffer(const UOp* buffer);

  struct Access {
    int slot;
    int index;
    int valid = -1;           // -1: unconditional
    bool contiguous = false;  // lanes of the vectorized range are consecutive elements
    int array = -1;           // a register array's kRegDefine (slot is then -1)
  };

  // An access of a register array: a scalar index, unmasked and proven within the array.
  absl::StatusOr<Access> LowerRegisterAccess(const UOp* index_node, const UOp* array,
                                             const UOp* idx);

  // Splits WHERE(valid, idx, Invalid) (possibly nested) into the conditions and the index.
  absl::StatusOr<Access> LowerAccess(const UOp* index_node);
  // Widens what slot's accesses may touch (accessed_) to include `elements`.
  void RecordTouched(int slot, Interval elements);

  absl::Status Store(const UOp* store);

  absl::StatusOr<int> Load(const UOp* node, const UOp* index_node, const UOp* alt);

  // An ALU op whose operands may be vectors: scalars among them are broadcast.
  int VectorAlu(Op op, DType dtype, std::vector<int> src, const UOp* origin);

  // Emits, before the loops over `ranges` open, every REDUCE in `body` that does not depend on
  // them (x - max(x) inside a sum): computed once here instead of once per iteration. A REDUCE
  // ordered after a store in the body (through AFTER) depends on the body's ranges, so
  // hoisting never moves a read before the write it follows.
  absl::Status HoistReductions(const UOp* body, const std::vector<const UOp*>& ranges);

  // A reduction in progress: its accumulator, and what its loops are.
  struct PendingReduce {
    const UOp* node;
    int acc = -1;
    DType acc_type;
    bool over_lanes = false;  // reduces over the vectorized range: partial sums per lane
    bool group = false;       // closes the group range: combined across the group's threads
    std::vector<const UOp*> loops;
  };

  absl::StatusOr<PendingReduce> BeginReduce(const UOp* node);

  // One iteration's updates, inside the reduction's loops. An expanded reduction (core/codegen/
  // expand.h) folds its lanes in order: acc = ((acc op v0) op v1) ...
  absl::Status UpdateReduce(const PendingReduce& r);

  int FinishReduce(const PendingReduce& r);

  // A group reduction's partial result combined across its group: through shared memory and
  // a barrier, every thread of the group ends with the whole result.
  int CombineGroup(const PendingReduce& r, int partial);

  absl::StatusOr<int> Reduce(const UOp* node);

  // Computes `reduces` (in creation order), running those over the same loops in one loop nest
  // when none depends on another: the copies of a reduction an UPCAST wrote out then share
  // their loop, one accumulator each (a register tile), instead of one loop each. Each
  // accumulates in the same order as alone.
  absl::Status EmitReductions(std::vector<const UOp*> reduces);

  // The REDUCEs statements or values compute at their own level (not inside another REDUCE's
  // value) that can run here: every range they depend on is open. Each once, however many of
  // `roots` reach it.
  std::vector<const UOp*> ReductionsHere(absl::Span<const UOp* const> roots);

  // An integer value as INDEX: loop ends and buffer indices may be any integer type (a gather
  // indexes with loaded int32 values); the backends compute both in the index width.
  absl::StatusOr<int> IndexValue(const UOp* node);

  absl::StatusOr<int> Value(const UOp* node);

  const KernelAst& ast_;
  const LowerOptions& options_;
  LinearProgram program_;
  std::vector<const UOp*> topo_;
  bool has_after_ = false;  // most kernels order nothing: no END then searches its body
  ValueRanges ranges_;
  // Per buffer slot, the elements its accesses may touch (ProgramSpec's BufferParam::accessed).
  absl::flat_hash_map<int, Interval> accessed_;
  absl::flat_hash_map<const UOp*, int> var_index_;
  absl::flat_hash_map<const UOp*, int> registers_;  // DEFINE_REG -> its kRegDefine
  int core_id_var_ = 0;
  const UOp* parallel_range_ = nullptr;
  const UOp* vector_range_ = nullptr;  // its lanes are vector lanes; null: scalar code
  int width_ = 1;
  std::vector<const UOp*> grid_ranges_;  // GPU: outermost first
  const UOp* group_range_ = nullptr;     // GPU: the GROUP_REDUCE range in shared memory
  // with group_range_: how many threads apart a group's members are (the product of the block's
  // ranges numbered faster than it, as tinygrad numbers them), and a thread's place in its block
  int64_t group_stride_ = 1;
  int block_position_ = -1;
  int group_first_ = -1;       // with group_range_: the block position of its group's first member
  int group_store_mask_ = -1;  // with group_range_: stores happen when true
  // Values computed in each open scope (the kernel body, then one per open loop).
  std::vector<absl::flat_hash_map<const UOp*, int>> scopes_;
  absl::flat_hash_map<const UOp*, int> open_ranges_;
  absl::flat_hash_set<const UOp*> done_statements_;
  absl::flat_hash_map<const UOp*, absl::flat_hash_set<const UOp*>> free_ranges_;
};

}  // namespace uopd::lowering

#endif  // UOPD_CORE_CODEGEN_LOWERER_H_
