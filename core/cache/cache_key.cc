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
  if (!float_mode.empty()) {
    sha.UpdateFramed("float_mode");
    sha.UpdateFramed(float_mode);
  }
  return DigestToHex(sha.Finish());
}

std::string CacheKey::Describe() const {
  return absl::StrCat("device=", base_device, " target=", target, " compiler=", compiler,
                      " renderer=", renderer, " ast=", ast_hash, " opts=", opts,
                      float_mode.empty() ? "" : " float_mode=", float_mode);
}

CacheKey KeyFor(const Device& device, const std::string& ast_hash, const std::string& opts,
                const std::string& float_mode) {
  return KeyFor(device.spec().base_device_key(), device.compilers().front(), ast_hash, opts,
                float_mode);
}

CacheKey KeyFor(const std::string& base_device, const CompilerPair& pair,
                const std::string& ast_hash, const std::string& opts,
                const std::string& float_mode) {
  return CacheKey{base_device,
                  pair.compiler->Target(),
                  pair.compiler->Identity(),
                  pair.renderer->Identity(),
                  ast_hash,
                  opts,
                  float_mode};
}

}  // namespace uopd
