// psched-bench --taskgraph files (docs/taskgraph-format.md).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "bench/psched_bench/taskgraph_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)psched::bench::ParseTaskGraphJson(
      std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
