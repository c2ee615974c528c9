#include "core/device/device.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace uopd {

Device::Device(DeviceSpec spec, std::unique_ptr<Allocator> allocator,
               std::vector<CompilerPair> compilers, std::unique_ptr<RuntimeFactory> runtime,
               int threads, int64_t memory_bytes, std::string description)
    : spec_(std::move(spec)),
      allocator_(std::move(allocator)),
      compilers_(std::move(compilers)),
      runtime_(std::move(runtime)),
      threads_(threads < 1 ? 1 : threads),
      memory_bytes_(memory_bytes),
      description_(std::move(description)) {}

void DeviceRegistry::Add(std::unique_ptr<Device> device) { devices_.push_back(std::move(device)); }

absl::StatusOr<Device*> DeviceRegistry::Get(absl::string_view name) const {
  auto spec = DeviceSpec::Parse(name);
  if (!spec.ok()) return spec.status();
  for (const auto& device : devices_) {
    if (device->spec() == *spec) return device.get();
  }
  return absl::FailedPreconditionError(
      absl::StrCat("device ", spec->name(), " is not present on this server (present: ",
                   absl::StrJoin(devices_, ", ",
                                 [](std::string* out, const auto& d) { out->append(d->name()); }),
                   ")"));
}

std::vector<Device*> DeviceRegistry::devices() const {
  std::vector<Device*> out;
  for (const auto& device : devices_) out.push_back(device.get());
  return out;
}

}  // namespace uopd
