#include "daemon/plan_json.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "model/split.h"

namespace psched::daemon {

absl::StatusOr<scheduler::Schedule> ScheduleFromJson(const model::Graph& graph,
                                                     const std::vector<std::string>& devices,
                                                     const nlohmann::json& plan) {
  const int num_ops = static_cast<int>(graph.ops.size());
  scheduler::Schedule schedule(num_ops, static_cast<int>(devices.size()));
  std::vector<scheduler::ScheduledSubtask> subtasks;
  try {
    for (const nlohmann::json& s : plan.at("subtasks")) {
      const std::string device = s.at("device").get<std::string>();
      auto it = std::find(devices.begin(), devices.end(), device);
      if (it == devices.end()) {
        return absl::FailedPreconditionError(
            absl::StrCat("the plan uses device '", device, "', which this daemon does not run"));
      }
      const std::string strategy = s.at("strategy").get<std::string>();
      std::optional<model::SplitAxis> axis = model::SplitAxisFromName(strategy);
      if (!axis.has_value()) {
        return absl::InternalError(
            absl::StrCat("malformed cached plan: unknown strategy '", strategy, "'"));
      }
      scheduler::ScheduledSubtask subtask;
      subtask.op = s.at("op_id").get<model::OpId>();
      if (subtask.op < 0 || subtask.op >= num_ops) {
        return absl::InternalError(absl::StrCat("malformed cached plan: op id ", subtask.op,
                                                " out of range for '", graph.name, "'"));
      }
      subtask.device = static_cast<int>(it - devices.begin());
      subtask.axis = *axis;
      subtask.begin = s.at("work").at(0).get<int64_t>();
      subtask.end = s.at("work").at(1).get<int64_t>();
      subtask.start_us = s.at("start_us").get<double>();
      subtask.end_us = s.at("end_us").get<double>();
      subtasks.push_back(subtask);
    }
  } catch (const nlohmann::json::exception& e) {
    return absl::InternalError(absl::StrCat("malformed cached plan: ", e.what()));
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
