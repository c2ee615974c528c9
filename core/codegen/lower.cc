#include "core/codegen/lower.h"

#include <algorithm>
#include <limits>
#include <map>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/codegen/access_bounds.h"
#include "core/codegen/lowerer.h"
#include "core/codegen/vector_range.h"
#include "core/codegen/warp_reduction.h"
#include "core/ir/printer.h"
#include "core/ir/value_range.h"
#include "core/ir/verify.h"
#include "core/util/status_macros.h"

namespace uopd::lowering {

absl::Status NodeError(const UOp& node, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("lower: ", DescribeNode(node), ": ", what));
}

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

absl::StatusOr<LinearProgram> Lowerer::Run(const std::string& name) {
  program_.name = name;
  topo_ = Toposort(ast_.root);
  has_after_ = std::any_of(topo_.begin(), topo_.end(),
                           [](const UOp* node) { return node->op() == Op::kAfter; });
  if (options_.vector_range != nullptr) {
    const UOp* size = options_.vector_range->src(0);
    if (!size->IsConst() || ConstIntValue(*size) < 2) {
      return NodeError(*options_.vector_range, "a vectorized range needs a constant size > 1");
    }
    vector_range_ = options_.vector_range;
    width_ = static_cast<int>(ConstIntValue(*size));
  }
  UOPD_RETURN_IF_ERROR(CollectSignature());
  UOPD_RETURN_IF_ERROR(CheckRangesFitTheirDTypes());
  ChooseIndexWidth();
  if (options_.gpu_grid) {
    ChooseGridRanges();
  } else {
    ChooseParallelLoop();
  }
  scopes_.emplace_back();
  // Before the grid index: a grid range's end may read a register array.
  UOPD_RETURN_IF_ERROR(DefineRegisters());
  UOPD_RETURN_IF_ERROR(EmitGridIndex());
  for (const UOp* stmt : ast_.root->src()) {
    UOPD_RETURN_IF_ERROR(EmitReductions(ReductionsHere({stmt})));
    UOPD_RETURN_IF_ERROR(Statement(stmt));
  }
  for (BufferParam& param : program_.globals) {
    const auto it = accessed_.find(param.slot);
    param.accessed = it == accessed_.end() ? ElementRange{0, 0}
                                           : ElementRange{static_cast<int64_t>(it->second.min),
                                                          static_cast<int64_t>(it->second.max) + 1};
  }
  return std::move(program_);
}

absl::Status Lowerer::CheckRangesFitTheirDTypes() {
  for (const UOp* node : topo_) {
    if (node->op() != Op::kRange || node->dtype().scalar == Scalar::kIndex) continue;
    // The counter runs to end - 1 as an INDEX; the RANGE's value is it in its own dtype, which
    // must hold it. Value ranges take a RANGE for [0, end - 1] in its dtype, and a uint8 range
    // to 1000 was taken for [0, 255] while its loop ran on (an access proven within 256
    // elements wrote 744 past them: a review helper's finding).
    const Int128 last = ranges_.Get(node->src(0)).max - 1;
    if (last > DTypeRange(node->dtype().scalar).max) {
      return NodeError(*node, absl::StrCat("a RANGE of dtype ", DTypeToString(node->dtype()),
                                           " cannot count to ", static_cast<int64_t>(last),
                                           ", its end's largest value less 1"));
    }
  }
  return absl::OkStatus();
}

