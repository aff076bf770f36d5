#include "daemon/engine/config.h"

#include <sched.h>
#include <toml++/toml.h>

#include <fstream>
#include <set>
#include <sstream>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace psched::daemon {
namespace {

const std::set<std::string> kLogLevels = {"trace", "debug",    "info", "warn",
                                          "error", "critical", "off"};

std::string Where(const std::string& origin, const toml::node& node) {
  const toml::source_region& source = node.source();
  return absl::StrCat(origin, ":", source.begin.line);
}

template <typename T>
absl::Status Read(const toml::table& table, const std::string& key, const std::string& origin,
                  T& out) {
  const toml::node* node = table.get(key);
  if (node == nullptr) return absl::OkStatus();
  // The node's own type must match: toml++ converts a float to an integer on request, which
  // is undefined for values out of range (found by fuzz_config: queue_capacity = 1e25).
  bool same_type = false;
  if constexpr (std::is_same_v<T, bool>) {
    same_type = node->is_boolean();
  } else if constexpr (std::is_integral_v<T>) {
    same_type = node->is_integer();
  } else {
    same_type = node->is_string();
  }
  std::optional<T> value = same_type ? node->value<T>() : std::nullopt;
  if (!value.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Where(origin, *node), ": '", key, "' has the wrong type"));
  }
  out = *value;
  return absl::OkStatus();
}

// Reads the integer `key` into `field` (left as it is when absent): "<origin>: <key> <value>
// is outside [lo, hi]" unless lo <= value <= hi.
absl::Status ReadInRange(const toml::table& table, const std::string& key,
                         const std::string& origin, int64_t lo, int64_t hi, int& field) {
  int64_t value = field;
  if (absl::Status read = Read(table, key, origin, value); !read.ok()) return read;
  if (value < lo || value > hi) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": ", key, " ", value, " is outside [", lo, ", ", hi, "]"));
  }
  field = static_cast<int>(value);
  return absl::OkStatus();
}

absl::Status CheckKeys(const toml::table& table, const std::set<std::string>& known,
                       const std::string& origin, const std::string& section) {
  for (const auto& [key, node] : table) {
    if (!known.contains(std::string(key.str()))) {
      return absl::InvalidArgumentError(absl::StrCat(Where(origin, node), ": unknown key '",
                                                     section, std::string(key.str()), "'"));
    }
  }
  return absl::OkStatus();
}

#define PSCHED_RETURN_IF_ERROR(expr)   \
  do {                                 \
    absl::Status status_ = (expr);     \
    if (!status_.ok()) return status_; \
  } while (false)

absl::StatusOr<DeviceConfig> ParseDevice(const toml::table& table, const std::string& origin) {
  PSCHED_RETURN_IF_ERROR(
      CheckKeys(table, {"name", "kind", "cores", "opencl_device"}, origin, "devices."));
  DeviceConfig device;
  PSCHED_RETURN_IF_ERROR(Read(table, "name", origin, device.name));
  PSCHED_RETURN_IF_ERROR(Read(table, "kind", origin, device.kind));
  PSCHED_RETURN_IF_ERROR(Read(table, "opencl_device", origin, device.opencl_device));
  std::string where = absl::StrCat(origin, ":", table.source().begin.line);
  if (device.name.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": a device needs a 'name'"));
  }
  if (device.kind != "cpu" && device.kind != "gpu") {
    return absl::InvalidArgumentError(absl::StrCat(where, ": device '", device.name, "' has kind '",
                                                   device.kind, "'; expected \"cpu\" or \"gpu\""));
  }
  if (const toml::array* cores = table.get_as<toml::array>("cores")) {
    for (const toml::node& core : *cores) {
      std::optional<int64_t> value =
          core.is_integer() ? core.value<int64_t>() : std::optional<int64_t>();
      if (!value.has_value() || *value < 0 || *value >= CPU_SETSIZE) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": device '", device.name,
                                                       "': cores must be integers in [0, ",
                                                       CPU_SETSIZE, ")"));
      }
      device.cores.push_back(static_cast<int>(*value));
    }
  }
  if (device.kind == "cpu" && device.cores.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": CPU device '", device.name, "' needs 'cores'"));
  }
  return device;
}

absl::Status ReadNames(const toml::table& table, const std::string& key, const std::string& origin,
                       std::vector<std::string>& out) {
  const toml::node* node = table.get(key);
  if (node == nullptr) return absl::OkStatus();
  const toml::array* array = node->as_array();
  if (array == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(Where(origin, *node), ": 'access.", key, "' must be an array of strings"));
  }
  for (const toml::node& entry : *array) {
    std::optional<std::string> name = entry.is_string() ? entry.value<std::string>() : std::nullopt;
    if (!name.has_value() || name->empty()) {
      return absl::InvalidArgumentError(absl::StrCat(Where(origin, entry), ": 'access.", key,
                                                     "' entries must be non-empty strings"));
    }
    out.push_back(*name);
  }
  return absl::OkStatus();
}

