#include "daemon/engine/budgets.h"

#include <sched.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace psched::daemon {
namespace {

std::optional<std::string> ReadText(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A limit file's value: a byte count, or unset for "max" and for v1's "no limit" (INT64_MAX
// rounded down to a page), anything at or above 2^62 bytes.
std::optional<int64_t> ParseLimit(const std::string& text) {
  const std::string value(absl::StripAsciiWhitespace(text));
  int64_t bytes = 0;
  if (value == "max" || !absl::SimpleAtoi(value, &bytes)) return std::nullopt;
  if (bytes <= 0 || bytes >= (int64_t{1} << 62)) return std::nullopt;
  return bytes;
}

constexpr const char* kSetEveryBound =
    "set cache_max_bytes, max_model_bytes_per_user, max_plan_memory_bytes, max_loaded_bytes "
    "and max_concurrent_plans in the config to start without the machine's figures";

}  // namespace

int64_t MachineResources::memory_bytes() const {
  if (cgroup_limit_bytes.has_value() && *cgroup_limit_bytes < mem_total_bytes) {
    return *cgroup_limit_bytes;
  }
  return mem_total_bytes;
}

std::optional<int64_t> CgroupMemoryLimit(const std::string& self_cgroup,
                                         const std::string& cgroup_root) {
  for (absl::string_view line : absl::StrSplit(self_cgroup, '\n', absl::SkipEmpty())) {
    // hierarchy-id:controllers:path
    std::vector<std::string> fields = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (fields.size() != 3) continue;
    std::string base;
    std::string file;
    if (fields[0] == "0" && fields[1].empty()) {
      base = cgroup_root;  // v2, unified
      file = "memory.max";
      // A hybrid v1 host mounts the unified tree at <root>/unified, without the memory
      // controller: only a v2-only host has memory.max there.
    } else {
      bool memory = false;
      for (absl::string_view c : absl::StrSplit(fields[1], ',')) memory |= c == "memory";
      if (!memory) continue;
      base = cgroup_root + "/memory";
      file = "memory.limit_in_bytes";
    }
    for (const std::string& dir : {base + fields[2], base}) {
      if (std::optional<std::string> text = ReadText(dir + "/" + file); text.has_value()) {
        // Under a limited parent a child reads "max"; the parent's limit still holds it, but
        // systemd puts MemoryMax= on the service's own cgroup, which is the one read first.
        std::optional<int64_t> limit = ParseLimit(*text);
        if (limit.has_value()) return limit;
        break;
      }
    }
  }
  return std::nullopt;
}

absl::StatusOr<MachineResources> ReadMachineResources(const std::string& state_dir,
                                                      const MachineRoots& roots) {
  MachineResources machine;
  const std::string meminfo_path = roots.proc + "/meminfo";
  std::optional<std::string> meminfo = ReadText(meminfo_path);
  if (meminfo.has_value()) {
    for (absl::string_view line : absl::StrSplit(*meminfo, '\n')) {
      if (!absl::ConsumePrefix(&line, "MemTotal:")) continue;
      line = absl::StripAsciiWhitespace(line);
      int64_t kib = 0;
      if (absl::ConsumeSuffix(&line, " kB") && absl::SimpleAtoi(line, &kib)) {
        machine.mem_total_bytes = kib * 1024;
      }
    }
  }
  if (machine.mem_total_bytes <= 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot read MemTotal from ", meminfo_path, "; ", kSetEveryBound));
  }
  if (std::optional<std::string> self = ReadText(roots.proc + "/self/cgroup"); self.has_value()) {
    machine.cgroup_limit_bytes = CgroupMemoryLimit(*self, roots.cgroup);
  }
  // The state dir may not exist yet: its closest existing parent is on the same filesystem
  // unless a mount comes in between, which the daemon cannot foresee.
  std::filesystem::path dir = std::filesystem::absolute(state_dir);
  std::error_code ec;
  while (!std::filesystem::exists(dir, ec) && dir.has_parent_path() && dir != dir.parent_path()) {
    dir = dir.parent_path();
  }
  struct statvfs fs {};
  if (statvfs(dir.c_str(), &fs) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot measure the filesystem of ", state_dir, " (statvfs failed); ",
                     kSetEveryBound));
  }
  machine.fs_bytes = static_cast<int64_t>(fs.f_blocks) * static_cast<int64_t>(fs.f_frsize);
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0) machine.cores = std::max(1, CPU_COUNT(&cpus));
  return machine;
}

int64_t DefaultCacheMaxBytes(const MachineResources& machine) {
  return std::max<int64_t>(std::min(machine.fs_bytes / 10, kMaxDefaultCacheBytes), 1 << 20);
}

int64_t DefaultPlanMemoryBytes(const MachineResources& machine) {
  return machine.memory_bytes() / 4;
}

int64_t DefaultLoadedBytes(const MachineResources& machine) { return machine.memory_bytes() / 2; }

int64_t DefaultModelBytesPerUser(int64_t cache_max_bytes) { return cache_max_bytes / 2; }

int DefaultConcurrentPlans(const MachineResources& machine) {
  return std::max(1, machine.cores / 2);
}

DaemonConfig ResolveBudgets(DaemonConfig config, const MachineResources& machine) {
  if (config.cache_max_bytes == 0) config.cache_max_bytes = DefaultCacheMaxBytes(machine);
  if (config.max_plan_memory_bytes == 0) {
    config.max_plan_memory_bytes = DefaultPlanMemoryBytes(machine);
  }
  if (config.max_loaded_bytes == 0) config.max_loaded_bytes = DefaultLoadedBytes(machine);
  if (config.max_model_bytes_per_user == 0) {
    config.max_model_bytes_per_user = DefaultModelBytesPerUser(config.cache_max_bytes);
  }
  if (config.max_concurrent_plans == 0) {
    config.max_concurrent_plans = DefaultConcurrentPlans(machine);
  }
  return config;
}

std::string FormatBytes(int64_t bytes) {
  constexpr int64_t kKiB = 1024;
  if (bytes >= kKiB * kKiB * kKiB) {
    return absl::StrFormat("%.1f GiB", static_cast<double>(bytes) / (kKiB * kKiB * kKiB));
  }
  if (bytes >= kKiB * kKiB) {
    return absl::StrFormat("%.1f MiB", static_cast<double>(bytes) / (kKiB * kKiB));
  }
  if (bytes >= kKiB) return absl::StrFormat("%.1f KiB", static_cast<double>(bytes) / kKiB);
  return absl::StrCat(bytes, " bytes");
}

}  // namespace psched::daemon
