// DeviceSpec: a device instance name ("CPU", "CUDA:1") and its base key ("CPU", "CUDA").
#ifndef UOPD_CORE_DEVICE_DEVICE_SPEC_H_
#define UOPD_CORE_DEVICE_DEVICE_SPEC_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace uopd {

class DeviceSpec {
 public:
  // Parses "CPU", "CPU:0", "CUDA", "CUDA:3" (case-insensitive base). "CUDA" means "CUDA:0".
  static absl::StatusOr<DeviceSpec> Parse(absl::string_view name);
  DeviceSpec(std::string base, int instance) : base_(std::move(base)), instance_(instance) {}

  // The backend without the instance: compiled bytes are shared by every instance of a base.
  const std::string& base_device_key() const { return base_; }
  int instance() const { return instance_; }
  // "CPU" for the CPU (one instance), "CUDA:n" otherwise.
  std::string name() const;

  friend bool operator==(const DeviceSpec& a, const DeviceSpec& b) {
    return a.base_ == b.base_ && a.instance_ == b.instance_;
  }

 private:
  std::string base_;
  int instance_;
};

}  // namespace uopd

#endif  // UOPD_CORE_DEVICE_DEVICE_SPEC_H_
