#include "platform/cpu_topology.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "platform/sysfs_cpu.h"
#include "platform/uarch_names.h"

namespace psched::platform {
namespace {

bool Close(int64_t a, int64_t b) {
  const double larger = static_cast<double>(std::max(a, b));
  return std::fabs(static_cast<double>(a - b)) <= kClassTolerance * larger;
}

std::string CpuNames(const std::vector<int>& cpus) {
  return cpus.size() == 1 ? absl::StrCat("cpu", cpus[0])
                          : absl::StrCat("cpus ", FormatCpuList(cpus));
}

// Whether an attribute can tell cores apart: every core reports a valid value. Otherwise
// `notes` says why it is not used (nothing when no core has it: the kernel simply lacks it).
template <typename T>
bool UsableEverywhere(const std::vector<SysfsCpu>& cpus, absl::StatusOr<T> SysfsCpu::*attribute,
                      const std::string& what, std::vector<std::string>& notes) {
  std::vector<int> absent;
  std::vector<std::string> broken;
  for (const SysfsCpu& cpu : cpus) {
    const absl::StatusOr<T>& value = cpu.*attribute;
    if (absl::IsNotFound(value.status())) {
      absent.push_back(cpu.cpu);
    } else if (!value.ok()) {
      broken.push_back(std::string(value.status().message()));
    }
  }
  if (absent.size() == cpus.size()) return false;
  if (!broken.empty()) {
    notes.push_back(absl::StrCat(what, " not used for grouping: ", absl::StrJoin(broken, "; ")));
    return false;
  }
  if (!absent.empty()) {
    notes.push_back(absl::StrCat(what, " not used for grouping: missing on ", CpuNames(absent)));
    return false;
  }
  return true;
}

template <typename T>
std::optional<T> ValueOf(const absl::StatusOr<T>& value) {
  return value.ok() ? std::optional<T>(*value) : std::nullopt;
}

// Notes where the kernel's own grouping (`what`: cluster_id or physical_package_id) differs
// from the clusters formed: a cluster spanning several kernel groups and, with `note_splits`,
// a kernel group holding several clusters.
void NoteKernelGrouping(const std::vector<CpuCore>& cores, const std::vector<CpuCluster>& clusters,
                        std::optional<int64_t> CpuCore::*id, const std::string& what,
                        bool note_splits, std::vector<std::string>& notes) {
  std::map<int, int64_t> id_of;
  for (const CpuCore& core : cores) {
    if (!(core.*id).has_value()) return;
    id_of[core.cpu] = *(core.*id);
  }
  std::map<int64_t, std::vector<std::string>> clusters_of_id;
  for (const CpuCluster& cluster : clusters) {
    std::set<int64_t> ids;
    for (int cpu : cluster.cores) ids.insert(id_of[cpu]);
    for (int64_t value : ids) clusters_of_id[value].push_back(cluster.name);
    if (ids.size() > 1) {
      notes.push_back(absl::StrCat(cluster.name, " spans ", what, " ", absl::StrJoin(ids, ", "),
                                   ": the same class of core, so one device"));
    }
  }
  for (const auto& [value, names] : clusters_of_id) {
    if (note_splits && names.size() > 1) {
      notes.push_back(absl::StrCat(what, " ", value, " holds ", absl::StrJoin(names, ", "),
                                   ": different classes of core, so separate devices"));
    }
  }
}

// Notes a cluster whose cores' values differ within the tolerance.
void NoteMergedSpread(const std::vector<CpuCore>& cores, const CpuCluster& cluster,
                      std::optional<int64_t> CpuCore::*field, const std::string& what,
                      const std::string& unit, std::vector<std::string>& notes) {
  int64_t low = INT64_MAX;
  int64_t high = INT64_MIN;
  for (const CpuCore& core : cores) {
    if (std::find(cluster.cores.begin(), cluster.cores.end(), core.cpu) == cluster.cores.end() ||
        !(core.*field).has_value()) {
      continue;
    }
    low = std::min(low, *(core.*field));
    high = std::max(high, *(core.*field));
  }
  if (low < high) {
    notes.push_back(absl::StrCat(cluster.name, ": ", what, " ", low, "-", high, unit, " within ",
                                 std::lround(kClassTolerance * 100), "%, one class"));
  }
}

}  // namespace

std::string ClusterName(int rank, int count) {
  if (count <= 1) return "cpu";
  if (rank == count - 1) return "cpu.little";
  if (count >= 4) {
    if (rank == 0) return "cpu.prime";
    --rank;
    --count;
  }
  if (rank == 0) return "cpu.big";
  if (count == 3) return "cpu.mid";
  return absl::StrCat("cpu.mid", rank);
}

absl::StatusOr<CpuTopology> DiscoverCpuTopology(const TopologyOptions& options) {
  const std::filesystem::path root = options.sysfs_cpu_root;
  CpuTopology topology;
  topology.sysfs_root = options.sysfs_cpu_root;
  std::vector<std::string>& notes = topology.notes;

  absl::StatusOr<std::vector<int>> online = ReadCpuListFile(root, "online");
  if (!online.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot tell which CPUs are online: ", online.status().message()));
  }
  if (online->empty()) {
    return absl::FailedPreconditionError(absl::StrCat((root / "online").string(), " lists no CPU"));
  }
  if (absl::StatusOr<std::vector<int>> present = ReadCpuListFile(root, "present"); present.ok()) {
    std::vector<int> offline;
    std::set_difference(present->begin(), present->end(), online->begin(), online->end(),
                        std::back_inserter(offline));
    if (!offline.empty()) {
      notes.push_back(
          absl::StrCat(CpuNames(offline), " offline: not used (bring one online with `echo 1 > ",
                       (root / "cpuN" / "online").string(), "`, then restart pschedd)"));
    }
  }

  std::vector<SysfsCpu> cpus;
  std::vector<int> outside;
  std::vector<int> missing;
  for (int cpu : *online) {
    if (options.allowed_cpus.has_value() &&
        std::find(options.allowed_cpus->begin(), options.allowed_cpus->end(), cpu) ==
            options.allowed_cpus->end()) {
      outside.push_back(cpu);
      continue;
    }
    absl::StatusOr<SysfsCpu> read = ReadSysfsCpu(root, cpu);
    if (!read.ok()) {
      missing.push_back(cpu);
      continue;
    }
    cpus.push_back(std::move(*read));
  }
  if (!outside.empty()) {
    notes.push_back(
        absl::StrCat(CpuNames(outside), " outside this process's CPU affinity: not used"));
  }
  if (!missing.empty()) {
    notes.push_back(absl::StrCat(CpuNames(missing), " listed online but without a directory in ",
                                 root.string(), ": not used"));
  }
  if (cpus.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("no usable CPU in ", root.string(),
                                                      " (online: ", FormatCpuList(*online), ")"));
  }

