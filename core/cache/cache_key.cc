#include "core/cache/cache_key.h"

#include "absl/strings/str_cat.h"
#include "core/util/sha256.h"

namespace uopd {

std::string CacheKey::Hex() const {
  Sha256 sha;
  sha.UpdateFramed("uopd-cache-key-v2");
  for (const auto* part : {&base_device, &target, &compiler, &renderer, &ast_hash, &opts}) {
    sha.UpdateFramed(*part);
  }
  return DigestToHex(sha.Finish());
}

std::string CacheKey::Describe() const {
  return absl::StrCat("device=", base_device, " target=", target, " compiler=", compiler,
                      " renderer=", renderer, " ast=", ast_hash, " opts=", opts);
}

CacheKey KeyFor(const Device& device, const std::string& ast_hash, const std::string& opts) {
  return KeyFor(device.spec().base_device_key(), device.compilers().front(), ast_hash, opts);
}

CacheKey KeyFor(const std::string& base_device, const CompilerPair& pair,
                const std::string& ast_hash, const std::string& opts) {
  return CacheKey{base_device,
                  pair.compiler->Target(),
                  pair.compiler->Identity(),
                  pair.renderer->Identity(),
                  ast_hash,
                  opts};
}

}  // namespace uopd
