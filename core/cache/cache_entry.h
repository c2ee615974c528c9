// CacheEntry: what the compiled-byte cache holds under a key, as C++ values. Tiers, the cache
// service and the wire carry it as bytes (program.proto's CachedKernel, through
// cache/program_codec.h); everything between works on this.
#ifndef UOPD_CORE_CACHE_CACHE_ENTRY_H_
#define UOPD_CORE_CACHE_CACHE_ENTRY_H_

#include <string>
#include <vector>

#include "core/device/compiler.h"
#include "core/device/program_spec.h"
#include "core/opt/opt.h"

namespace uopd {

// How a search went: what the choice it recorded is worth, and whether it is worth redoing.
struct SearchSummary {
  double seconds = 0;            // the chosen kernel's time on the search's made-up inputs
  double heuristic_seconds = 0;  // the heuristics' time on the same inputs
  int candidates = 0;            // candidates compiled and timed
  double budget_seconds = 0;     // the time the search was given
  bool converged = false;        // false: it ran out of time before a round stopped gaining
};

struct CacheEntry {
  std::string key;       // the CacheKey::Hex() it belongs under
  std::string ast_hash;  // CacheKey::ast_hash: the AST hash, or "source:<digest>"

  // A compiled kernel: its program (src is the rendered source; no AST) and its bytes.
  ProgramSpec spec;
  CompiledKernel kernel;

  // A search's record (under the key whose opts component is "search"; no kernel): the opts
  // the search chose for this AST on this target.
  std::vector<Opt> tuned_opts;
  SearchSummary search;

  bool is_search_record() const { return kernel.bytes.empty(); }
};

}  // namespace uopd

#endif  // UOPD_CORE_CACHE_CACHE_ENTRY_H_
