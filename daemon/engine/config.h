// pschedd's configuration: a plain struct with documented defaults, loaded from a TOML file
// (--config) and then overridden by command-line flags.
//
// DefaultConfigToml() is the documented default file (`pschedd --print-default-config`);
// parsing it gives DaemonConfig{} exactly (a test holds the two together). Value type; no
// shared state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace psched::daemon {

// The most bytes one serialized protobuf, and so one ONNX model, can have: 2 GiB - 1.
inline constexpr int64_t kMaxOnnxProtobufBytes = (int64_t{1} << 31) - 1;
// The smallest byte bound a config may set (cache_max_bytes, max_plan_memory_bytes, ...).
inline constexpr int64_t kMinByteBound = int64_t{1} << 20;

// One logical device of the platform the daemon plans for and runs on.
struct DeviceConfig {
  std::string name;  // "cpu.big", "cpu.0", "gpu", ...: unique
  std::string kind;  // "cpu" or "gpu"
  // CPU: the cores its worker is pinned to (required). GPU: optional; the first is the
  // core its dispatcher thread and the OpenCL driver's threads are pinned to.
  std::vector<int> cores;
  // GPU: OpenCL device selector ("pthread" picks PoCL); empty: the first GPU-type device.
  std::string opencl_device;
};

// Who may call what (daemon/access/access.h, docs/security.md). Entries are user or group names, or
// decimal ids; an unknown name stops the daemon at start.
struct AccessConfig {
  // Admins besides root and the daemon's own user, who always are (they own the database).
  std::vector<std::string> admin_users;
  // Members (primary or supplementary) of these groups are admins.
  std::vector<std::string> admin_groups;
  // Members of these groups are users (register, plan, infer, read). Empty: the group that
  // owns the socket file.
  std::vector<std::string> user_groups;
};

struct DaemonConfig {
  // Unix socket the gRPC API listens on (ignored under socket activation).
  std::string socket = "/run/pschedd/pschedd.sock";
  // SQLite cache and other persistent state.
  std::string state_dir = "/var/lib/pschedd";
  // trace, debug, info, warn, error, critical, off.
  std::string log_level = "info";

  // Largest accepted ONNX upload; bigger uploads get RESOURCE_EXHAUSTED. By default what one
  // ONNX protobuf can hold (2 GiB - 1), so any self-contained model registers; who may upload
  // at all is the access roles' guard (docs/security.md).
  int64_t max_model_bytes = kMaxOnnxProtobufBytes;
  // Inference requests that may wait (running one included) before RESOURCE_EXHAUSTED.
  int queue_capacity = 64;
  // Threads that take Infer and GetPlan calls off the socket (daemon/rpc/call_pollers.h), and how
  // long each keeps polling after a call before it sleeps: a client's next call then finds it
  // awake instead of paying a sleeping thread's wake-up. 0 us: sleep at once. One poller is
  // the fast default: a second one, asleep, is the thread that waits in epoll, so the spinning
  // one waits for its wake-up to read a call (docs/runtime-performance.md).
  int call_pollers = 1;
  int poll_spin_us = 250;
  // An Infer whose plan measured at most this (median makespan) is run by the call poller
  // that took it, with no hand-off to a spare thread (a wake-up each way, 20-60 us here); a
  // longer one moves to a spare thread, so other calls wait at most about this long for the
  // poller. 0: every Infer moves.
  int brief_infer_us = 1000;
  // Scheduler for plan and infer requests that name none, with its options as in a plan key
  // ("name;k=v;k2=v2"; a request's own options take precedence). The default is the
  // iterative search with local moves, which measures best within the planning budget
  // (docs/evaluation.md, "Where the iterative search loses"); "iterative" alone is the paper's.
  std::string default_scheduler = "iterative;local_moves=5";
  // Upper bound of the SQLite database size (models, plans, statistics); a write past it is
  // RESOURCE_EXHAUSTED. 0: the smaller of 10% of the state dir's filesystem and 4 GiB,
  // computed at start (daemon/engine/budgets.h).
  int64_t cache_max_bytes = 0;
  // Per-user quotas on registered models, counted over the models each user registered
  // first; admins are exempt. Past one, RegisterModel is RESOURCE_EXHAUSTED naming the quota
  // and the usage, and no model of anyone is removed to make room.
  int max_models_per_user = 100;
  // 0: half of cache_max_bytes.
  int64_t max_model_bytes_per_user = 0;
  // Peak memory of one plan's run (activation arena, packed weights, input and output
  // copies: PlanMemory), known at planning time; a plan over it is RESOURCE_EXHAUSTED before
  // it is compiled or run. 0: a quarter of the machine's memory (MemTotal, or the cgroup's
  // limit when lower).
  int64_t max_plan_memory_bytes = 0;
  // Bytes of the loaded models (graph and weights) and their compiled plans together; the
  // least recently used model beyond it is unloaded, as beyond max_loaded_models. 0: half of
  // the machine's memory.
  int64_t max_loaded_bytes = 0;
  // Plans computed at once (each on its own thread); more requests wait for a slot. 0: one
  // per two cores, at least one.
  int max_concurrent_plans = 0;
  // Seconds one plan request may spend planning (waiting for a slot not counted); past it the
  // request is RESOURCE_EXHAUSTED. Admins' requests have no cap.
  int max_planning_s = 60;
  // Whether inference inputs may hold NaN or Inf. Off: such a request is INVALID_ARGUMENT
  // naming the tensor and the first bad index (a NaN input gives garbage, not an error,
  // deep inside the kernels).
  bool allow_non_finite_inputs = false;
  // Models kept imported in memory (graph, weights, compiled plans); the least recently used
  // beyond this is unloaded and imported again from the cache when next used.
  int max_loaded_models = 16;
  // Runs per measurement window of a served plan (docs/feedback.md): a plan whose median
  // measured makespan over a window is more than 15% off its prediction is replanned with
  // the latency model corrected by the measurements. 0 turns the correction off.
  int feedback_window = 16;
  // A platform that has no calibration stored calibrates itself once, in the background,
  // when the first model is registered (daemon/engine/first_start_calibration.h), timing each
  // device for this many milliseconds.
  bool auto_calibrate = true;
  int auto_calibrate_budget_ms = 2000;
  // Seconds SIGTERM waits for in-flight requests before cancelling them.
  int shutdown_grace_s = 30;
  // An inference running longer than this counts as stuck: the watchdog stops pinging
  // systemd, which then restarts the daemon.
  int stuck_inference_s = 60;

  // Platform profile the daemon plans for: "host" is this machine's devices below.
  std::string platform = "host";
  // Logical devices. No CPU device listed: one per discovered core cluster (cpu, or cpu.big,
  // cpu.little, ...: platform/cpu_topology.h). Nothing listed: those plus a gpu on the first
  // GPU-type OpenCL device, which is left out when it cannot be opened.
  std::vector<DeviceConfig> devices;

  AccessConfig access;
  // The sysfs CPU tree topology discovery reads; another root (a copy of a board's tree) is
  // for tests and containers whose /sys hides the host's topology.
  std::string cpu_topology_root = "/sys/devices/system/cpu";
};

// The default configuration as a commented TOML document.
std::string DefaultConfigToml();

// Parses TOML text; `origin` names the source in error messages. Unknown keys are errors
// (a typo must not silently fall back to a default).
absl::StatusOr<DaemonConfig> ParseConfig(const std::string& toml_text, const std::string& origin);
absl::StatusOr<DaemonConfig> LoadConfigFile(const std::string& path);

}  // namespace psched::daemon