  // SMT: a core's first usable logical CPU stands for it.
  std::set<int> usable;
  for (const SysfsCpu& cpu : cpus) usable.insert(cpu.cpu);
  std::vector<int> siblings;
  std::erase_if(cpus, [&](const SysfsCpu& cpu) {
    if (!cpu.core_cpus.ok()) return false;
    for (int sibling : *cpu.core_cpus) {
      if (sibling < cpu.cpu && usable.contains(sibling)) {
        siblings.push_back(cpu.cpu);
        return true;
      }
    }
    return false;
  });
  if (!siblings.empty()) {
    notes.push_back(absl::StrCat(CpuNames(siblings),
                                 ": SMT siblings of other cores, not used (one thread per core)"));
  }

  LiveCpuNames live;
  if (options.live_names) live = LiveCpuNamesFromCpuinfo();
  topology.chip = live.chip;
  for (const SysfsCpu& cpu : cpus) {
    CpuCore core;
    core.cpu = cpu.cpu;
    core.capacity = ValueOf(cpu.capacity);
    core.max_freq_khz = ValueOf(cpu.max_freq_khz);
    core.midr = ValueOf(cpu.midr);
    core.cluster_id = ValueOf(cpu.cluster_id);
    core.package_id = ValueOf(cpu.package_id);
    if (auto it = live.uarch.find(cpu.cpu); it != live.uarch.end()) {
      core.uarch = it->second;
    } else if (core.midr.has_value()) {
      core.uarch = UarchFromMidr(*core.midr);
    }
    topology.cores.push_back(std::move(core));
  }

  const bool by_capacity = UsableEverywhere(cpus, &SysfsCpu::capacity, "cpu_capacity", notes);
  const bool by_freq =
      UsableEverywhere(cpus, &SysfsCpu::max_freq_khz, "cpufreq/cpuinfo_max_freq", notes);
  bool by_uarch = true;
  std::vector<int> unnamed;
  std::vector<std::string> midr_errors;
  for (size_t i = 0; i < topology.cores.size(); ++i) {
    if (!topology.cores[i].uarch.empty()) continue;
    unnamed.push_back(topology.cores[i].cpu);
    if (!cpus[i].midr.ok() && !absl::IsNotFound(cpus[i].midr.status())) {
      midr_errors.push_back(std::string(cpus[i].midr.status().message()));
    }
  }
  if (!unnamed.empty()) {
    by_uarch = false;
    if (unnamed.size() < topology.cores.size()) {
      notes.push_back(absl::StrCat(
          "micro-architecture not used for grouping: unknown on ", CpuNames(unnamed),
          midr_errors.empty() ? "" : absl::StrCat(" (", absl::StrJoin(midr_errors, "; "), ")")));
    }
  }

