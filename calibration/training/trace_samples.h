// Samples from a co-execution trace: how long each subtask of a real run took, as
// calibration samples, so a latency model can be checked against what the runtime measured.
//
// The trace is the Chrome trace JSON of timeline/chrome_trace.h as the co-execution runtime
// writes it (executor/runtime/trace.h, bench/coexec --trace-dir; `pschedctl infer --trace`
// has no op ids, which the API's SubtaskTiming does not carry): one "thread_name" metadata
// event per device track and one complete event ("ph": "X", "cat": "measured") per subtask
// with args {op_id, axis, range} and, for devices that report it, device_us (the device's
// own execution time). Each measured event becomes a sample on its track's device whose
// configuration is predictor::SubtaskConfig(graph, op_id, axis, range) - exactly what the scheduler
// asked the predictor - and whose time is device_us when present, else the event's
// duration. Events that lasted 0 us are dropped (a model cannot be judged by relative error
// on them).
//
// Pure functions, thread-safe.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "model/graph.h"
#include "nlohmann/json.hpp"
#include "predictor/host_model/calibration_samples.h"

namespace psched::calibration {

// InvalidArgument naming the event index and field when the trace is malformed, was taken on
// another graph (otherData.graph differs from graph.name), or names an op or range the graph
// does not have.
absl::StatusOr<std::vector<predictor::host_model::CalibrationSample>> SamplesFromTrace(
    const nlohmann::json& trace, const model::Graph& graph);

}  // namespace psched::calibration
