#include "executor/runtime/trace.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "model/split.h"
#include "timeline/chrome_trace.h"

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

// Op `op`'s slice [begin, end) along `axis` on `device`, named from the graph; times unset.
timeline::SubtaskSpan Span(const model::Graph& graph, int device, model::OpId op,
                           model::SplitAxis axis, int64_t begin, int64_t end) {
  return {.op = graph.op(op).name,
          .op_id = op,
          .kind = std::string(model::OpKindName(graph.op(op).kind)),
          .device = device,
          .axis = axis,
          .begin = begin,
          .end = end,
          .work = model::WorkSize(graph, op, axis)};
}

timeline::ChromeTraceInput TraceInput(const model::Graph& graph,
                                      std::span<const std::string> device_names,
                                      std::span<const SubtaskTiming> timings,
                                      const scheduler::Schedule* schedule) {
  timeline::ChromeTraceInput input;
  input.devices.assign(device_names.begin(), device_names.end());
  input.other_data = {{"graph", graph.name}};
  const auto predicted = IndexSchedule(schedule);
  for (const SubtaskTiming& t : timings) {
    timeline::SubtaskSpan span =
        Span(graph, t.device, t.step.op, t.step.slice.axis, t.step.slice.begin, t.step.slice.end);
    span.start_us = static_cast<double>(t.start_ns) / 1e3;
    span.end_us = static_cast<double>(t.end_ns) / 1e3;
    if (auto it = predicted.find({t.device, t.step.op, t.step.slice.begin});
        it != predicted.end()) {
      span.predicted_start_us = it->second->start_us;
      span.predicted_end_us = it->second->end_us;
    }
    span.device_us = t.device_us;
    input.measured.push_back(std::move(span));
  }
  if (schedule != nullptr) {
    input.predicted.emplace();
    for (const scheduler::ScheduledSubtask& s : schedule->subtasks()) {
      timeline::SubtaskSpan span = Span(graph, s.device, s.op, s.axis, s.begin, s.end);
      span.start_us = s.start_us;
      span.end_us = s.end_us;
      input.predicted->push_back(std::move(span));
    }
    input.predicted_makespan_us = schedule->makespan_us();
  }
  return input;
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

absl::StatusOr<nlohmann::json> ChromeTrace(const model::Graph& graph,
                                           std::span<const std::string> device_names,
                                           std::span<const SubtaskTiming> timings,
                                           const scheduler::Schedule* schedule) {
  return timeline::ChromeTrace(TraceInput(graph, device_names, timings, schedule));
}

absl::Status WriteChromeTrace(const std::string& path, const model::Graph& graph,
                              const CoExecutionRuntime& runtime,
                              std::span<const std::string> device_names,
                              const scheduler::Schedule* schedule) {
  return timeline::WriteChromeTrace(
      path, TraceInput(graph, device_names, runtime.last_timings(), schedule));
}

}  // namespace psched::executor::runtime