  // Classes: a core joins the first class whose first core matches it on every usable
  // attribute.
  std::vector<std::vector<size_t>> classes;
  auto same_class = [&](const CpuCore& a, const CpuCore& b) {
    return (!by_capacity || Close(*a.capacity, *b.capacity)) &&
           (!by_freq || Close(*a.max_freq_khz, *b.max_freq_khz)) &&
           (!by_uarch || a.uarch == b.uarch);
  };
  for (size_t i = 0; i < topology.cores.size(); ++i) {
    auto it = std::find_if(classes.begin(), classes.end(), [&](const std::vector<size_t>& c) {
      return same_class(topology.cores[c.front()], topology.cores[i]);
    });
    if (it == classes.end()) {
      classes.push_back({i});
    } else {
      it->push_back(i);
    }
  }
  // Rank by capacity, then frequency, each used when every class has a core reporting it
  // (an attribute dropped for one unreadable core still ranks the classes).
  auto best = [&](const std::vector<size_t>& c, std::optional<int64_t> CpuCore::*field) {
    std::optional<int64_t> value;
    for (size_t i : c) {
      if ((topology.cores[i].*field).has_value()) {
        value = std::max(value.value_or(INT64_MIN), *(topology.cores[i].*field));
      }
    }
    return value;
  };
  auto ranks_all = [&](std::optional<int64_t> CpuCore::*field) {
    return std::all_of(classes.begin(), classes.end(),
                       [&](const auto& c) { return best(c, field).has_value(); });
  };
  const bool rank_capacity = ranks_all(&CpuCore::capacity);
  const bool rank_freq = ranks_all(&CpuCore::max_freq_khz);
  auto rank_key = [&](const std::vector<size_t>& c) {
    return std::make_tuple(rank_capacity ? -*best(c, &CpuCore::capacity) : 0,
                           rank_freq ? -*best(c, &CpuCore::max_freq_khz) : 0,
                           topology.cores[c.front()].cpu);
  };
  std::sort(classes.begin(), classes.end(),
            [&](const auto& a, const auto& b) { return rank_key(a) < rank_key(b); });
  for (size_t rank = 0; rank < classes.size(); ++rank) {
    const CpuCore& first = topology.cores[classes[rank].front()];
    CpuCluster cluster;
    cluster.name = ClusterName(static_cast<int>(rank), static_cast<int>(classes.size()));
    for (size_t i : classes[rank]) cluster.cores.push_back(topology.cores[i].cpu);
    if (by_capacity) cluster.capacity = first.capacity;
    if (by_freq) cluster.max_freq_khz = first.max_freq_khz;
    if (by_uarch) cluster.uarch = first.uarch;
    topology.clusters.push_back(std::move(cluster));
  }
  for (const CpuCluster& cluster : topology.clusters) {
    if (by_capacity) {
      NoteMergedSpread(topology.cores, cluster, &CpuCore::capacity, "cpu_capacity", "", notes);
    }
    if (by_freq) {
      NoteMergedSpread(topology.cores, cluster, &CpuCore::max_freq_khz, "cpuinfo_max_freq", " kHz",
                       notes);
    }
  }
  NoteKernelGrouping(topology.cores, topology.clusters, &CpuCore::cluster_id, "topology cluster_id",
                     /*note_splits=*/true, notes);
  // A package holding several clusters is the normal big.LITTLE case: only spans are noted.
  NoteKernelGrouping(topology.cores, topology.clusters, &CpuCore::package_id,
                     "topology physical_package_id", /*note_splits=*/false, notes);

  std::vector<std::string> used;
  if (by_capacity) used.push_back("cpu_capacity");
  if (by_freq) used.push_back("cpuinfo_max_freq");
  if (by_uarch) used.push_back("micro-architecture");
  topology.grouping =
      used.empty()
          ? "one cluster: no cpu_capacity, cpuinfo_max_freq or micro-architecture tells the "
            "cores apart"
          : absl::StrCat("cores with equal ", absl::StrJoin(used, ", "), " (within ",
                         std::lround(kClassTolerance * 100), "%) form a cluster");
  return topology;
}

std::vector<DeviceSpec> ClusterDevices(const CpuTopology& topology) {
  std::vector<DeviceSpec> devices;
  for (const CpuCluster& cluster : topology.clusters) {
    devices.push_back(DeviceSpec{cluster.name, DeviceKind::kCpu, 0, cluster.cores, ""});
  }
  return devices;
}

std::optional<std::vector<int>> ProcessAffinityCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return std::nullopt;
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

}  // namespace psched::platform
