#include "core/device/device_spec.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace uopd {

absl::StatusOr<DeviceSpec> DeviceSpec::Parse(absl::string_view name) {
  absl::string_view base = name;
  int instance = 0;
  if (size_t colon = name.find(':'); colon != absl::string_view::npos) {
    base = name.substr(0, colon);
    if (!absl::SimpleAtoi(name.substr(colon + 1), &instance) || instance < 0 || instance > 1024) {
      return absl::InvalidArgumentError(absl::StrCat("bad device instance in '", name, "'"));
    }
  }
  std::string upper = absl::AsciiStrToUpper(base);
  if (upper != "CPU" && upper != "CUDA") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown device '", name, "': expected CPU or CUDA:n"));
  }
  if (upper == "CPU" && instance != 0) {
    return absl::InvalidArgumentError(absl::StrCat("there is one CPU device, not '", name, "'"));
  }
  return DeviceSpec(upper, instance);
}

std::string DeviceSpec::name() const {
  if (base_ == "CPU") return base_;
  return absl::StrCat(base_, ":", instance_);
}

}  // namespace uopd