absl::StatusOr<AccessConfig> ParseAccess(const toml::node& node, const std::string& origin) {
  const toml::table* table = node.as_table();
  if (table == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(Where(origin, node), ": 'access' must be a table ([access])"));
  }
  PSCHED_RETURN_IF_ERROR(
      CheckKeys(*table, {"admin_users", "admin_groups", "user_groups"}, origin, "access."));
  AccessConfig access;
  PSCHED_RETURN_IF_ERROR(ReadNames(*table, "admin_users", origin, access.admin_users));
  PSCHED_RETURN_IF_ERROR(ReadNames(*table, "admin_groups", origin, access.admin_groups));
  PSCHED_RETURN_IF_ERROR(ReadNames(*table, "user_groups", origin, access.user_groups));
  return access;
}

}  // namespace

std::string DefaultConfigToml() {
  return R"toml(# pschedd configuration. Every key is optional; the values below are the defaults.
# Command-line flags (--socket, --state-dir, --log-level) override this file.

# Unix socket of the gRPC API (ignored when systemd passes a socket: pschedd.socket).
socket = "/run/pschedd/pschedd.sock"
# SQLite plan cache and registered models (systemd: StateDirectory=pschedd).
state_dir = "/var/lib/pschedd"
# trace, debug, info, warn, error, critical, off.
log_level = "info"

# Largest ONNX upload accepted, bytes (bigger: RESOURCE_EXHAUSTED); at most 2147483647
# (2 GiB - 1), the most one ONNX protobuf holds.
max_model_bytes = 2147483647
# Inference requests waiting or running before new ones get RESOURCE_EXHAUSTED.
queue_capacity = 64
# Threads taking Infer and GetPlan calls, and microseconds each keeps polling after a call
# before it sleeps (a back-to-back call then skips a thread wake-up; 0 = sleep at once).
# More than one poller makes each call slower: a sleeping poller takes the socket's reads.
call_pollers = 1
poll_spin_us = 250
# An inference whose plan measured at most this many microseconds runs on the poller that
# took the call (no hand-off); longer ones move to a spare thread, so the poller stays free.
brief_infer_us = 1000
# Scheduler used when a request names none (heft, iterative, single:cpu, ...), with options
# as "name;key=value;..." (a request's own options win). "iterative" alone is the paper's
# search; local moves make it measure better within the planning budget.
default_scheduler = "iterative;local_moves=5"
# Resource bounds (0 = the default computed at start, logged as "budgets: ...").
# Upper bound of the SQLite database, bytes; 0 = the smaller of 10% of the state dir's
# filesystem and 4 GiB.
cache_max_bytes = 0
# Registered models per user (admins exempt), by count and bytes; 0 bytes = half of
# cache_max_bytes. Past a quota, registration is RESOURCE_EXHAUSTED.
max_models_per_user = 100
max_model_bytes_per_user = 0
# Peak memory of one plan's run (activations, packed weights, inputs and outputs), bytes;
# a plan above it is refused before it is compiled. 0 = a quarter of MemTotal, or of the
# cgroup's memory limit when lower.
max_plan_memory_bytes = 0
# Loaded models and their compiled plans together, bytes; the least recently used beyond it
# is unloaded. 0 = half of MemTotal, or of the cgroup's memory limit when lower.
max_loaded_bytes = 0
# Plans computed at once; 0 = one per two cores, at least one.
max_concurrent_plans = 0
# Seconds one plan request may plan (admins: no cap).
max_planning_s = 60
# Accept NaN/Inf in inference inputs (false: INVALID_ARGUMENT naming the first bad value).
allow_non_finite_inputs = false
# Models kept imported in memory with their compiled plans; the least recently used beyond
# this is unloaded (and imported again from the cache when next used).
max_loaded_models = 16
# Runs per measurement window of a served plan; a plan measured more than 15% off its
# prediction over a window is replanned with corrected latencies (0 = off).
feedback_window = 16
# Without a stored calibration for its devices, calibrate them once in the background when
# the first model is registered (the inference queue waits meanwhile, about this budget per
# device plus the fit); plans made before are replanned with it. `pschedctl calibrate` runs
# a longer one at any time.
auto_calibrate = true
auto_calibrate_budget_ms = 2000
# Seconds SIGTERM waits for in-flight requests.
shutdown_grace_s = 30
# An inference running longer than this is stuck: the systemd watchdog stops being fed.
stuck_inference_s = 60

# Platform profile to plan for: "host" = the devices below on this machine.
platform = "host"
# Where CPU topology discovery reads the cores' clusters (`pschedctl platform show`).
cpu_topology_root = "/sys/devices/system/cpu"

# Logical devices; inference runs the plan across them (co-execution). No CPU device
# listed: one per discovered cluster of like cores, running each subtask on one thread per
# core (`cpu` when all cores are alike; `cpu.big`, `cpu.little`, ... on big.LITTLE boards).
# Nothing listed: those and a gpu on the first GPU-type OpenCL device. A GPU that cannot be
# opened (no OpenCL, no fine-grained SVM) is left out and the reason logged; planning and
# inference then use the CPUs only. Listing CPU devices replaces the discovered ones, e.g.
# to split a cluster into one device per core:
# [[devices]]
# name = "cpu.0"
# kind = "cpu"
# cores = [0]
#
# [[devices]]
# name = "cpu.1"
# kind = "cpu"
# cores = [1]
#
# [[devices]]
# name = "gpu"
# kind = "gpu"
# opencl_device = ""   # OpenCL device selector; "" = first GPU-type device, "pthread" = PoCL
# cores = [1]          # optional: pin the GPU's dispatcher (and PoCL's worker) to this core

# Who may call what; the socket's mode (0660) decides who can connect at all. Entries are
# names or decimal ids. Admins may do everything: remove models, purge the cache, calibrate,
# verify the cache. root and the daemon's own user are always admins.
[access]
admin_users = []
admin_groups = []
# Users may register models, plan, infer and read; [] = the group owning the socket file.
user_groups = []
)toml";
}

