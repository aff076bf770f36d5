// In-graph op timings: every op of a model timed where the executors really run it.
//
// A calibration case (calibration_cases.h) times one op alone: its inputs are hot in cache
// and its output is a dense tensor of its own. In a model run an op reads what an earlier
// op left in memory, writes straight into its channel slice of a concat output (a strided
// store, executor/common/arena_plan.h), and may follow a large op that evicted its weights.
// TimeOpsInGraph runs the whole model on a CpuGraphExecutor with one thread pinned to each of
// the device's cores (one for a single-core device) and records each op's own span in every run
// (CpuGraphExecutor's per-op timings), so the samples carry those effects. Weights are synthesised
// for constants without data.
//
// Blocks the calling thread for warmup_runs + runs model runs; thread-safe (no shared
// state).
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "model/graph.h"
#include "platform/platform.h"
#include "predictor/host_model/calibration_samples.h"

namespace psched::calibration {

struct InGraphOptions {
  int warmup_runs = 1;
  int runs = 5;       // the sample is the median of the op's span over these runs
  uint64_t seed = 1;  // inputs and synthesised weights
};

// One sample per op with a non-zero span (whole-op configuration, device `device.name`,
// source "<graph>/op N '<name>' in-graph"), in op order. InvalidArgument for a device that
// is not a CPU device with cores, runs < 1 or warmup_runs < 0; the executor's error for a
// graph it cannot compile or run.
absl::StatusOr<std::vector<predictor::host_model::CalibrationSample>> TimeOpsInGraph(
    const platform::DeviceSpec& device, const model::Graph& graph,
    const InGraphOptions& options = {});

}  // namespace psched::calibration
