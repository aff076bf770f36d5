// Host latency calibration: times op configurations on the host's own devices.
//
// Calibrate runs the cases of calibration_cases.h on each device in turn: a CPU device on a
// PinnedWorker bound to its cores, with an XNNPACK kernel bound to the case's slice running on
// one thread per core of the device (executor::cpu::CpuThreadpool, each thread pinned to its core,
// as the runtime's CpuDevice runs it; a one-core device has no pool), so a core cluster's samples
// and fitted parameters are its own and carry its thread count; the GPU device through the OpenCL
// kernels of executor/opencl on one in-order queue. Each case gets synthetic weights and seeded
// random inputs, `warmup_runs` untimed runs (the first OpenCL launch JIT-compiles on PoCL), then
// `runs` timed runs whose median becomes the sample (on CPU devices each timed run starts with the
// core's private caches evicted, `evict_bytes`). CPU times are one kernel Run(); GPU times are
// Enqueue() until the queue has finished, i.e. launch plus execution as a scheduled subtask sees it
// (the synchronisation kernel is not included; the fitted model adds it as dispatch_us).
//
// Each device gets `budget_s` seconds of timing (kernel creation included, device and
// program setup excluded); cases are taken in BuildCases' round-robin order until it runs
// out. With several devices, the last `co_run_share` of each budget re-times the device's cases
// while the other devices run busy loops of real kernels (co-run contention samples). A device that
// cannot be opened (no OpenCL platform, core not usable) is skipped and reported, not an error.
// Calibrate blocks the calling thread; the progress callback runs on it. Not reentrant for the same
// OpenCL device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "calibration/op_timing/calibration_cases.h"
#include "platform/platform.h"
#include "predictor/host_model/calibration_samples.h"
#include "predictor/latency_model.h"

namespace psched::calibration {

struct CalibrationProgress {
  std::string device;
  int cases_done = 0;     // measured so far on this device
  int cases_skipped = 0;  // unsupported, failed or over max_case_ms
  double elapsed_s = 0;
  double budget_s = 0;
  // The sample just measured; null for the device's start and end notifications.
  const predictor::host_model::CalibrationSample* sample = nullptr;
  bool finished = false;  // the device is done (budget spent or cases exhausted)
  // The co-run phase: the other devices run a busy loop while this one is timed; cases_done
  // then counts co-run samples.
  bool co_running = false;
};

inline constexpr double kPriorityCaseLimitFactor = 10;

struct CalibrationOptions {
  std::string platform = "host";
  // Timing budget per device, seconds. Longer gives more samples and a better fit.
  double budget_s = 3.0;
  int warmup_runs = 1;
  // Timed runs per case; the sample is their median.
  int runs = 5;
  // The sample is the fastest timed run instead of the median: on a machine shared with other
  // busy processes, preemption inflates whole runs (the same op measured 0.01-60x apart in two
  // runs a minute apart with the median of 5) and the fastest run is the op's own time.
  // A CPU device of several threads always takes the fastest (SampleIsFastestRun).
  bool fastest_run = false;
  // Cases whose `prior` prediction on a device exceeds this are skipped: one huge conv
  // would otherwise eat the whole budget. Cases of the priority models (CalibrationCase::
  // priority) are skipped only above kPriorityCaseLimitFactor times this. <= 0 or no prior:
  // no limit.
  double max_case_ms = 30.0;
  // Predicts devices by platform index (the order of Calibrate's `devices`); may be null.
  std::shared_ptr<const predictor::LatencyModel> prior;
  uint64_t seed = 1;  // inputs and weights
  // CPU devices: bytes of scratch memory streamed through before every timed run, so the
  // op starts with its weights and inputs out of the core's private caches, as in a model
  // run where other ops ran in between (an isolated op timed back to back would otherwise
  // find them in L1/L2 and run up to 3x faster than in the graph). 0: no eviction. The
  // eviction is not timed but counts against budget_s.
  size_t evict_bytes = size_t{8} << 20;
  // Share of each device's budget spent re-timing the cases it measured (in order) while
  // every other usable device runs a busy loop of a real kernel it measured (its slowest
  // convolution up to 20 ms) on its own cores or queue: the co-run samples that contention
  // factors are learned from (co_running set). 0, or fewer than two usable devices: none.
  double co_run_share = 0.15;
  std::function<void(const CalibrationProgress&)> progress;
};

struct DeviceOutcome {
  std::string device;
  bool skipped = false;
  std::string reason;  // why the device was skipped
  int cases_done = 0;
  int cases_skipped = 0;
  int co_run_cases = 0;  // measured again under co-run load
  double elapsed_s = 0;
};

struct CalibrationRun {
  predictor::host_model::CalibrationSamples samples;
  std::vector<DeviceOutcome> devices;
};

// The OpenCL selector calibration opens its GPU with: `selector_text` when it names one;
// empty prefers a GPU-type device and falls back to the first device of any type (PoCL on
// development machines), "0". Per-op timing and the run-cost probes open the same device.
std::string CalibrationGpuSelector(const std::string& selector_text);

// Whether a sample on a device running each op on `threads` threads is the fastest of its
// timed runs rather than their median: with options.fastest_run, and always for more than one
// thread. A multi-thread sample waits for every thread, and the second core's wake-up varies run
// to run: on the 2-core cluster the same 2518 conv cases measured twice differ by 10.2-10.7%
// with the median, 6.9% with the fastest (docs/calibration.md, "Measured accuracy").
bool SampleIsFastestRun(const CalibrationOptions& options, int threads);

// Times `cases` on every device of `devices` (CPU: its cpu_cores, which must not be empty;
// GPU: its opencl_device selector text, empty meaning the first GPU-type device, else the
// first OpenCL device of any type). InvalidArgument for no devices, duplicate names, a CPU
// device without cores, budget_s <= 0, runs < 1 or warmup_runs < 0.
absl::StatusOr<CalibrationRun> Calibrate(std::span<const platform::DeviceSpec> devices,
                                         std::span<const CalibrationCase> cases,
                                         const CalibrationOptions& options);

}  // namespace psched::calibration
