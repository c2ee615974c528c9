#include "core/codegen/lower.h"

#include <algorithm>
#include <map>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/codegen/access_bounds.h"
#include "core/codegen/vector_range.h"
#include "core/ir/printer.h"
#include "core/ir/value_range.h"
#include "core/util/status_macros.h"

namespace uopd {
namespace {

absl::Status NodeError(const UOp& node, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("lower: ", DescribeNode(node), ": ", what));
}

bool IsIdentityOf(Op op) { return op == Op::kAdd || op == Op::kMul || op == Op::kMax; }

// The identity of a reduction, as a CONST argument for `dtype`.
Arg ReduceIdentity(Op op, const DType& dtype) {
  Scalar s = dtype.scalar;
  if (op == Op::kAdd)
    return IsFloat(s) ? Arg::F64(0.0) : (s == Scalar::kBool ? Arg::Bool(false) : Arg::I64(0));
  if (op == Op::kMul)
    return IsFloat(s) ? Arg::F64(1.0) : (s == Scalar::kBool ? Arg::Bool(true) : Arg::I64(1));
  // MAX: the lowest value of the dtype.
  if (IsFloat(s)) return Arg::F64(-std::numeric_limits<double>::infinity());
  if (s == Scalar::kBool) return Arg::Bool(false);
  Interval range = DTypeRange(s);
  return Arg::I64(static_cast<int64_t>(range.min));
}

// Ranges opened together (by one END or REDUCE) run outermost-first in tinygrad's axis order:
// by type (LOOP, GLOBAL, LOCAL, ..., REDUCE), then by axis id, the memory order the scheduler
// numbers them in. A THREAD range goes outermost: it is the loop CPU threads split.
// A range the rewrites folded to its one value (RANGE(1) -> CONST 0) is no loop: skipped.
std::vector<const UOp*> SortedRanges(absl::Span<const UOp* const> ranges) {
  std::vector<const UOp*> sorted;
  for (const UOp* r : ranges) {
    if (r->op() == Op::kRange) sorted.push_back(r);
  }
  auto key = [](const UOp* r) {
    AxisType type = r->arg().axis_type;
    return std::make_pair(type == AxisType::kThread ? -10 : AxisPosition(type), &r->arg().axis);
  };
  std::stable_sort(sorted.begin(), sorted.end(), [&](const UOp* a, const UOp* b) {
    auto ka = key(a), kb = key(b);
    if (ka.first != kb.first) return ka.first < kb.first;
    return *ka.second < *kb.second;
  });
  return sorted;
}

class Lowerer {
 public:
  Lowerer(const KernelAst& ast, const LowerOptions& options) : ast_(ast), options_(options) {}

  absl::StatusOr<LinearProgram> Run(const std::string& name) {
    program_.name = name;
    topo_ = Toposort(ast_.root);
    if (options_.vector_range != nullptr) {
      const UOp* size = options_.vector_range->src(0);
      if (!size->IsConst() || ConstIntValue(*size) < 2) {
        return NodeError(*options_.vector_range, "a vectorized range needs a constant size > 1");
      }
      vector_range_ = options_.vector_range;
      width_ = static_cast<int>(ConstIntValue(*size));
    }
    UOPD_RETURN_IF_ERROR(CollectSignature());
    ChooseIndexWidth();
    if (options_.gpu_grid) {
      ChooseGridRanges();
    } else {
      ChooseParallelLoop();
    }
    scopes_.emplace_back();
    UOPD_RETURN_IF_ERROR(EmitGridIndex());
    for (const UOp* stmt : ast_.root->src()) {
      UOPD_RETURN_IF_ERROR(EmitReductions(ReductionsHere({stmt})));
      UOPD_RETURN_IF_ERROR(Statement(stmt));
    }
    return std::move(program_);
  }

 private:
  // ---- Signature: buffers, variables --------------------------------------------------------

