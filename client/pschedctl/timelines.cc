#include "client/pschedctl/timelines.h"

#include <algorithm>
#include <utility>

#include "model/split.h"
#include "nlohmann/json.hpp"

namespace psched::pschedctl {
namespace {

using nlohmann::json;

// The index of `device` in `devices`, appended when it is not there yet.
int DeviceIndex(std::vector<std::string>& devices, const std::string& device) {
  auto it = std::find(devices.begin(), devices.end(), device);
  if (it == devices.end()) it = devices.insert(devices.end(), device);
  return static_cast<int>(it - devices.begin());
}

// A subtask's strategy as sent by pschedd ("none", "cout", ...); unknown names draw as whole.
psched::model::SplitAxis Axis(const std::string& strategy) {
  return psched::model::SplitAxisFromName(strategy).value_or(psched::model::SplitAxis::kNone);
}

}  // namespace

PlanTimeline PlanSpans(const v1::Plan& plan) {
  PlanTimeline out;
  json schedule = json::parse(plan.schedule_json(), nullptr, false);
  if (schedule.is_object() && schedule.contains("devices")) {
    for (const json& name : schedule["devices"]) out.devices.push_back(name.get<std::string>());
  }
  for (const auto& s : plan.subtasks()) {
    out.spans.push_back({.op = s.op(),
                         .op_id = s.op_id(),
                         .device = DeviceIndex(out.devices, s.device()),
                         .axis = Axis(s.strategy()),
                         .begin = s.work_begin(),
                         .end = s.work_end(),
                         .start_us = s.start_us(),
                         .end_us = s.end_us()});
  }
  return out;
}

timeline::ChromeTraceInput InferTimeline(const v1::InferResponse& response) {
  timeline::ChromeTraceInput out;
  const bool planned = response.predicted_makespan_us() > 0;
  if (planned) out.predicted.emplace();
  for (const auto& s : response.trace()) {
    timeline::SubtaskSpan span{.op = s.op(),
                               .device = DeviceIndex(out.devices, s.device()),
                               .axis = Axis(s.strategy()),
                               .begin = s.work_begin(),
                               .end = s.work_end(),
                               .start_us = s.start_us(),
                               .end_us = s.end_us(),
                               .device_us = s.device_us()};
    if (s.predicted_start_us() >= 0) {
      span.predicted_start_us = s.predicted_start_us();
      span.predicted_end_us = s.predicted_end_us();
      if (planned) {
        timeline::SubtaskSpan plan_span = span;
        plan_span.start_us = s.predicted_start_us();
        plan_span.end_us = s.predicted_end_us();
        plan_span.predicted_start_us.reset();
        plan_span.predicted_end_us.reset();
        plan_span.device_us = -1;
        out.predicted->push_back(std::move(plan_span));
      }
    }
    out.measured.push_back(std::move(span));
  }
  out.other_data = {{"executor", response.executor()}};
  if (planned) {
    out.other_data["scheduler"] = response.scheduler();
    out.predicted_makespan_us = response.predicted_makespan_us();
  }
  return out;
}

}  // namespace psched::pschedctl
