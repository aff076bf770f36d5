// pschedd's TOML configuration file.
#include <cstddef>
#include <cstdint>
#include <string>

#include "daemon/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)psched::daemon::ParseConfig(std::string(reinterpret_cast<const char*>(data), size),
                                    "fuzz.toml");
  return 0;
}
