#include "platform/platform.h"

#include "absl/strings/str_cat.h"

namespace psched::platform {

std::string_view DeviceKindName(DeviceKind kind) {
  return kind == DeviceKind::kGpu ? "gpu" : "cpu";
}

std::string Platform::Fingerprint() const {
  std::string out = absl::StrCat(name, ";bw=", transfer_bytes_per_us);
  // Platforms without one keep the fingerprint they had before it existed.
  if (cache_line_bytes > 0) absl::StrAppend(&out, ";line=", cache_line_bytes);
  for (const DeviceSpec& d : devices) {
    absl::StrAppend(&out, ";", d.name, ":", std::string(DeviceKindName(d.kind)), ":",
                    d.memory_domain);
    // A cluster's thread count changes its speed, so its plans; single-core devices keep the
    // fingerprint they had before clusters existed, and with it their cached plans.
    if (d.kind == DeviceKind::kCpu && d.cpu_cores.size() > 1) {
      absl::StrAppend(&out, ":threads=", d.cpu_cores.size());
    }
  }
  return out;
}

std::optional<int> Platform::DeviceIndex(std::string_view device_name) const {
  for (size_t i = 0; i < devices.size(); ++i) {
    if (devices[i].name == device_name) return static_cast<int>(i);
  }
  return std::nullopt;
}

}  // namespace psched::platform
