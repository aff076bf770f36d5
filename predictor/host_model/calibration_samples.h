// Measured latencies of op configurations on named devices: what host calibration produces
// (calibration/op_timing) and what the host model reads back (measured_anchors.h) and
// calibration/training fits and trains on.
//
// A CalibrationSample is one (device, OpConfig, median microseconds) triple; the OpConfig is
// the subtask's own configuration (predictor/op_config.h), so partition slices and whole ops
// are samples alike. CalibrationSamples is a plain value type that owns its data; the JSON
// form (below) is stable and is what `psched-calibrate --out` writes and the daemon caches.
// All functions are pure and thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "predictor/op_config.h"

namespace psched::predictor::host_model {

struct CalibrationSample {
  std::string device;  // platform device name, e.g. "cpu.0", "gpu"
  OpConfig config;
  double measured_us = 0;  // median over the timed runs
  int runs = 0;            // timed runs behind the median (warm-up excluded)
  std::string source;  // where the configuration came from, e.g. "squeezenet_v1_1/op 12 cout[0,32)"
  // How it ran: the device's thread count (a core cluster runs each subtask on one thread per
  // core; two threads are not twice one) and the kernel library that ran it ("xnnpack",
  // "onednn", "opencl"; empty in files written before the field existed).
  int threads = 1;
  std::string kernel;
  // Timed while the platform's other devices ran a busy loop of real kernels (co-run
  // contention samples); models are trained on the samples without it.
  bool co_running = false;
};

struct CalibrationSamples {
  std::string platform;  // e.g. "host"
  std::vector<CalibrationSample> samples;
};

// OpConfig <-> JSON: {"kind": "conv2d", "inputs": [[h, w, c], ...], "output": [h, w, c],
// "kernel": [kh, kw], "stride": [sh, sw], "dilation": [dh, dw], "pads": [t, l, b, r],
// "groups": g, "activation": "relu", "accumulate": false, "flops": x, "bytes": x}.
// flops and bytes are recomputed on parsing (ComputeCost), so edited files stay consistent.
nlohmann::json OpConfigToJson(const OpConfig& config);
// InvalidArgument naming the missing or malformed field.
absl::StatusOr<OpConfig> OpConfigFromJson(const nlohmann::json& json);

// {"platform": "host", "samples": [{"device": ..., "config": {...}, "measured_us": x,
//  "runs": n, "source": ..., "threads": n, "kernel": "xnnpack", "co_running": false}, ...]}
// (threads, kernel and co_running optional on reading: 1, empty and false).
nlohmann::json SamplesToJson(const CalibrationSamples& samples);
// InvalidArgument naming the sample index and field at fault; a measured time must be finite
// and > 0.
absl::StatusOr<CalibrationSamples> SamplesFromJson(const nlohmann::json& json);

}  // namespace psched::predictor::host_model
