// The defaults of pschedd's resource bounds, from what the machine has: memory (MemTotal, or
// the cgroup's limit when lower - systemd's MemoryMax, a container's limit), the state dir's
// filesystem and the CPU cores. A config key left at 0 takes its default here
// (ResolveBudgets); docs/operations.md, "Resource bounds", lists them.
//
// The files read are under roots a test points elsewhere (MachineRoots). Plain functions; no
// shared state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "daemon/engine/config.h"

namespace psched::daemon {

// Where the machine's figures are read: /proc (meminfo, self/cgroup) and the cgroup mount.
struct MachineRoots {
  std::string proc = "/proc";
  std::string cgroup = "/sys/fs/cgroup";
};

struct MachineResources {
  int64_t mem_total_bytes = 0;  // MemTotal
  // The memory limit of the daemon's cgroup: v2 `memory.max`, v1 `memory.limit_in_bytes`;
  // unset when there is none ("max", or v1's page-rounded INT64_MAX).
  std::optional<int64_t> cgroup_limit_bytes;
  int64_t fs_bytes = 0;  // the state dir's filesystem size (statvfs)
  int cores = 1;         // online cores

  // The memory the daemon may count on: the cgroup's limit when lower than MemTotal.
  int64_t memory_bytes() const;
};

// Reads MemTotal, the cgroup limit and the online cores under `roots`, and the size of the
// filesystem holding `state_dir` (or its closest existing parent). FAILED_PRECONDITION naming
// the file when /proc/meminfo cannot be read or the filesystem not measured.
absl::StatusOr<MachineResources> ReadMachineResources(const std::string& state_dir,
                                                      const MachineRoots& roots = {});

// The cgroup memory limit of the process whose /proc/<pid>/cgroup is `self_cgroup` (text):
// v2 (`0::/path` and `<cgroup>/path/memory.max`) or v1 (`N:memory:/path` and
// `<cgroup>/memory/path/memory.limit_in_bytes`); a path absent under the mount (a container
// sees its own cgroup at the root) falls back to the mount's root. Unset when unlimited.
std::optional<int64_t> CgroupMemoryLimit(const std::string& self_cgroup,
                                         const std::string& cgroup_root);

// The defaults, documented in DefaultConfigToml:
inline constexpr int64_t kMaxDefaultCacheBytes = int64_t{4} << 30;
// cache_max_bytes: the smaller of 10% of the state dir's filesystem and 4 GiB.
int64_t DefaultCacheMaxBytes(const MachineResources& machine);
// max_plan_memory_bytes: a quarter of memory_bytes().
int64_t DefaultPlanMemoryBytes(const MachineResources& machine);
// max_loaded_bytes: half of memory_bytes().
int64_t DefaultLoadedBytes(const MachineResources& machine);
// max_model_bytes_per_user: half of the cache's bound.
int64_t DefaultModelBytesPerUser(int64_t cache_max_bytes);
// max_concurrent_plans: one per two cores, at least one.
int DefaultConcurrentPlans(const MachineResources& machine);

// `config` with every bound left at 0 set to its default for `machine`.
DaemonConfig ResolveBudgets(DaemonConfig config, const MachineResources& machine);

// "1.5 GiB", "320.0 MiB", "12 bytes": for messages and status lines.
std::string FormatBytes(int64_t bytes);

}  // namespace psched::daemon
