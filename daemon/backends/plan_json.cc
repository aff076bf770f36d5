#include "daemon/backends/plan_json.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "model/split.h"
#include "predictor/op_config.h"

namespace psched::daemon {
namespace {

// JSON integers only: get<int64_t>() of a JSON float is a float-to-integer conversion,
// undefined for values out of range (found by fuzz_plan_json: an op id of 8.9e81).
std::optional<int64_t> Integer(const nlohmann::json& json) {
  if (!json.is_number_integer()) return std::nullopt;
  return json.get<int64_t>();
}

absl::Status Malformed(absl::string_view what) {
  return absl::InternalError(absl::StrCat("malformed cached plan: ", what));
}

}  // namespace

nlohmann::json ScheduleToJson(const model::Graph& graph, const std::string& platform,
                              const std::vector<std::string>& devices, const std::string& scheduler,
                              const scheduler::Schedule& schedule,
                              const predictor::LatencyModel* model) {
  std::vector<scheduler::ScheduledSubtask> ordered(schedule.subtasks().begin(),
                                                   schedule.subtasks().end());
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const auto& a, const auto& b) { return a.start_us < b.start_us; });
  nlohmann::json subtasks = nlohmann::json::array();
  for (const scheduler::ScheduledSubtask& s : ordered) {
    subtasks.push_back({{"op", graph.op(s.op).name},
                        {"op_id", s.op},
                        {"device", devices[static_cast<size_t>(s.device)]},
                        {"strategy", std::string(model::SplitAxisName(s.axis))},
                        {"work", {s.begin, s.end}},
                        {"start_us", s.start_us},
                        {"end_us", s.end_us}});
    if (model != nullptr &&
        model->PredictsWithFallback(predictor::SubtaskConfig(graph, s.op, s.axis, s.begin, s.end),
                                    s.device)) {
      subtasks.back()["fallback"] = true;
    }
  }
  return {{"scheduler", scheduler},
          {"makespan_us", schedule.makespan_us()},
          {"platform", platform},
          {"devices", devices},
          {"subtasks", std::move(subtasks)}};
}

absl::StatusOr<scheduler::Schedule> ScheduleFromJson(const model::Graph& graph,
                                                     const std::vector<std::string>& devices,
                                                     const nlohmann::json& plan) {
  const int num_ops = static_cast<int>(graph.ops.size());
  scheduler::Schedule schedule(num_ops, static_cast<int>(devices.size()));
  std::vector<scheduler::ScheduledSubtask> subtasks;
  if (!plan.is_object() || !plan.contains("subtasks") || !plan["subtasks"].is_array()) {
    return Malformed("no \"subtasks\" array");
  }
  try {
    for (const nlohmann::json& s : plan["subtasks"]) {
      const std::string device = s.at("device").get<std::string>();
      auto it = std::find(devices.begin(), devices.end(), device);
      if (it == devices.end()) {
        return absl::FailedPreconditionError(
            absl::StrCat("the plan uses device '", device, "', which this daemon does not run"));
      }
      const std::string strategy = s.at("strategy").get<std::string>();
      std::optional<model::SplitAxis> axis = model::SplitAxisFromName(strategy);
      if (!axis.has_value()) {
        return Malformed(absl::StrCat("unknown strategy '", strategy, "'"));
      }
      scheduler::ScheduledSubtask subtask;
      const std::optional<int64_t> op = Integer(s.at("op_id"));
      if (!op.has_value() || *op < 0 || *op >= num_ops) {
        return Malformed(
            absl::StrCat("op id ", s.at("op_id").dump(), " is not an op of '", graph.name, "'"));
      }
      subtask.op = static_cast<model::OpId>(*op);
      subtask.device = static_cast<int>(it - devices.begin());
      subtask.axis = *axis;
      const nlohmann::json& work = s.at("work");
      const std::optional<int64_t> begin =
          work.is_array() && work.size() == 2 ? Integer(work[0]) : std::nullopt;
      const std::optional<int64_t> end = begin.has_value() ? Integer(work[1]) : std::nullopt;
      if (!end.has_value()) {
        return Malformed(absl::StrCat("work ", work.dump(), " is not [begin, end] in integers"));
      }
      subtask.begin = *begin;
      subtask.end = *end;
      subtask.start_us = s.at("start_us").get<double>();
      subtask.end_us = s.at("end_us").get<double>();
      subtasks.push_back(subtask);
    }
  } catch (const nlohmann::json::exception& e) {
    return Malformed(e.what());
  }
  // Slots in work order per op; the plan's widths are the subtasks' ranges.
  std::vector<std::vector<int>> by_op(static_cast<size_t>(num_ops));
  for (size_t i = 0; i < subtasks.size(); ++i) {
    by_op[static_cast<size_t>(subtasks[i].op)].push_back(static_cast<int>(i));
  }
  for (model::OpId op = 0; op < num_ops; ++op) {
    std::vector<int>& indices = by_op[static_cast<size_t>(op)];
    if (indices.empty()) continue;
    std::stable_sort(indices.begin(), indices.end(), [&subtasks](int a, int b) {
      return subtasks[static_cast<size_t>(a)].begin < subtasks[static_cast<size_t>(b)].begin;
    });
    scheduler::PartitionPlan op_plan;
    op_plan.axis = subtasks[static_cast<size_t>(indices.front())].axis;
    op_plan.work.clear();
    for (size_t slot = 0; slot < indices.size(); ++slot) {
      scheduler::ScheduledSubtask& subtask = subtasks[static_cast<size_t>(indices[slot])];
      subtask.slot = static_cast<int>(slot);
      op_plan.work.push_back(subtask.end - subtask.begin);
    }
    schedule.SetPlan(op, op_plan);
  }
  for (const scheduler::ScheduledSubtask& subtask : subtasks) schedule.Add(subtask);
  return schedule;
}

}  // namespace psched::daemon
