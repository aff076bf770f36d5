// Plans and inference traces read back from pschedd as timelines (timeline/): what
// `plan show --svg` draws and `infer --trace` writes. Devices are known by name only, so they
// are indexed in the order they appear. Internal to pschedctl; pure functions.
#pragma once

#include <string>
#include <vector>

#include "psched/v1/inference.pb.h"
#include "psched/v1/plan.pb.h"
#include "timeline/chrome_trace.h"
#include "timeline/subtask_span.h"

namespace psched::pschedctl {

struct PlanTimeline {
  std::vector<std::string> devices;
  std::vector<timeline::SubtaskSpan> spans;
};

// The plan's subtasks as timeline spans: devices in platform order, then any a subtask names
// that the platform list lacks.
PlanTimeline PlanSpans(const v1::Plan& plan);

// The response's per-subtask timings as a Chrome trace (timeline/chrome_trace.h): devices in
// order of first appearance, and the planned subtasks on predicted tracks when a plan ran.
timeline::ChromeTraceInput InferTimeline(const v1::InferResponse& response);

}  // namespace psched::pschedctl
