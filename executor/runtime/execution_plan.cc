#include "executor/runtime/execution_plan.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"

namespace psched::executor::runtime {
namespace {

std::string OpLabel(const model::Graph& graph, model::OpId id) {
  return absl::StrCat("op ", id, " '", graph.op(id).name, "'");
}

}  // namespace

ExecutionPlan SingleDevicePlan(const model::Graph& graph, int num_devices) {
  ExecutionPlan plan;
  plan.device_steps.resize(static_cast<size_t>(std::max(1, num_devices)));
  for (model::OpId id = 0; id < static_cast<model::OpId>(graph.ops.size()); ++id) {
    plan.device_steps[0].push_back({id, WorkSlice::Whole()});
  }
  return plan;
}

absl::Status ValidateExecutionPlan(const model::Graph& graph, const ExecutionPlan& plan,
                                   int num_devices) {
  if (static_cast<int>(plan.device_steps.size()) != num_devices) {
    return absl::InvalidArgumentError(absl::StrCat("plan has step lists for ",
                                                   plan.device_steps.size(), " devices, ",
                                                   num_devices, " devices are present"));
  }
  const size_t num_ops = graph.ops.size();
  std::vector<std::vector<PlanStep>> by_op(num_ops);
  for (size_t d = 0; d < plan.device_steps.size(); ++d) {
    for (const PlanStep& s : plan.device_steps[d]) {
      if (s.op < 0 || static_cast<size_t>(s.op) >= num_ops) {
        return absl::InvalidArgumentError(
            absl::StrCat("device ", d, " has a step for op ", s.op, ", which does not exist"));
      }
      by_op[static_cast<size_t>(s.op)].push_back(s);
    }
  }
  for (model::OpId id = 0; id < static_cast<model::OpId>(num_ops); ++id) {
    std::vector<PlanStep>& steps = by_op[static_cast<size_t>(id)];
    if (steps.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(OpLabel(graph, id), " has no step"));
    }
    const model::SplitAxis axis = steps[0].slice.axis;
    for (const PlanStep& s : steps) {
      if (s.slice.axis != axis) {
        return absl::InvalidArgumentError(
            absl::StrCat(OpLabel(graph, id), " is split along two axes"));
      }
    }
    const int64_t work = model::WorkSize(graph, id, axis);
    if (work == 0) {
      return absl::InvalidArgumentError(absl::StrCat(OpLabel(graph, id), " cannot be split along ",
                                                     std::string(model::SplitAxisName(axis))));
    }
    std::sort(steps.begin(), steps.end(),
              [](const PlanStep& a, const PlanStep& b) { return a.slice.begin < b.slice.begin; });
    int64_t covered = 0;
    for (const PlanStep& s : steps) {
      if (s.slice.begin != covered || s.slice.end <= s.slice.begin) {
        return absl::InvalidArgumentError(absl::StrCat(
            OpLabel(graph, id), ": step [", s.slice.begin, ", ", s.slice.end, ") of ",
            std::string(model::SplitAxisName(axis)), " leaves a gap, overlaps or is empty"));
      }
      covered = s.slice.end;
    }
    if (covered != work) {
      return absl::InvalidArgumentError(
          absl::StrCat(OpLabel(graph, id), ": steps cover [0, ", covered, ") of [0, ", work, ")"));
    }
  }

  // Simulate the queues: a head step may run once every predecessor op is complete.
  std::vector<int64_t> remaining(num_ops);
  for (size_t i = 0; i < num_ops; ++i) remaining[i] = static_cast<int64_t>(by_op[i].size());
  std::vector<std::vector<model::OpId>> preds(num_ops);
  for (model::OpId id = 0; id < static_cast<model::OpId>(num_ops); ++id) {
    preds[static_cast<size_t>(id)] = graph.Predecessors(id);
  }
  std::vector<size_t> head(plan.device_steps.size(), 0);
  size_t done = 0, total = 0;
  for (const auto& steps : plan.device_steps) total += steps.size();
  while (done < total) {
    bool progressed = false;
    for (size_t d = 0; d < plan.device_steps.size(); ++d) {
      while (head[d] < plan.device_steps[d].size()) {
        const model::OpId op = plan.device_steps[d][head[d]].op;
        const auto& p = preds[static_cast<size_t>(op)];
        const bool ready = std::all_of(p.begin(), p.end(), [&](model::OpId q) {
          return remaining[static_cast<size_t>(q)] == 0;
        });
        if (!ready) break;
        --remaining[static_cast<size_t>(op)];
        ++head[d];
        ++done;
        progressed = true;
      }
    }
    if (!progressed) {
      std::string waits;
      for (size_t d = 0; d < plan.device_steps.size(); ++d) {
        if (head[d] < plan.device_steps[d].size()) {
          absl::StrAppend(&waits, waits.empty() ? "" : "; ", "device ", d, " waits at ",
                          OpLabel(graph, plan.device_steps[d][head[d]].op));
        }
      }
      return absl::InvalidArgumentError(absl::StrCat("plan deadlocks: ", waits));
    }
  }
  return absl::OkStatus();
}

}  // namespace psched::executor::runtime
