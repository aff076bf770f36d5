#include "timeline/chrome_trace.h"

#include <algorithm>
#include <span>
#include <utility>

#include "absl/strings/str_cat.h"
#include "timeline/text_file.h"

namespace psched::timeline {
namespace {

absl::Status CheckDevices(std::span<const SubtaskSpan> spans, size_t devices, const char* which) {
  for (size_t i = 0; i < spans.size(); ++i) {
    const SubtaskSpan& s = spans[i];
    if (s.device < 0 || static_cast<size_t>(s.device) >= devices) {
      return absl::InvalidArgumentError(absl::StrCat(which, " subtask ", i, " ('", s.op,
                                                     "') is on device ", s.device, ", but ",
                                                     devices, " devices are named"));
    }
  }
  return absl::OkStatus();
}

nlohmann::json Args(const SubtaskSpan& s) {
  nlohmann::json args = {{"op", s.op}};
  if (s.op_id >= 0) args["op_id"] = s.op_id;
  if (!s.kind.empty()) args["kind"] = s.kind;
  args["axis"] = std::string(model::SplitAxisName(s.axis));
  args["range"] = {s.begin, s.end};
  if (s.work >= 0) args["work"] = s.work;
  if (s.predicted_start_us.has_value()) args["predicted_start_us"] = *s.predicted_start_us;
  if (s.predicted_end_us.has_value()) args["predicted_end_us"] = *s.predicted_end_us;
  if (s.device_us >= 0) args["device_us"] = s.device_us;
  return args;
}

nlohmann::json CompleteEvent(const SubtaskSpan& s, const char* category, int tid) {
  return {{"ph", "X"},
          {"name", s.op},
          {"cat", category},
          {"pid", 1},
          {"tid", tid},
          {"ts", s.start_us},
          {"dur", s.end_us - s.start_us},
          {"args", Args(s)}};
}

}  // namespace

absl::StatusOr<nlohmann::json> ChromeTrace(const ChromeTraceInput& input) {
  const size_t num_devices = input.devices.size();
  if (absl::Status s = CheckDevices(input.measured, num_devices, "measured"); !s.ok()) return s;
  if (input.predicted.has_value()) {
    if (absl::Status s = CheckDevices(*input.predicted, num_devices, "predicted"); !s.ok()) {
      return s;
    }
  }
  nlohmann::json events = nlohmann::json::array();
  auto track_name = [&](size_t tid, const std::string& name) {
    events.push_back({{"ph", "M"},
                      {"name", "thread_name"},
                      {"pid", 1},
                      {"tid", tid},
                      {"args", {{"name", name}}}});
  };
  for (size_t d = 0; d < num_devices; ++d) {
    track_name(d, input.devices[d]);
    if (input.predicted.has_value()) {
      track_name(num_devices + d, absl::StrCat(input.devices[d], " (predicted)"));
    }
  }
  double measured_us = 0;
  for (const SubtaskSpan& s : input.measured) {
    events.push_back(CompleteEvent(s, "measured", s.device));
    measured_us = std::max(measured_us, s.end_us);
  }
  nlohmann::json other = input.other_data;
  other["measured_makespan_us"] = measured_us;
  if (input.predicted.has_value()) {
    for (const SubtaskSpan& s : *input.predicted) {
      events.push_back(CompleteEvent(s, "predicted", static_cast<int>(num_devices) + s.device));
    }
    other["predicted_makespan_us"] = input.predicted_makespan_us;
  }
  return nlohmann::json{{"traceEvents", std::move(events)},
                        {"displayTimeUnit", "ms"},
                        {"otherData", std::move(other)}};
}

absl::Status WriteChromeTrace(const std::string& path, const ChromeTraceInput& input) {
  absl::StatusOr<nlohmann::json> trace = ChromeTrace(input);
  if (!trace.ok()) return trace.status();
  return WriteTextFile(path, trace->dump() + "\n", "trace file");
}

}  // namespace psched::timeline
