// pschedd's TOML configuration file, and the [access] names it resolves at start.
#include <cstddef>
#include <cstdint>
#include <string>

#include "daemon/access/access.h"
#include "daemon/engine/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<psched::daemon::DaemonConfig> config = psched::daemon::ParseConfig(
      std::string(reinterpret_cast<const char*>(data), size), "fuzz.toml");
  if (config.ok()) (void)psched::daemon::AccessPolicy::Create(config->access, 1000, 1000);
  return 0;
}
