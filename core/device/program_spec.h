// ProgramSpec: what a Renderer produces and everything needed to compile and run one kernel:
// its source, its buffer and variable signature, and its (possibly symbolic) launch dimensions.
// Immutable once built, so shareable across threads.
#ifndef UOPD_CORE_DEVICE_PROGRAM_SPEC_H_
#define UOPD_CORE_DEVICE_PROGRAM_SPEC_H_

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "core/ir/kernel_ast.h"

namespace uopd {

// A launch dimension: a constant, or an integer expression over DEFINE_VARs.
struct SymbolicDim {
  int64_t constant = 1;
  const UOp* expr = nullptr;          // when set, evaluated instead of `constant`
  std::shared_ptr<const void> owner;  // keeps the Graph holding `expr` alive
};

struct VarInfo {
  std::string name;
  int64_t min = 0;
  int64_t max = 0;
  int64_t multiple = 1;  // bound values must be multiples of this
};

// A run of a buffer's elements, [begin, end).
struct ElementRange {
  int64_t begin = 0;
  int64_t end = 0;
  bool empty() const { return begin >= end; }
};

struct BufferParam {
  int slot = 0;
  DType dtype;       // the element type
  int64_t size = 0;  // elements
  // The elements the kernel accesses, where lowering proved them a part of [0, size) (empty
  // when it accesses none); unset: any of them. Two slots bound to overlapping views of one
  // buffer are safe when what they access does not overlap (tinygrad's buf[4:8] = buf[0:4]).
  std::optional<ElementRange> accessed;
  ElementRange Accessed() const { return accessed.value_or(ElementRange{0, size}); }
};

struct LaunchDims {
  std::array<int64_t, 3> global = {1, 1, 1};
  std::array<int64_t, 3> local = {1, 1, 1};
};

// Names of the runtime-only variables every CPU kernel takes after the client's variables.
inline constexpr char kCoreIdVar[] = "core_id";
inline constexpr char kCoreCountVar[] = "core_count";

struct ProgramSpec {
  std::string name;    // also the entry symbol
  std::string src;     // LLVM IR, CUDA C, ...
  std::string device;  // base device key, "CPU" or "CUDA"
  std::shared_ptr<const KernelAst> ast;
  std::array<SymbolicDim, 3> global_size;
  std::optional<std::array<SymbolicDim, 3>> local_size;
  // The client-visible variables (sorted by name), each with its bounds.
  std::vector<VarInfo> vars;
  // Runtime order of the `vals` a Program takes: vars' names, then runtime-only variables.
  std::vector<std::string> var_names;
  std::vector<BufferParam> globals;  // the buffer slots the kernel declares, by slot
  std::vector<int> outs;             // slots stored to
  std::vector<int> ins;              // slots loaded from and not stored to
  int buf_count = 0;                 // max slot + 1
  // Memory accesses proven in bounds at compile time vs. checked at run time.
  int proven_accesses = 0;
  int guarded_accesses = 0;

  // Evaluates the launch dimensions for these variable values (by name). Fails with
  // INVALID_ARGUMENT when a variable is missing or outside its bounds, and OUT_OF_RANGE when a
  // dimension is negative or beyond 2^31-1.
  absl::StatusOr<LaunchDims> launch_dims(
      const absl::flat_hash_map<std::string, int64_t>& var_vals) const;

  // Checks `var_vals` against `vars`: every variable present and within [min, max].
  absl::Status CheckVars(const absl::flat_hash_map<std::string, int64_t>& var_vals) const;
};

}  // namespace uopd

#endif  // UOPD_CORE_DEVICE_PROGRAM_SPEC_H_
