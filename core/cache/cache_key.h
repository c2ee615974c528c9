// CacheKey: the named components a compiled kernel's identity is made of (ARCHITECTURE.md,
// "Compiled-byte cache"). Equal keys mean interchangeable bytes: CUDA:0 and CUDA:1 of one
// architecture, and every worker of a cluster with the same compiler, share entries.
#ifndef UOPD_CORE_CACHE_CACHE_KEY_H_
#define UOPD_CORE_CACHE_CACHE_KEY_H_

#include <string>

#include "core/device/device.h"

namespace uopd {

struct CacheKey {
  std::string base_device;  // "CPU", "CUDA"
  std::string target;       // Compiler::Target(): triple;cpu;features or sm_XX
  std::string compiler;     // Compiler::Identity(): backend, versions, options
  std::string renderer;     // Renderer::Identity(): options that change the source
  std::string ast_hash;     // IR.md's AST hash (of the kernel as the client sent it)
  std::string opts;         // the opts applied to it (OptsToString; "" when none)
  // RenderOptions::FloatMode(): "" (every float operation rounds) or "fma". Hashed only when not
  // empty, so the keys of kernels that round every operation are those before it existed.
  std::string float_mode;

  // SHA-256 over the framed components, as 64 hex digits: the entry's name in every tier.
  std::string Hex() const;
  // "device=CPU target=... compiler=... renderer=... ast=...": what a miss log line shows.
  std::string Describe() const;
};

// The key of `ast_hash` with `opts` applied, compiled by `device`'s default renderer and
// compiler.
CacheKey KeyFor(const Device& device, const std::string& ast_hash, const std::string& opts = "",
                const std::string& float_mode = "");
// The same compiled by `pair` for the backend `base_device`.
CacheKey KeyFor(const std::string& base_device, const CompilerPair& pair,
                const std::string& ast_hash, const std::string& opts = "",
                const std::string& float_mode = "");

}  // namespace uopd

#endif  // UOPD_CORE_CACHE_CACHE_KEY_H_
