// LinearProgram: a kernel lowered to a straight list of instructions with explicit loops,
// accumulators, loads, stores and bounds checks. The shared output of the lowering, which every
// backend's renderer turns into its source language.
//
// Values may be vectors (dtype.count lanes, one vectorized range of the kernel): ALU ops, casts
// and accumulators then work lane by lane; a vector load or store touches dtype.count
// consecutive elements from its (scalar) index, each lane masked by its own bool when the mask
// is a vector. Backends that do not spell some vector instruction have Devectorize rewrite it
// lane by lane first (core/codegen/devectorize.h).
#ifndef UOPD_CORE_CODEGEN_LINEAR_PROGRAM_H_
#define UOPD_CORE_CODEGEN_LINEAR_PROGRAM_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/device/program_spec.h"
#include "core/ir/uop.h"

namespace uopd {

enum class InstrKind : uint8_t {
  kConst,        // a constant: `arg` (CONST semantics for `dtype`)
  kVar,          // the value of runtime variable number `var` (position in var_names)
  kAlu,          // `op` over src (IR semantics; IDIV/MOD by zero are defined, see below)
  kCast,         // CAST src[0] to dtype
  kBitcast,      // BITCAST src[0] to dtype
  kLoad,         // element src[0] of buffer `slot`; with src[1] (bool) the load happens only
                 // when it is true and yields 0 otherwise
  kStore,        // buffer `slot`[src[0]] = src[1], only when src[2] (bool) is true if present
  kCheckBounds,  // ends the kernel with error `slot` + 1 unless 0 <= src[0] < `size`
                 // (checked only when src[1] is true, if present)
  kAccDefine,    // a mutable accumulator of `dtype`, starting at src[0]
  kAccUpdate,    // src[0] (an accumulator) = src[0] `op` src[1]
  kAccRead,      // the current value of accumulator src[0]
  kLoopBegin,    // for (x = src[0]; x < src[1]; ++x): this instruction's value is x
  kLoopEnd,      // closes the loop begun by src[0]
  kGlobalIndex,  // GPU: this thread's flattened index over the grid; threads at or past
                 // src[0] (the total) return at once
  kBroadcast,    // a vector of dtype.count lanes, each src[0] (a scalar)
  kExtract,      // lane `lane` of vector src[0]
  kBuild,        // the vector whose lanes are src (scalars)
  kHReduce,      // `op` (ADD, MUL, MAX) over the lanes of vector src[0]: a scalar
  // Work groups (programs with group_threads > 0: a GROUP reduction in shared memory):
  kThreadIndex,   // GPU: this thread's flattened index over the grid; every thread runs to the
                  // end (the barriers need the whole block), src[0] is the threads needed
  kSharedDefine,  // an array of `size` elements of dtype, one per block (GPU shared memory)
  kArrayLoad,     // element src[1] of array src[0] (kSharedDefine or kRegDefine)
  kArrayStore,    // array src[0][src[1]] = src[2]
  kBarrier,       // every thread of the block has done all before it (__syncthreads)
  // Tensor cores (targets with CodegenTarget::spells_wmma):
  kWmma,      // D = A x B + C over the warp: src = this thread's fragments of A, B and C (vectors,
              // kBuild), dtype D's fragment; `arg` is the WMMA node's (name, WmmaShape numbers)
  kWmmaInto,  // the same with C the accumulators src[2..] (kAccDefine), D written back into
              // them; no value (dtype: their vector, for the spelling; FoldWmmaAccumulators)
  // Register arrays (DEFINE_REG: a custom kernel's per-thread array), read and written through
  // kArrayLoad and kArrayStore with indices proven in bounds:
  kRegDefine,  // an array of `size` zeros of dtype, one per thread, defined before any use
};

// "const", "alu", "cast", ...: how dumps and tests name a kind.
absl::string_view InstrKindName(InstrKind kind);

struct Instr {
  InstrKind kind = InstrKind::kConst;
  Op op = Op::kAdd;
  DType dtype;                  // the value's dtype (INDEX stays INDEX: see index_bits)
  std::vector<int> src;         // indices of earlier instructions
  Arg arg;                      // kConst
  int var = -1;                 // kVar
  int slot = -1;                // kLoad, kStore, kCheckBounds
  int64_t size = 0;             // kCheckBounds: the buffer's element count; kSharedDefine
  int lane = 0;                 // kExtract
  const UOp* origin = nullptr;  // the AST node this came from, for dumps and messages
};

struct LinearProgram {
  std::string name;
  std::vector<Instr> instrs;
  std::vector<BufferParam> globals;  // by slot
  std::vector<int> outs;
  std::vector<int> ins;
  int buf_count = 0;
  std::vector<VarInfo> vars;           // client variables, sorted by name
  std::vector<std::string> var_names;  // vars, then core_id and core_count
  // Width INDEX values are computed in: 32 when every index value provably fits in int32.
  int index_bits = 64;
  // Whether the outermost loop is split across CPU threads through core_id / core_count, and
  // its (symbolic) trip count: the most threads that can help.
  bool parallel = false;
  SymbolicDim parallel_extent;
  // GPU: the trip-count expressions of the ranges mapped onto the grid, outermost first (their
  // product is the number of threads needed); empty when the kernel runs as one thread.
  std::vector<const UOp*> grid_ends;
  // GPU: threads per block when the program works in groups (kThreadIndex, shared memory,
  // barriers; core/codegen/work_group_loops.h runs it on the CPU); 0 otherwise.
  int group_threads = 0;
  int proven_accesses = 0;
  int guarded_accesses = 0;

  // The buffer parameter of `slot`. REQUIRES: the kernel declares `slot`.
  const BufferParam& Global(int slot) const;

  // A readable listing, one instruction a line, with the access-proof counts at the end.
  std::string Dump() const;
};

// Whether load or store `access` has a mask (a load's src[1], a store's src[2]).
inline bool IsMaskedAccess(const Instr& access) {
  return access.src.size() > (access.kind == InstrKind::kLoad ? 1u : 2u);
}

// The type a load reads or a store writes (a store's own dtype is void).
inline const DType& AccessedType(const LinearProgram& program, const Instr& access) {
  return access.kind == InstrKind::kLoad ? access.dtype : program.instrs[access.src[1]].dtype;
}

// The one mask every lane of `build` (a vector built from masked loads) is gated by, when lane k's
// mask is lane k of one bool vector or all lanes share one scalar: that instruction; -1 when some
// lane is unmasked or the masks have no such shape. A gather with such a mask can be read as
// masked vector loads of its span (the LLVM renderer's strided loads).
inline int LanesMask(const LinearProgram& program, const Instr& build) {
  int vector = -1, scalar = -1;
  for (size_t k = 0; k < build.src.size(); ++k) {
    const Instr& load = program.instrs[build.src[k]];
    if (load.kind != InstrKind::kLoad || !IsMaskedAccess(load)) return -1;
    const int mask = load.src[1];
    const Instr& m = program.instrs[mask];
    if (m.kind == InstrKind::kExtract && m.lane == static_cast<int>(k) && scalar < 0 &&
        (vector < 0 || vector == m.src[0]) &&
        program.instrs[m.src[0]].dtype.count == static_cast<int>(build.src.size())) {
      vector = m.src[0];
    } else if (vector < 0 && (scalar < 0 || scalar == mask) && m.dtype.count <= 1) {
      scalar = mask;
    } else {
      return -1;
    }
  }
  return vector >= 0 ? vector : scalar;
}

}  // namespace uopd

#endif  // UOPD_CORE_CODEGEN_LINEAR_PROGRAM_H_