absl::Status Lowerer::CollectSignature() {
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
                        it->second->arg().var_max != node->arg().var_max ||
                        it->second->arg().var_multiple != node->arg().var_multiple)) {
        return NodeError(*node, absl::StrCat("variable '", node->arg().str,
                                             "' is declared again with other bounds"));
      }
    } else if (node->op() == Op::kStore &&
               BaseBuffer(node->src(0)->src(0))->op() == Op::kDefineGlobal) {
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
    if (BaseBuffer(index->src(0))->op() == Op::kDefineGlobal) loaded.insert(SlotOf(index->src(0)));
  }
  for (const auto& [slot, param] : buffers) {
    program_.globals.push_back(param);
    program_.buf_count = slot + 1;
    if (stored.contains(slot)) program_.outs.push_back(slot);
    if (loaded.contains(slot) && !stored.contains(slot)) program_.ins.push_back(slot);
  }
  for (const auto& [name, node] : vars) {
    var_index_[node] = static_cast<int>(program_.vars.size());
    program_.vars.push_back(
        VarInfo{name, node->arg().var_min, node->arg().var_max, node->arg().var_multiple});
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

int Lowerer::SlotOf(const UOp* buffer) { return static_cast<int>(BaseBuffer(buffer)->arg().i); }

const UOp* Lowerer::BaseBuffer(const UOp* buffer) {
  while (buffer->op() == Op::kAfter) buffer = buffer->src(0);
  return buffer;
}

absl::Status Lowerer::DefineRegisters() {
  int64_t bytes = 0;
  for (const UOp* node : topo_) {
    if (node->op() != Op::kDefineReg) continue;
    bytes += node->dtype().size * std::max(1, ScalarItemSize(node->dtype().scalar));
    if (bytes > kMaxRegisterBytes) {
      return NodeError(*node, absl::StrCat("the kernel's register arrays take more than ",
                                           kMaxRegisterBytes, " bytes together"));
    }
    if (program_.group_threads > 0) {
      return absl::UnimplementedError(
          absl::StrCat("lower: ", DescribeNode(*node),
                       ": register arrays in a kernel whose threads share a GROUP reduction"));
    }
    registers_[node] = Emit(Instr{.kind = InstrKind::kRegDefine,
                                  .dtype = node->dtype().Base(),
                                  .size = node->dtype().size,
                                  .origin = node});
  }
  return absl::OkStatus();
}

bool Lowerer::IsGridRange(const UOp* range) const {
  return std::find(grid_ranges_.begin(), grid_ranges_.end(), range) != grid_ranges_.end();
}

int Lowerer::Emit(Instr instr) {
  program_.instrs.push_back(std::move(instr));
  return static_cast<int>(program_.instrs.size()) - 1;
}

int Lowerer::EmitConst(const DType& dtype, Arg arg, const UOp* origin) {
  return Emit(
      Instr{.kind = InstrKind::kConst, .dtype = dtype, .arg = std::move(arg), .origin = origin});
}

int Lowerer::Alu(Op op, const DType& dtype, std::vector<int> src, const UOp* origin) {
  return Emit(Instr{
      .kind = InstrKind::kAlu, .op = op, .dtype = dtype, .src = std::move(src), .origin = origin});
}

bool Lowerer::IsVectorNode(const UOp* node) {
  return vector_range_ != nullptr && FreeRanges(node).contains(vector_range_);
}

DType Lowerer::VectorOf(DType d) const {
  d.count = width_;
  return d;
}

int Lowerer::Broadcast(int scalar) {
  if (IsVector(scalar)) return scalar;
  return Emit(Instr{.kind = InstrKind::kBroadcast,
                    .dtype = VectorOf(program_.instrs[scalar].dtype),
                    .src = {scalar}});
}

int Lowerer::Lane(int value, int lane) {
  if (value < 0 || !IsVector(value)) return value;
  DType d = program_.instrs[value].dtype;
  d.count = 1;
  return Emit(Instr{.kind = InstrKind::kExtract, .dtype = d, .src = {value}, .lane = lane});
}

const int* Lowerer::Memo(const UOp* node) const {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    if (auto found = it->find(node); found != it->end()) return &found->second;
  }
  return nullptr;
}

absl::Status Lowerer::Statement(const UOp* node) {
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
      std::vector<const UOp*> afters;  // found once: an END may have many ranges
      if (!ranges.empty() && has_after_) {
        for (const UOp* n : Toposort(node->src(0))) {
          if (n->op() == Op::kAfter) afters.push_back(n);
        }
      }
      for (size_t r = 0; r < ranges.size(); ++r) {
        UOPD_RETURN_IF_ERROR(
            PlaceOuterDependencies(afters, absl::MakeConstSpan(ranges).subspan(r)));
        UOPD_RETURN_IF_ERROR(OpenLoop(ranges[r]));
      }
      UOPD_RETURN_IF_ERROR(EmitReductions(ReductionsHere({node->src(0)})));
      UOPD_RETURN_IF_ERROR(Statement(node->src(0)));
      for (auto it = ranges.rbegin(); it != ranges.rend(); ++it) CloseLoop(*it);
      break;
    }
    case Op::kGroup:
      for (const UOp* src : node->src()) UOPD_RETURN_IF_ERROR(Statement(src));
      break;
    case Op::kAfter: {
      UOPD_ASSIGN_OR_RETURN(const UOp* buffer, Buffer(node));
      (void)buffer;  // as a statement, an AFTER only orders what it depends on
      break;
    }
    default:
      return NodeError(*node, "is not a statement");
  }
  done_statements_.insert(node);
  return absl::OkStatus();
}

int Lowerer::VectorAlu(Op op, DType dtype, std::vector<int> src, const UOp* origin) {
  const bool vector = std::any_of(src.begin(), src.end(), [&](int s) { return IsVector(s); });
  if (vector) {
    for (int& s : src) s = Broadcast(s);
    dtype = VectorOf(dtype);
  }
  return Alu(op, dtype, std::move(src), origin);
}

