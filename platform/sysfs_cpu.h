// Reading a Linux CPU sysfs tree: /sys/devices/system/cpu on a live system, or a copy of one
// (the fixture trees in platform/testdata/sysfs/) rooted anywhere.
//
// Only the files topology discovery uses are read: the `online` and `present` lists and, per
// core, `cpu_capacity`, `cpufreq/cpuinfo_max_freq`, `topology/{cluster_id,
// physical_package_id,core_cpus_list}` and, on arm64, `regs/identification/midr_el1`. Each
// attribute is kept as a status: NOT_FOUND when the kernel does not provide the file (an
// older kernel, no cpufreq driver, x86), another error when it exists but cannot be read or
// parsed; the caller decides what a missing attribute means. Plain functions over the file
// system; no state, thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace psched::platform {

// What sysfs says about one logical CPU.
struct SysfsCpu {
  int cpu = 0;
  absl::StatusOr<int64_t> capacity = absl::NotFoundError("not read");
  absl::StatusOr<int64_t> max_freq_khz = absl::NotFoundError("not read");
  absl::StatusOr<int64_t> cluster_id = absl::NotFoundError("not read");
  absl::StatusOr<int64_t> package_id = absl::NotFoundError("not read");
  absl::StatusOr<uint64_t> midr = absl::NotFoundError("not read");
  // The logical CPUs sharing this core (SMT siblings, itself included); core_cpus_list, or
  // thread_siblings_list on kernels before 5.10.
  absl::StatusOr<std::vector<int>> core_cpus = absl::NotFoundError("not read");
};

// Parses a kernel CPU list ("0-3,6,8-9"; empty text is an empty list). INVALID_ARGUMENT for
// anything else, including descending ranges and ids above 65535.
absl::StatusOr<std::vector<int>> ParseCpuList(absl::string_view text);
// The inverse: ascending ids as "0-3,6".
std::string FormatCpuList(const std::vector<int>& cpus);

// A CPU list file under `root` ("online", "present"): NOT_FOUND when absent, INVALID_ARGUMENT
// naming the file when it does not parse.
absl::StatusOr<std::vector<int>> ReadCpuListFile(const std::filesystem::path& root,
                                                 std::string_view name);

// Every attribute of `root`/cpu<cpu>; a missing cpu<cpu> directory gives NOT_FOUND.
absl::StatusOr<SysfsCpu> ReadSysfsCpu(const std::filesystem::path& root, int cpu);

}  // namespace psched::platform