  absl::Status CollectSignature() {
    std::map<int, BufferParam> buffers;
    std::map<std::string, const UOp*> vars;
    absl::flat_hash_set<int> stored;
    for (const UOp* node : topo_) {
      if (node->op() == Op::kDefineGlobal) {
        int slot = static_cast<int>(node->arg().i);
        buffers[slot] = BufferParam{slot, node->dtype().Base(), node->dtype().size};
      } else if (node->op() == Op::kDefineVar) {
        auto [it, inserted] = vars.emplace(node->arg().str, node);
        if (!inserted && (it->second->arg().var_min != node->arg().var_min ||
                          it->second->arg().var_max != node->arg().var_max)) {
          return NodeError(*node, absl::StrCat("variable '", node->arg().str,
                                               "' is declared again with other bounds"));
        }
      } else if (node->op() == Op::kStore) {
        stored.insert(SlotOf(node->src(0)->src(0)));
      }
    }
    // An element-typed INDEX is a load wherever it is used other than as a STORE's target.
    absl::flat_hash_set<const UOp*> load_uses;
    for (const UOp* node : topo_) {
      for (size_t i = 0; i < node->num_src(); ++i) {
        if (node->op() == Op::kStore && i == 0) continue;
        load_uses.insert(node->src(i));
      }
    }
    absl::flat_hash_set<int> loaded;
    for (const UOp* node : topo_) {
      bool is_load = (node->op() == Op::kIndex && !node->dtype().ptr && load_uses.contains(node)) ||
                     node->op() == Op::kLoad;
      if (!is_load) continue;
      const UOp* index = node->op() == Op::kLoad ? node->src(0) : node;
      loaded.insert(SlotOf(index->src(0)));
    }
    for (const auto& [slot, param] : buffers) {
      program_.globals.push_back(param);
      program_.buf_count = slot + 1;
      if (stored.contains(slot)) program_.outs.push_back(slot);
      if (loaded.contains(slot) && !stored.contains(slot)) program_.ins.push_back(slot);
    }
    for (const auto& [name, node] : vars) {
      var_index_[node] = static_cast<int>(program_.vars.size());
      program_.vars.push_back(VarInfo{name, node->arg().var_min, node->arg().var_max});
      program_.var_names.push_back(name);
    }
    // Equal-named variables share one runtime value.
    for (const UOp* node : topo_) {
      if (node->op() == Op::kDefineVar) var_index_[node] = var_index_.at(vars.at(node->arg().str));
    }
    if (!options_.gpu_grid) {
      core_id_var_ = static_cast<int>(program_.var_names.size());
      program_.var_names.push_back(kCoreIdVar);
      program_.var_names.push_back(kCoreCountVar);
    }
    return absl::OkStatus();
  }

  static int SlotOf(const UOp* buffer) {
    while (buffer->op() == Op::kAfter) buffer = buffer->src(0);
    return static_cast<int>(buffer->arg().i);
  }

  // int32 for INDEX when every index value, and every loop counter's increment, fits.
  void ChooseIndexWidth() {
    constexpr Int128 kLimit = (Int128{1} << 31) - 2;
    for (const UOp* node : topo_) {
      if (node->dtype().ptr || node->dtype().scalar != Scalar::kIndex || node->IsInvalid())
        continue;
      Interval r = ranges_.Get(node);
      if (r.min < -kLimit || r.max > kLimit) {
        program_.index_bits = 64;
        return;
      }
    }
    program_.index_bits = 32;
  }

  // Split the outermost loop across threads when the kernel is one parallel loop nest with
  // enough work. Only a kernel whose every statement sits inside that loop can be split:
  // anything outside it would run once per thread.
  void ChooseParallelLoop() {
    if (options_.min_parallel_work <= 0 || ast_.root->num_src() != 1) return;
    const UOp* end = ast_.root->src(0);
    if (end->op() != Op::kEnd) return;
    const std::vector<const UOp*> loops = SortedRanges(end->src().subspan(1));
    if (loops.empty()) return;
    const UOp* outer = loops.front();
    AxisType type = outer->arg().axis_type;
    if (type != AxisType::kLoop && type != AxisType::kGlobal && type != AxisType::kThread) return;
    // A THREAD range is the optimizer's choice of what threads split; otherwise the outermost
    // loop, when the kernel has enough work.
    Int128 work = 1;
    for (const UOp* node : topo_) {
      if (node->op() != Op::kRange) continue;
      work *= std::max<Int128>(1, ranges_.Get(node->src(0)).max);
      if (work >= options_.min_parallel_work) break;
    }
    if (type != AxisType::kThread && work < options_.min_parallel_work) return;
    Interval extent = ranges_.Get(outer->src(0));
    if (extent.max < 2) return;
    // core_id * chunk must not overflow the index width.
    if (program_.index_bits == 32 && extent.max > (Int128{1} << 29)) program_.index_bits = 64;
    program_.parallel = true;
    parallel_range_ = outer;
    const UOp* end_expr = outer->src(0);
    if (end_expr->IsConst()) {
      program_.parallel_extent.constant = static_cast<int64_t>(ConstIntValue(*end_expr));
    } else {
      program_.parallel_extent.expr = end_expr;
    }
  }

  // GPU: the leading parallel ranges of a kernel that is one loop nest become grid threads.
  void ChooseGridRanges() {
    if (ast_.root->num_src() != 1 || ast_.root->src(0)->op() != Op::kEnd) return;
    Int128 threads = 1;
    for (const UOp* range : SortedRanges(ast_.root->src(0)->src().subspan(1))) {
      AxisType type = range->arg().axis_type;
      if (type != AxisType::kLoop && type != AxisType::kGlobal) break;
      grid_ranges_.push_back(range);
      program_.grid_ends.push_back(range->src(0));
      threads *= std::max<Int128>(1, ranges_.Get(range->src(0)).max);
      if (threads > (Int128{1} << 62)) threads = Int128{1} << 62;
    }
    // The flattened index and its strides must fit the index width.
    if (threads >= (Int128{1} << 31)) program_.index_bits = 64;
  }