absl::StatusOr<int> Lowerer::IndexValue(const UOp* node) {
  UOPD_ASSIGN_OR_RETURN(int value, Value(node));
  if (node->dtype().scalar == Scalar::kIndex) return value;
  DType index = DType::Of(Scalar::kIndex);
  index.count = program_.instrs[value].dtype.count;  // a vectorized range's lanes stay lanes
  return Emit(Instr{.kind = InstrKind::kCast, .dtype = index, .src = {value}, .origin = node});
}

absl::StatusOr<int> Lowerer::Value(const UOp* node) {
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
      if (node->dtype().scalar == Scalar::kIndex) return it->second;
      // The counter is an INDEX; a RANGE of a narrower integer dtype is its value in that dtype,
      // which holds it (CheckRangesFitTheirDTypes).
      result = Emit(Instr{
          .kind = InstrKind::kCast, .dtype = node->dtype(), .src = {it->second}, .origin = node});
      break;
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
    case Op::kVectorize:
    case Op::kWmma: {
      UOPD_ASSIGN_OR_RETURN(result, Fragment(node));
      break;
    }
    case Op::kGep: {
      UOPD_ASSIGN_OR_RETURN(int vector, Value(node->src(0)));
      if (!IsVector(vector) || node->arg().i < 0 ||
          node->arg().i >= program_.instrs[vector].dtype.count) {
        return NodeError(*node, "GEP of a lane its source does not have");
      }
      result = Emit(Instr{.kind = InstrKind::kExtract,
                          .dtype = node->dtype(),
                          .src = {vector},
                          .lane = static_cast<int>(node->arg().i),
                          .origin = node});
      break;
    }
    case Op::kCast:
    case Op::kBitcast: {
      UOPD_ASSIGN_OR_RETURN(int src, Value(node->src(0)));
      result = Emit(Instr{.kind = node->op() == Op::kCast ? InstrKind::kCast : InstrKind::kBitcast,
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

absl::StatusOr<int> Lowerer::Fragment(const UOp* node) {
  if (vector_range_ != nullptr) return NodeError(*node, "a tensor core beside a vector range");
  if (node->op() == Op::kConst && node->dtype().count > 1) {  // a WMMA's accumulator of zeros
    DType scalar = node->dtype();
    scalar.count = 1;
    const int zero = EmitConst(scalar, node->arg(), node);
    return Emit(Instr{.kind = InstrKind::kBuild,
                      .dtype = node->dtype(),
                      .src = std::vector<int>(node->dtype().count, zero),
                      .origin = node});
  }
  if (node->op() != Op::kVectorize && node->op() != Op::kWmma) return Value(node);
  if (node->op() == Op::kWmma) {
    // The hardware's warp: 32 neighbouring threads of the grid, numbered as the warp range.
    const UOp* fastest = grid_ranges_.empty() ? nullptr : grid_ranges_.back();
    if (fastest == nullptr || fastest->arg().axis_type != AxisType::kWarp ||
        !fastest->src(0)->IsConst() || ConstIntValue(*fastest->src(0)) != kWarpLanes) {
      return absl::FailedPreconditionError(absl::StrCat(
          "lower: ", DescribeNode(*node), ": its warp is not the grid's fastest 32 threads"));
    }
  }
  std::vector<int> src;
  for (const UOp* s : node->src()) {
    // Fragments through Value, which remembers them (a tile's A fragment feeds several).
    const bool zeros = s->op() == Op::kConst && s->dtype().count > 1;
    UOPD_ASSIGN_OR_RETURN(int v, zeros ? Fragment(s) : Value(s));
    src.push_back(v);
  }
  return Emit(Instr{.kind = node->op() == Op::kWmma ? InstrKind::kWmma : InstrKind::kBuild,
                    .dtype = node->dtype(),
                    .src = std::move(src),
                    .arg = node->arg(),
                    .origin = node});
}

}  // namespace uopd::lowering

namespace uopd {

absl::StatusOr<LinearProgram> LowerKernel(const KernelAst& ast, const std::string& name,
                                          const LowerOptions& options) {
  auto program = lowering::Lowerer(ast, options).Run(name);
  if (program.ok() && program->group_threads > 0 &&
      std::any_of(program->instrs.begin(), program->instrs.end(),
                  [](const Instr& in) { return in.kind == InstrKind::kCheckBounds; })) {
    // A failed check ends its thread, and the rest of the block would wait at the barrier
    // for it: a kernel whose accesses are not all proven runs its group as a loop.
    LowerOptions serial = options;
    serial.group_threads = 0;
    program = lowering::Lowerer(ast, serial).Run(name);
  }
  if (!program.ok()) {
    return WithContext(program.status(), absl::StrCat("while lowering kernel ", name));
  }
  return program;
}

}  // namespace uopd
