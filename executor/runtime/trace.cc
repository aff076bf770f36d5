#include "executor/runtime/trace.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "model/split.h"

namespace psched::executor::runtime {
namespace {

using SubtaskKey = std::tuple<int, model::OpId, int64_t>;  // device, op, begin

std::map<SubtaskKey, const scheduler::ScheduledSubtask*> IndexSchedule(
    const scheduler::Schedule* schedule) {
  std::map<SubtaskKey, const scheduler::ScheduledSubtask*> index;
  if (schedule == nullptr) return index;
  for (const scheduler::ScheduledSubtask& s : schedule->subtasks()) {
    index[{s.device, s.op, s.begin}] = &s;
  }
  return index;
}

nlohmann::json Args(const model::Graph& graph, model::OpId op, model::SplitAxis axis, int64_t begin,
                    int64_t end) {
  return {{"op", graph.op(op).name},
          {"op_id", op},
          {"kind", std::string(model::OpKindName(graph.op(op).kind))},
          {"axis", std::string(model::SplitAxisName(axis))},
          {"range", {begin, end}},
          {"work", model::WorkSize(graph, op, axis)}};
}

}  // namespace

MakespanComparison CompareMakespan(std::span<const SubtaskTiming> timings,
                                   const scheduler::Schedule* schedule) {
  MakespanComparison result;
  for (const SubtaskTiming& t : timings) {
    result.measured_us = std::max(result.measured_us, static_cast<double>(t.end_ns) / 1e3);
  }
  if (schedule != nullptr) result.predicted_us = schedule->makespan_us();
  return result;
}

nlohmann::json ChromeTrace(const model::Graph& graph, std::span<const std::string> device_names,
                           std::span<const SubtaskTiming> timings,
                           const scheduler::Schedule* schedule) {
  const auto predicted = IndexSchedule(schedule);
  const int num_devices = static_cast<int>(device_names.size());
  nlohmann::json events = nlohmann::json::array();
  auto track_name = [&](int tid, const std::string& name) {
    events.push_back({{"ph", "M"},
                      {"name", "thread_name"},
                      {"pid", 1},
                      {"tid", tid},
                      {"args", {{"name", name}}}});
  };
  for (int d = 0; d < num_devices; ++d) {
    track_name(d, device_names[static_cast<size_t>(d)]);
    if (schedule != nullptr) {
      track_name(num_devices + d,
                 absl::StrCat(device_names[static_cast<size_t>(d)], " (predicted)"));
    }
  }
  for (const SubtaskTiming& t : timings) {
    nlohmann::json args = Args(graph, t.step.op, t.step.axis, t.step.begin, t.step.end);
    if (auto it = predicted.find({t.device, t.step.op, t.step.begin}); it != predicted.end()) {
      args["predicted_start_us"] = it->second->start_us;
      args["predicted_end_us"] = it->second->end_us;
    }
    if (t.device_us >= 0) args["device_us"] = t.device_us;
    events.push_back({{"ph", "X"},
                      {"name", graph.op(t.step.op).name},
                      {"cat", "measured"},
                      {"pid", 1},
                      {"tid", t.device},
                      {"ts", static_cast<double>(t.start_ns) / 1e3},
                      {"dur", static_cast<double>(t.end_ns - t.start_ns) / 1e3},
                      {"args", std::move(args)}});
  }
  if (schedule != nullptr) {
    for (const scheduler::ScheduledSubtask& s : schedule->subtasks()) {
      events.push_back({{"ph", "X"},
                        {"name", graph.op(s.op).name},
                        {"cat", "predicted"},
                        {"pid", 1},
                        {"tid", num_devices + s.device},
                        {"ts", s.start_us},
                        {"dur", s.end_us - s.start_us},
                        {"args", Args(graph, s.op, s.axis, s.begin, s.end)}});
    }
  }
  const MakespanComparison makespan = CompareMakespan(timings, schedule);
  nlohmann::json other = {{"graph", graph.name}, {"measured_makespan_us", makespan.measured_us}};
  if (schedule != nullptr) other["predicted_makespan_us"] = makespan.predicted_us;
  return {{"traceEvents", std::move(events)},
          {"displayTimeUnit", "ms"},
          {"otherData", std::move(other)}};
}

absl::Status WriteChromeTrace(const std::string& path, const model::Graph& graph,
                              const CoExecutionRuntime& runtime,
                              std::span<const std::string> device_names,
                              const scheduler::Schedule* schedule) {
  for (const SubtaskTiming& t : runtime.last_timings()) {
    if (t.device >= static_cast<int>(device_names.size())) {
      return absl::InvalidArgumentError(absl::StrCat("trace of '", graph.name, "': device ",
                                                     t.device, " has no name (",
                                                     device_names.size(), " names given)"));
    }
  }
  std::ofstream out(path);
  if (!out) return absl::UnavailableError(absl::StrCat("cannot write trace file '", path, "'"));
  out << ChromeTrace(graph, device_names, runtime.last_timings(), schedule).dump() << "\n";
  if (!out) return absl::UnavailableError(absl::StrCat("error writing trace file '", path, "'"));
  return absl::OkStatus();
}

}  // namespace psched::executor::runtime