  // Opens the grid ranges: total = product of their ends; each range's value comes from the
  // thread index, innermost range fastest (adjacent threads touch adjacent elements).
  absl::Status EmitGridIndex() {
    if (grid_ranges_.empty()) return absl::OkStatus();
    const DType index = DType::Of(Scalar::kIndex);
    std::vector<int> ends;
    for (const UOp* range : grid_ranges_) {
      UOPD_ASSIGN_OR_RETURN(int end, IndexValue(range->src(0)));
      ends.push_back(end);
    }
    int total = ends[0];
    for (size_t i = 1; i < ends.size(); ++i) total = Alu(Op::kMul, index, {total, ends[i]});
    int rest = Emit(Instr{.kind = InstrKind::kGlobalIndex, .dtype = index, .src = {total}});
    for (size_t i = grid_ranges_.size(); i-- > 0;) {
      int value = i == 0 ? rest : Alu(Op::kMod, index, {rest, ends[i]}, grid_ranges_[i]);
      if (i > 0) rest = Alu(Op::kIdiv, index, {rest, ends[i]});
      open_ranges_[grid_ranges_[i]] = value;
    }
    return absl::OkStatus();
  }

  bool IsGridRange(const UOp* range) const {
    return std::find(grid_ranges_.begin(), grid_ranges_.end(), range) != grid_ranges_.end();
  }

  // ---- Emission -------------------------------------------------------------------------------

  int Emit(Instr instr) {
    program_.instrs.push_back(std::move(instr));
    return static_cast<int>(program_.instrs.size()) - 1;
  }
  int EmitConst(const DType& dtype, Arg arg, const UOp* origin = nullptr) {
    return Emit(
        Instr{.kind = InstrKind::kConst, .dtype = dtype, .arg = std::move(arg), .origin = origin});
  }
  int IndexConst(int64_t v) { return EmitConst(DType::Of(Scalar::kIndex), Arg::I64(v)); }
  int Alu(Op op, const DType& dtype, std::vector<int> src, const UOp* origin = nullptr) {
    return Emit(Instr{.kind = InstrKind::kAlu,
                      .op = op,
                      .dtype = dtype,
                      .src = std::move(src),
                      .origin = origin});
  }

  // ---- Vectors ---------------------------------------------------------------------------------

  bool IsVector(int instr) const { return program_.instrs[instr].dtype.count > 1; }
  // Whether `node`'s value varies across the lanes of the vectorized range.
  bool IsVectorNode(const UOp* node) {
    return vector_range_ != nullptr && FreeRanges(node).contains(vector_range_);
  }
  DType VectorOf(DType d) const {
    d.count = width_;
    return d;
  }
  int Broadcast(int scalar) {
    if (IsVector(scalar)) return scalar;
    return Emit(Instr{.kind = InstrKind::kBroadcast,
                      .dtype = VectorOf(program_.instrs[scalar].dtype),
                      .src = {scalar}});
  }
  // Lane `lane` of a value (a scalar is the same in every lane).
  int Lane(int value, int lane) {
    if (value < 0 || !IsVector(value)) return value;
    DType d = program_.instrs[value].dtype;
    d.count = 1;
    return Emit(Instr{.kind = InstrKind::kExtract, .dtype = d, .src = {value}, .lane = lane});
  }