namespace {

// "name" or "name;key=value;...": what a plan key's scheduler config looks like. The name and
// the options themselves are checked by the scheduler when a request first uses them.
absl::Status CheckSchedulerConfig(const std::string& value, const std::string& origin) {
  const std::vector<std::string> parts = absl::StrSplit(value, ';');
  if (parts[0].empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        origin, ": default_scheduler '", value, "' names no scheduler (e.g. \"iterative\")"));
  }
  for (size_t i = 1; i < parts.size(); ++i) {
    const size_t eq = parts[i].find('=');
    if (eq == std::string::npos || eq == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(origin, ": default_scheduler '", value, "': option '", parts[i],
                       "' is not key=value (e.g. \"iterative;local_moves=5\")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DaemonConfig> ParseConfig(const std::string& toml_text, const std::string& origin) {
  // toml++ reports syntax errors by exception; they stop here.
  toml::table table;
  try {
    table = toml::parse(toml_text, origin);
  } catch (const toml::parse_error& error) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ":", error.source().begin.line, ": ",
                                                   std::string(error.description())));
  }
  PSCHED_RETURN_IF_ERROR(CheckKeys(
      table,
      {"socket", "state_dir", "log_level", "max_model_bytes", "queue_capacity", "default_scheduler",
       "cache_max_bytes", "max_loaded_models", "shutdown_grace_s", "stuck_inference_s", "platform",
       "allow_non_finite_inputs", "devices", "access", "cpu_topology_root", "feedback_window",
       "call_pollers", "poll_spin_us", "brief_infer_us", "auto_calibrate",
       "auto_calibrate_budget_ms", "max_models_per_user", "max_model_bytes_per_user",
       "max_plan_memory_bytes", "max_loaded_bytes", "max_concurrent_plans", "max_planning_s"},
      origin, ""));
  DaemonConfig config;
  PSCHED_RETURN_IF_ERROR(Read(table, "socket", origin, config.socket));
  PSCHED_RETURN_IF_ERROR(Read(table, "state_dir", origin, config.state_dir));
  PSCHED_RETURN_IF_ERROR(Read(table, "log_level", origin, config.log_level));
  PSCHED_RETURN_IF_ERROR(Read(table, "max_model_bytes", origin, config.max_model_bytes));
  PSCHED_RETURN_IF_ERROR(Read(table, "default_scheduler", origin, config.default_scheduler));
  PSCHED_RETURN_IF_ERROR(CheckSchedulerConfig(config.default_scheduler, origin));
  // Byte bounds: 0 takes the default; anything else at least 1 MiB (a smaller bound is a
  // typo, and would refuse everything).
  for (auto [key, field] : {std::pair{"cache_max_bytes", &config.cache_max_bytes},
                            std::pair{"max_model_bytes_per_user", &config.max_model_bytes_per_user},
                            std::pair{"max_plan_memory_bytes", &config.max_plan_memory_bytes},
                            std::pair{"max_loaded_bytes", &config.max_loaded_bytes}}) {
    PSCHED_RETURN_IF_ERROR(Read(table, key, origin, *field));
    if (*field != 0 && *field < kMinByteBound) {
      return absl::InvalidArgumentError(absl::StrCat(
          origin, ": ", key, " ", *field, " is below ", kMinByteBound,
          " bytes (1 MiB); 0 takes the default computed at start"));
    }
  }
  PSCHED_RETURN_IF_ERROR(
      ReadInRange(table, "max_models_per_user", origin, 1, 1000000, config.max_models_per_user));
  PSCHED_RETURN_IF_ERROR(
      ReadInRange(table, "max_concurrent_plans", origin, 0, 1024, config.max_concurrent_plans));
  PSCHED_RETURN_IF_ERROR(
      ReadInRange(table, "max_planning_s", origin, 1, 86400, config.max_planning_s));
  int64_t grace = config.shutdown_grace_s;
  PSCHED_RETURN_IF_ERROR(Read(table, "shutdown_grace_s", origin, grace));
  int64_t stuck = config.stuck_inference_s;
  PSCHED_RETURN_IF_ERROR(Read(table, "stuck_inference_s", origin, stuck));
  PSCHED_RETURN_IF_ERROR(Read(table, "platform", origin, config.platform));
  PSCHED_RETURN_IF_ERROR(Read(table, "cpu_topology_root", origin, config.cpu_topology_root));
  PSCHED_RETURN_IF_ERROR(
      Read(table, "allow_non_finite_inputs", origin, config.allow_non_finite_inputs));

  PSCHED_RETURN_IF_ERROR(
      ReadInRange(table, "queue_capacity", origin, 1, 1000000, config.queue_capacity));
  PSCHED_RETURN_IF_ERROR(ReadInRange(table, "call_pollers", origin, 1, 64, config.call_pollers));
  PSCHED_RETURN_IF_ERROR(
      ReadInRange(table, "poll_spin_us", origin, 0, 100000, config.poll_spin_us));
  PSCHED_RETURN_IF_ERROR(
      ReadInRange(table, "brief_infer_us", origin, 0, 10000000, config.brief_infer_us));
  PSCHED_RETURN_IF_ERROR(
      ReadInRange(table, "max_loaded_models", origin, 1, 100000, config.max_loaded_models));
  PSCHED_RETURN_IF_ERROR(
      ReadInRange(table, "feedback_window", origin, 0, 100000, config.feedback_window));
  PSCHED_RETURN_IF_ERROR(Read(table, "auto_calibrate", origin, config.auto_calibrate));
  PSCHED_RETURN_IF_ERROR(ReadInRange(table, "auto_calibrate_budget_ms", origin, 100, 15000,
                                     config.auto_calibrate_budget_ms));
  if (config.max_model_bytes < 1 || config.max_model_bytes > kMaxOnnxProtobufBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": max_model_bytes must be in [1, ", kMaxOnnxProtobufBytes,
                     "] (an ONNX protobuf holds at most 2 GiB - 1), not ", config.max_model_bytes));
  }
  if (grace < 0 || stuck < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": shutdown_grace_s must be >= 0 and stuck_inference_s >= 1"));
  }
  if (!kLogLevels.contains(config.log_level)) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": unknown log_level '", config.log_level, "'"));
  }
  config.shutdown_grace_s = static_cast<int>(grace);
  config.stuck_inference_s = static_cast<int>(stuck);

  if (const toml::node* devices = table.get("devices")) {
    const toml::array* array = devices->as_array();
    if (array == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(Where(origin, *devices), ": 'devices' must be an array of tables"));
    }
    std::set<std::string> names;
    for (const toml::node& entry : *array) {
      const toml::table* device_table = entry.as_table();
      if (device_table == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat(Where(origin, entry), ": each [[devices]] entry must be a table"));
      }
      absl::StatusOr<DeviceConfig> device = ParseDevice(*device_table, origin);
      if (!device.ok()) return device.status();
      if (!names.insert(device->name).second) {
        return absl::InvalidArgumentError(
            absl::StrCat(Where(origin, entry), ": duplicate device '", device->name, "'"));
      }
      config.devices.push_back(std::move(*device));
    }
  }
  if (const toml::node* access = table.get("access")) {
    absl::StatusOr<AccessConfig> parsed = ParseAccess(*access, origin);
    if (!parsed.ok()) return parsed.status();
    config.access = std::move(*parsed);
  }
  return config;
}

absl::StatusOr<DaemonConfig> LoadConfigFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read config file ", path));
  }
  std::stringstream text;
  text << in.rdbuf();
  return ParseConfig(text.str(), path);
}

}  // namespace psched::daemon
