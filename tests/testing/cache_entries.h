// Cache entries for tests of the cache's tiers: a kernel entry that belongs under a key.
#ifndef UOPD_TESTS_TESTING_CACHE_ENTRIES_H_
#define UOPD_TESTS_TESTING_CACHE_ENTRIES_H_

#include <string>

#include "core/cache/cache_entry.h"
#include "core/cache/cache_key.h"

namespace uopd::testing {

// An entry of `key` whose compiled bytes are `bytes` (entry symbol "k").
inline CacheEntry EntryOf(const CacheKey& key, const std::string& bytes) {
  CacheEntry entry;
  entry.kernel = CompiledKernel{bytes, "k", ""};
  entry.spec.name = "k";
  entry.key = key.Hex();
  entry.ast_hash = key.ast_hash;
  return entry;
}

}  // namespace uopd::testing

#endif  // UOPD_TESTS_TESTING_CACHE_ENTRIES_H_