  const int* Memo(const UOp* node) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      if (auto found = it->find(node); found != it->end()) return &found->second;
    }
    return nullptr;
  }

  absl::Status OpenLoop(const UOp* range) {
    if (open_ranges_.contains(range)) return NodeError(*range, "RANGE is already open here");
    UOPD_ASSIGN_OR_RETURN(int end, IndexValue(range->src(0)));
    int start;
    if (range == parallel_range_) {
      // [core_id * chunk, min(start + chunk, end)) with chunk = ceil(end / core_count).
      const DType index = DType::Of(Scalar::kIndex);
      int core_id = Emit(Instr{.kind = InstrKind::kVar, .dtype = index, .var = core_id_var_});
      int cores = Emit(Instr{.kind = InstrKind::kVar, .dtype = index, .var = core_id_var_ + 1});
      int chunk =
          Alu(Op::kIdiv, index,
              {Alu(Op::kSub, index, {Alu(Op::kAdd, index, {end, cores}), IndexConst(1)}), cores});
      start = Alu(Op::kMul, index, {core_id, chunk});
      int stop = Alu(Op::kAdd, index, {start, chunk});
      int stop_lt_end = Alu(Op::kCmplt, DType::Of(Scalar::kBool), {stop, end});
      end = Alu(Op::kWhere, index, {stop_lt_end, stop, end});
    } else {
      start = IndexConst(0);
    }
    int loop = Emit(Instr{.kind = InstrKind::kLoopBegin,
                          .dtype = DType::Of(Scalar::kIndex),
                          .src = {start, end},
                          .origin = range});
    open_ranges_[range] = loop;
    scopes_.emplace_back();
    return absl::OkStatus();
  }

  void CloseLoop(const UOp* range) {
    Emit(Instr{.kind = InstrKind::kLoopEnd, .src = {open_ranges_.at(range)}, .origin = range});
    open_ranges_.erase(range);
    scopes_.pop_back();
  }

  absl::Status Statement(const UOp* node) {
    if (done_statements_.contains(node)) return absl::OkStatus();
    switch (node->op()) {
      case Op::kStore:
        UOPD_RETURN_IF_ERROR(Store(node));
        break;
      case Op::kEnd: {
        std::vector<const UOp*> ranges;
        for (const UOp* range : SortedRanges(node->src().subspan(1))) {
          // Grid ranges are open already; the vectorized range is the lanes, not a loop.
          if (!IsGridRange(range) && range != vector_range_) ranges.push_back(range);
        }
        UOPD_RETURN_IF_ERROR(HoistReductions(node->src(0), ranges));
        for (const UOp* range : ranges) UOPD_RETURN_IF_ERROR(OpenLoop(range));
        UOPD_RETURN_IF_ERROR(EmitReductions(ReductionsHere({node->src(0)})));
        UOPD_RETURN_IF_ERROR(Statement(node->src(0)));
        for (auto it = ranges.rbegin(); it != ranges.rend(); ++it) CloseLoop(*it);
        break;
      }
      case Op::kGroup:
        for (const UOp* src : node->src()) UOPD_RETURN_IF_ERROR(Statement(src));
        break;
      case Op::kAfter: {
        UOPD_ASSIGN_OR_RETURN(int slot, Buffer(node));
        (void)slot;  // as a statement, an AFTER only orders what it depends on
        break;
      }
      default:
        return NodeError(*node, "is not a statement");
    }
    done_statements_.insert(node);
    return absl::OkStatus();
  }

  absl::Status AfterDeps(const UOp* after) {
    for (size_t i = 1; i < after->num_src(); ++i) {
      const UOp* dep = after->src(i);
      if (dep->op() == Op::kRange) {
        if (!open_ranges_.contains(dep)) {
          return NodeError(*after, absl::StrCat("depends on RANGE %", dep->id(),
                                                " outside the loop of that range"));
        }
        continue;
      }
      if (IsAlu(dep->op())) {
        // An index expression over ranges (a RANGE the optimizer split, k = k_hi * c + k_lo):
        // ordered after the current iteration of the ranges it uses, as a RANGE is.
        for (const UOp* range : FreeRanges(dep)) {
          if (!open_ranges_.contains(range)) {
            return NodeError(*after, absl::StrCat("depends on RANGE %", range->id(),
                                                  " outside the loop of that range"));
          }
        }
        continue;
      }
      if (!done_statements_.contains(dep)) {
        // The dependency runs here, once per iteration of every open loop: only correct when
        // it depends on each of those loops itself.
        const auto& free = FreeRanges(dep);
        for (const auto& [range, loop] : open_ranges_) {
          if (!free.contains(range)) {
            return absl::UnimplementedError(absl::StrCat(
                "lower: ", DescribeNode(*dep), " is ordered by ", DescribeNode(*after),
                " inside the loop of RANGE %", range->id(), ", which it does not depend on"));
          }
        }
      }
      UOPD_RETURN_IF_ERROR(Statement(dep));
    }
    return absl::OkStatus();
  }

  // The RANGEs `node` depends on that are not closed within it (by an END or REDUCE).
  const absl::flat_hash_set<const UOp*>& FreeRanges(const UOp* node) {
    if (auto it = free_ranges_.find(node); it != free_ranges_.end()) return it->second;
    for (const UOp* n : Toposort(node)) {
      if (free_ranges_.contains(n)) continue;
      absl::flat_hash_set<const UOp*> free;
      size_t first_closed = n->num_src();
      if (n->op() == Op::kEnd || n->op() == Op::kReduce) first_closed = 1;
      for (size_t i = 0; i < n->num_src(); ++i) {
        const auto& src_free = free_ranges_.at(n->src(i));
        free.insert(src_free.begin(), src_free.end());
      }
      if (n->op() == Op::kRange) free.insert(n);
      for (size_t i = first_closed; i < n->num_src(); ++i) {
        // A closed range leaves, but what its end depends on stays.
        free.erase(n->src(i));
      }
      free_ranges_.emplace(n, std::move(free));
    }
    return free_ranges_.at(node);
  }

  // Follows an AFTER chain to its DEFINE_GLOBAL, emitting what each AFTER orders the buffer
  // after, innermost first: AFTER(AFTER(buf, a), b) means a, then b, then the access.
  absl::StatusOr<int> Buffer(const UOp* buffer) {
    std::vector<const UOp*> chain;
    while (buffer->op() == Op::kAfter) {
      chain.push_back(buffer);
      buffer = buffer->src(0);
    }
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) UOPD_RETURN_IF_ERROR(AfterDeps(*it));
    if (buffer->op() != Op::kDefineGlobal) return NodeError(*buffer, "is not a buffer");
    return static_cast<int>(buffer->arg().i);
  }

  struct Access {
    int slot;
    int index;
    int valid = -1;           // -1: unconditional
    bool contiguous = false;  // lanes of the vectorized range are consecutive elements
  };

  // Splits WHERE(valid, idx, Invalid) (possibly nested) into the conditions and the index.
  absl::StatusOr<Access> LowerAccess(const UOp* index_node) {
    UOPD_ASSIGN_OR_RETURN(int slot, Buffer(index_node->src(0)));
    const UOp* idx = index_node->src(1);
    std::vector<const UOp*> conditions;
    while (idx->op() == Op::kWhere && idx->src(2)->IsInvalid()) {
      conditions.push_back(idx->src(0));
      idx = idx->src(1);
    }
    // A load inside the index (a gather: src[idx[i]]) guards its own access: not searched.
    std::vector<const UOp*> stack = {idx};
    absl::flat_hash_set<const UOp*> seen = {idx};
    while (!stack.empty()) {
      const UOp* node = stack.back();
      stack.pop_back();
      if (node->IsInvalid()) {
        return NodeError(*index_node, "Invalid appears outside a WHERE(valid, idx, Invalid) guard");
      }
      if (node->op() == Op::kIndex) continue;
      for (const UOp* s : node->src()) {
        if (seen.insert(s).second) stack.push_back(s);
      }
    }
    Access access{slot, 0};
    UOPD_ASSIGN_OR_RETURN(access.index, IndexValue(idx));
    for (const UOp* cond : conditions) {
      UOPD_ASSIGN_OR_RETURN(int c, Value(cond));
      access.valid =
          access.valid < 0 ? c : Alu(Op::kAnd, DType::Of(Scalar::kBool), {access.valid, c});
    }
    access.contiguous = vector_range_ != nullptr && AffineCoefficient(idx, vector_range_) == 1;
    const BufferParam* param = &program_.Global(slot);
    if (ProveInBounds(idx, conditions, param->size, ranges_)) {
      ++program_.proven_accesses;
    } else {
      ++program_.guarded_accesses;
      // Checked lane by lane when the access is a vector one.
      const bool vector = IsVector(access.index) || (access.valid >= 0 && IsVector(access.valid));
      for (int lane = 0; lane < (vector ? width_ : 1); ++lane) {
        std::vector<int> src = {vector ? Lane(access.index, lane) : access.index};
        if (access.valid >= 0) src.push_back(vector ? Lane(access.valid, lane) : access.valid);
        Emit(Instr{.kind = InstrKind::kCheckBounds,
                   .src = std::move(src),
                   .slot = slot,
                   .size = param->size,
                   .origin = index_node});
      }
    }
    return access;
  }

  absl::Status Store(const UOp* store) {
    UOPD_ASSIGN_OR_RETURN(Access access, LowerAccess(store->src(0)));
    UOPD_ASSIGN_OR_RETURN(int value, Value(store->src(1)));
    const bool vector =
        IsVector(access.index) || IsVector(value) || (access.valid >= 0 && IsVector(access.valid));
    if (vector && access.contiguous && IsVector(access.index)) {
      // One vector store from lane 0's element.
      std::vector<int> src = {Lane(access.index, 0), Broadcast(value)};
      if (access.valid >= 0) src.push_back(access.valid);
      Emit(Instr{.kind = InstrKind::kStore,
                 .dtype = program_.instrs[src[1]].dtype,
                 .src = std::move(src),
                 .slot = access.slot,
                 .origin = store});
      return absl::OkStatus();
    }
    // Lane by lane, in lane order (a later lane's store to the same element wins).
    for (int lane = 0; lane < (vector ? width_ : 1); ++lane) {
      std::vector<int> src = {Lane(access.index, lane), Lane(value, lane)};
      if (access.valid >= 0) src.push_back(Lane(access.valid, lane));
      Emit(Instr{.kind = InstrKind::kStore,
                 .dtype = store->src(1)->dtype(),
                 .src = std::move(src),
                 .slot = access.slot,
                 .origin = store});
    }
    return absl::OkStatus();
  }

  absl::StatusOr<int> Load(const UOp* node, const UOp* index_node, const UOp* alt) {
    UOPD_ASSIGN_OR_RETURN(Access access, LowerAccess(index_node));
    const bool vector = IsVector(access.index) || (access.valid >= 0 && IsVector(access.valid));
    int loaded;
    if (!vector) {
      std::vector<int> src = {access.index};
      if (access.valid >= 0) src.push_back(access.valid);
      loaded = Emit(Instr{.kind = InstrKind::kLoad,
                          .dtype = node->dtype(),
                          .src = std::move(src),
                          .slot = access.slot,
                          .origin = node});
    } else if (access.contiguous && IsVector(access.index)) {
      // One vector load from lane 0's element.
      std::vector<int> src = {Lane(access.index, 0)};
      if (access.valid >= 0) src.push_back(access.valid);
      loaded = Emit(Instr{.kind = InstrKind::kLoad,
                          .dtype = VectorOf(node->dtype()),
                          .src = std::move(src),
                          .slot = access.slot,
                          .origin = node});
    } else {
      // A gather: one load per lane.
      std::vector<int> lanes;
      for (int lane = 0; lane < width_; ++lane) {
        std::vector<int> src = {Lane(access.index, lane)};
        if (access.valid >= 0) src.push_back(Lane(access.valid, lane));
        lanes.push_back(Emit(Instr{.kind = InstrKind::kLoad,
                                   .dtype = node->dtype(),
                                   .src = std::move(src),
                                   .slot = access.slot,
                                   .origin = node}));
      }
      loaded = Emit(Instr{.kind = InstrKind::kBuild,
                          .dtype = VectorOf(node->dtype()),
                          .src = std::move(lanes),
                          .origin = node});
    }
    if (alt != nullptr && access.valid >= 0) {
      UOPD_ASSIGN_OR_RETURN(int alt_value, Value(alt));
      return VectorAlu(Op::kWhere, node->dtype(), {access.valid, loaded, alt_value}, node);
    }
    return loaded;
  }

  // An ALU op whose operands may be vectors: scalars among them are broadcast.
  int VectorAlu(Op op, DType dtype, std::vector<int> src, const UOp* origin) {
    const bool vector = std::any_of(src.begin(), src.end(), [&](int s) { return IsVector(s); });
    if (vector) {
      for (int& s : src) s = Broadcast(s);
      dtype = VectorOf(dtype);
    }
    return Alu(op, dtype, std::move(src), origin);
  }

  // Emits, before the loops over `ranges` open, every REDUCE in `body` that does not depend on
  // them (x - max(x) inside a sum): computed once here instead of once per iteration. A REDUCE
  // ordered after a store in the body (through AFTER) depends on the body's ranges, so
  // hoisting never moves a read before the write it follows.
  absl::Status HoistReductions(const UOp* body, const std::vector<const UOp*>& ranges) {
    std::vector<const UOp*> stack = {body};
    absl::flat_hash_set<const UOp*> seen = {body};
    std::vector<const UOp*> hoist;
    while (!stack.empty()) {
      const UOp* node = stack.back();
      stack.pop_back();
      if (node->op() == Op::kReduce && !Memo(node)) {
        const auto& free = FreeRanges(node);
        bool independent = std::none_of(ranges.begin(), ranges.end(),
                                        [&](const UOp* r) { return free.contains(r); });
        bool computable = std::all_of(free.begin(), free.end(),
                                      [&](const UOp* r) { return open_ranges_.contains(r); });
        if (independent && computable) {
          hoist.push_back(node);
          continue;  // its own body is handled when it is emitted
        }
      }
      for (const UOp* src : node->src()) {
        if (seen.insert(src).second) stack.push_back(src);
      }
    }
    // Memoized in the current scope for the loops about to open.
    return EmitReductions(std::move(hoist));
  }

  // A reduction in progress: its accumulator, and what its loops are.
  struct PendingReduce {
    const UOp* node;
    int acc = -1;
    DType acc_type;
    bool over_lanes = false;  // reduces over the vectorized range: partial sums per lane
    std::vector<const UOp*> loops;
  };

  absl::StatusOr<PendingReduce> BeginReduce(const UOp* node) {
    Op op = node->arg().reduce_op;
    if (!IsIdentityOf(op)) return NodeError(*node, "unsupported reduction");
    PendingReduce r{node};
    const auto closed = node->src().subspan(1);
    r.over_lanes = vector_range_ != nullptr &&
                   std::find(closed.begin(), closed.end(), vector_range_) != closed.end();
    const bool vector_acc = r.over_lanes || IsVectorNode(node);
    int identity = EmitConst(node->dtype(), ReduceIdentity(op, node->dtype()), node);
    if (vector_acc) identity = Broadcast(identity);
    r.acc_type = vector_acc ? VectorOf(node->dtype()) : node->dtype();
    r.acc = Emit(Instr{
        .kind = InstrKind::kAccDefine, .dtype = r.acc_type, .src = {identity}, .origin = node});
    for (const UOp* range : SortedRanges(closed)) {
      if (range != vector_range_) r.loops.push_back(range);
    }
    return r;
  }

  // One iteration's updates, inside the reduction's loops. An expanded reduction (core/codegen/
  // expand.h) folds its lanes in order: acc = ((acc op v0) op v1) ...
  absl::Status UpdateReduce(const PendingReduce& r) {
    const UOp* value_node = r.node->src(0);
    std::vector<const UOp*> lanes = {value_node};
    if (value_node->op() == Op::kContract) {
      lanes.assign(value_node->src().begin(), value_node->src().end());
    }
    for (const UOp* lane : lanes) {
      UOPD_ASSIGN_OR_RETURN(int value, Value(lane));
      if (r.acc_type.count > 1) value = Broadcast(value);
      Emit(Instr{.kind = InstrKind::kAccUpdate,
                 .op = r.node->arg().reduce_op,
                 .dtype = r.acc_type,
                 .src = {r.acc, value},
                 .origin = r.node});
    }
    return absl::OkStatus();
  }

  int FinishReduce(const PendingReduce& r) {
    int result = Emit(
        Instr{.kind = InstrKind::kAccRead, .dtype = r.acc_type, .src = {r.acc}, .origin = r.node});
    if (r.over_lanes) {
      result = Emit(Instr{.kind = InstrKind::kHReduce,
                          .op = r.node->arg().reduce_op,
                          .dtype = r.node->dtype(),
                          .src = {result},
                          .origin = r.node});
    }
    return result;
  }

  absl::StatusOr<int> Reduce(const UOp* node) {
    UOPD_ASSIGN_OR_RETURN(PendingReduce r, BeginReduce(node));
    UOPD_RETURN_IF_ERROR(HoistReductions(node->src(0), r.loops));
    for (const UOp* range : r.loops) UOPD_RETURN_IF_ERROR(OpenLoop(range));
    // Reductions inside this one's loops (a window position's sum over channels) that every
    // iteration needs: computed together, one loop nest for all, as an END's reductions are.
    UOPD_RETURN_IF_ERROR(EmitReductions(ReductionsHere({node->src(0)})));
    UOPD_RETURN_IF_ERROR(UpdateReduce(r));
    for (auto it = r.loops.rbegin(); it != r.loops.rend(); ++it) CloseLoop(*it);
    return FinishReduce(r);
  }

  // Computes `reduces` (in creation order), running those over the same loops in one loop nest
  // when none depends on another: the copies of a reduction an UPCAST wrote out then share
  // their loop, one accumulator each (a register tile), instead of one loop each. Each
  // accumulates in the same order as alone.
  absl::Status EmitReductions(std::vector<const UOp*> reduces) {
    std::sort(reduces.begin(), reduces.end(),
              [](const UOp* a, const UOp* b) { return a->id() < b->id(); });
    std::vector<std::vector<const UOp*>> groups;
    for (const UOp* r : reduces) {
      if (Memo(r) != nullptr) continue;
      std::vector<const UOp*> loops;
      for (const UOp* range : SortedRanges(r->src().subspan(1))) {
        if (range != vector_range_) loops.push_back(range);
      }
      bool placed = false;
      for (auto& group : groups) {
        const UOp* first = group.front();
        std::vector<const UOp*> group_loops;
        for (const UOp* range : SortedRanges(first->src().subspan(1))) {
          if (range != vector_range_) group_loops.push_back(range);
        }
        if (group_loops != loops || loops.empty()) continue;
        // Not if it reads another member's result (softmax's sum of exp(x - max)).
        absl::flat_hash_set<const UOp*> inputs;
        for (const UOp* n : Toposort(r->src(0))) inputs.insert(n);
        if (std::any_of(group.begin(), group.end(),
                        [&](const UOp* m) { return inputs.contains(m); })) {
          continue;
        }
        group.push_back(r);
        placed = true;
        break;
      }
      if (!placed) groups.push_back({r});
    }
    for (const auto& group : groups) {
      if (group.size() == 1) {
        UOPD_ASSIGN_OR_RETURN(int value, Value(group.front()));
        (void)value;  // memoized in the current scope
        continue;
      }
      std::vector<PendingReduce> pending;
      for (const UOp* r : group) {
        UOPD_ASSIGN_OR_RETURN(PendingReduce p, BeginReduce(r));
        pending.push_back(std::move(p));
      }
      for (const PendingReduce& p : pending) {
        UOPD_RETURN_IF_ERROR(HoistReductions(p.node->src(0), p.loops));
      }
      for (const UOp* range : pending.front().loops) UOPD_RETURN_IF_ERROR(OpenLoop(range));
      std::vector<const UOp*> bodies;
      for (const PendingReduce& p : pending) bodies.push_back(p.node->src(0));
      UOPD_RETURN_IF_ERROR(EmitReductions(ReductionsHere(bodies)));
      for (const PendingReduce& p : pending) UOPD_RETURN_IF_ERROR(UpdateReduce(p));
      for (auto it = pending.front().loops.rbegin(); it != pending.front().loops.rend(); ++it) {
        CloseLoop(*it);
      }
      for (const PendingReduce& p : pending) scopes_.back()[p.node] = FinishReduce(p);
    }
    return absl::OkStatus();
  }

  // The REDUCEs statements or values compute at their own level (not inside another REDUCE's
  // value) that can run here: every range they depend on is open. Each once, however many of
  // `roots` reach it.
  std::vector<const UOp*> ReductionsHere(absl::Span<const UOp* const> roots) {
    std::vector<const UOp*> found;
    std::vector<const UOp*> stack(roots.begin(), roots.end());
    absl::flat_hash_set<const UOp*> seen(roots.begin(), roots.end());
    while (!stack.empty()) {
      const UOp* node = stack.back();
      stack.pop_back();
      if (node->op() == Op::kReduce) {
        const auto& free = FreeRanges(node);
        if (!Memo(node) && std::all_of(free.begin(), free.end(), [&](const UOp* r) {
              return open_ranges_.contains(r) || r == vector_range_;
            })) {
          found.push_back(node);
        }
        continue;
      }
      for (const UOp* src : node->src()) {
        if (seen.insert(src).second) stack.push_back(src);
      }
    }
    return found;
  }

  // An integer value as INDEX: loop ends and buffer indices may be any integer type (a gather
  // indexes with loaded int32 values); the backends compute both in the index width.
  absl::StatusOr<int> IndexValue(const UOp* node) {
    UOPD_ASSIGN_OR_RETURN(int value, Value(node));
    if (node->dtype().scalar == Scalar::kIndex) return value;
    return Emit(Instr{.kind = InstrKind::kCast,
                      .dtype = DType::Of(Scalar::kIndex),
                      .src = {value},
                      .origin = node});
  }

  absl::StatusOr<int> Value(const UOp* node) {
    if (const int* memo = Memo(node)) return *memo;
    int result;
    switch (node->op()) {
      case Op::kConst:
        if (node->IsInvalid()) return NodeError(*node, "Invalid used as a value");
        result = EmitConst(node->dtype(), node->arg(), node);
        break;
      case Op::kDefineVar:
        result = Emit(Instr{.kind = InstrKind::kVar,
                            .dtype = node->dtype(),
                            .var = var_index_.at(node),
                            .origin = node});
        break;
      case Op::kRange: {
        if (node == vector_range_) {
          Arg lanes = Arg::I64(0);
          for (int lane = 0; lane < width_; ++lane) lanes.ints.push_back(lane);
          result = EmitConst(VectorOf(node->dtype()), std::move(lanes), node);
          break;
        }
        auto it = open_ranges_.find(node);
        if (it == open_ranges_.end()) {
          return NodeError(*node, "RANGE is used outside the END or REDUCE that closes it");
        }
        return it->second;
      }
      case Op::kIndex: {
        if (node->dtype().ptr) return NodeError(*node, "a pointer INDEX is used as a value");
        UOPD_ASSIGN_OR_RETURN(result, Load(node, node, nullptr));
        break;
      }
      case Op::kLoad: {
        const UOp* alt = node->num_src() > 1 ? node->src(1) : nullptr;
        UOPD_ASSIGN_OR_RETURN(result, Load(node, node->src(0), alt));
        break;
      }
      case Op::kReduce: {
        UOPD_ASSIGN_OR_RETURN(result, Reduce(node));
        break;
      }
      case Op::kCast:
      case Op::kBitcast: {
        UOPD_ASSIGN_OR_RETURN(int src, Value(node->src(0)));
        result =
            Emit(Instr{.kind = node->op() == Op::kCast ? InstrKind::kCast : InstrKind::kBitcast,
                       .dtype = IsVector(src) ? VectorOf(node->dtype()) : node->dtype(),
                       .src = {src},
                       .origin = node});
        break;
      }
      default: {
        if (!IsAlu(node->op())) return NodeError(*node, "cannot be used as a value");
        std::vector<int> src;
        for (const UOp* s : node->src()) {
          UOPD_ASSIGN_OR_RETURN(int v, Value(s));
          src.push_back(v);
        }
        result = VectorAlu(node->op(), node->dtype(), std::move(src), node);
        break;
      }
    }
    scopes_.back()[node] = result;
    return result;
  }

  const KernelAst& ast_;
  const LowerOptions& options_;
  LinearProgram program_;
  std::vector<const UOp*> topo_;
  ValueRanges ranges_;
  absl::flat_hash_map<const UOp*, int> var_index_;
  int core_id_var_ = 0;
  const UOp* parallel_range_ = nullptr;
  const UOp* vector_range_ = nullptr;  // its lanes are vector lanes; null: scalar code
  int width_ = 1;
  std::vector<const UOp*> grid_ranges_;  // GPU: outermost first
  // Values computed in each open scope (the kernel body, then one per open loop).
  std::vector<absl::flat_hash_map<const UOp*, int>> scopes_;
  absl::flat_hash_map<const UOp*, int> open_ranges_;
  absl::flat_hash_set<const UOp*> done_statements_;
  absl::flat_hash_map<const UOp*, absl::flat_hash_set<const UOp*>> free_ranges_;
};

}  // namespace

absl::StatusOr<LinearProgram> LowerKernel(const KernelAst& ast, const std::string& name,
                                          const LowerOptions& options) {
  auto program = Lowerer(ast, options).Run(name);
  if (!program.ok()) {
    return WithContext(program.status(), absl::StrCat("while lowering kernel ", name));
  }
  return program;
}

}  // namespace uopd
