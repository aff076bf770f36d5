#include "scheduler/list_workspace.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace psched::scheduler {

absl::Status ListWorkspace::Prepare(const Problem& problem, const Schedule* fixed) {
  problem_ = &problem;
  fixed_ = fixed;
  track_ready_ = false;
  num_devices_ = problem.num_devices();
  timelines.resize(static_cast<size_t>(num_devices_));
  for (DeviceTimeline& t : timelines) t.Clear();
  placed_end_.assign(static_cast<size_t>(problem.num_ops()) * static_cast<size_t>(num_devices_),
                     -1.0);
  task_device.assign(static_cast<size_t>(graph.num_tasks()), -1);
  task_start.assign(static_cast<size_t>(graph.num_tasks()), 0.0);
  timeline_position_.assign(static_cast<size_t>(graph.num_tasks()), -1);
  if (fixed == nullptr) return absl::OkStatus();
  if (fixed->num_devices() != num_devices_) {
    return absl::InvalidArgumentError(absl::StrCat("fixed schedule is for ", fixed->num_devices(),
                                                   " devices, problem has ", num_devices_));
  }
  const auto subtasks = fixed->subtasks();
  for (const ScheduledSubtask& s : subtasks) {
    if (s.op < 0 || s.op >= problem.num_ops() || s.device < 0 || s.device >= num_devices_) {
      return absl::InvalidArgumentError(absl::StrCat("fixed subtask of op ", s.op, " on device ",
                                                     s.device, " is outside the problem"));
    }
    if (graph.InScope(s.op)) {
      return absl::InvalidArgumentError(
          absl::StrCat("op ", s.op, " (", problem.op_name(s.op),
                       ") is both fixed and in the scope to schedule"));
    }
    double& end = placed_end_[Index(s.op, s.device)];
    end = std::max(end, s.end_us);
  }
  // Device order is sorted by start, so each timeline loads in linear time.
  for (int d = 0; d < num_devices_; ++d) {
    for (int i : fixed->device_order(d)) {
      const ScheduledSubtask& s = subtasks[static_cast<size_t>(i)];
      if (!timelines[static_cast<size_t>(d)].Append(s.start_us, s.end_us)) {
        return absl::InvalidArgumentError(
            absl::StrCat("fixed subtasks overlap on device ", d, " at ", s.start_us, " us"));
      }
    }
  }
  return absl::OkStatus();
}

double ListWorkspace::DataReady(const Problem& problem, OpId op, int device) const {
  const auto preds = problem.preds(op);
  const auto transfer = problem.pred_transfer_us(op);
  double at = 0;
  for (size_t k = 0; k < preds.size(); ++k) {
    for (int d = 0; d < num_devices_; ++d) {
      const double end = placed_end_[Index(preds[k], d)];
      if (end >= 0) at = std::max(at, end + problem.EdgeCostUs(transfer[k], d, device));
    }
  }
  return at;
}

Placement ListWorkspace::EftOn(const Problem& problem, int task, int device) const {
  const double duration = graph.cost(task, device);
  const double data_ready = DataReady(problem, graph.task(task).op, device);
  const double start = timelines[static_cast<size_t>(device)].EarliestStart(data_ready, duration);
  return Placement{device, start, start + duration};
}

Placement ListWorkspace::BestEft(const Problem& problem, int task) const {
  const OpId op = graph.task(task).op;
  Placement best;
  for (int d = 0; d < num_devices_; ++d) {
    if (SiblingOn(op, d)) continue;
    const Placement p = EftOn(problem, task, d);
    if (best.device < 0 || p.end_us < best.end_us) best = p;
  }
  return best;
}

void ListWorkspace::InitReady(const Problem& problem) {
  counts.assign(static_cast<size_t>(problem.num_ops()), 0);
  for (OpId op : graph.ops()) {
    for (OpId p : problem.preds(op)) {
      if (graph.InScope(p))
        counts[static_cast<size_t>(op)] += graph.TaskEnd(p) - graph.TaskBegin(p);
    }
  }
  track_ready_ = true;
}

void ListWorkspace::Place(int task, const Placement& placement) {
  const size_t t = static_cast<size_t>(task);
  task_device[t] = placement.device;
  task_start[t] = placement.start_us;
  timeline_position_[t] =
      timelines[static_cast<size_t>(placement.device)].Insert(placement.start_us, placement.end_us);
  placed_end_[Index(graph.task(task).op, placement.device)] = placement.end_us;
  if (track_ready_) {
    for (OpId s : problem_->succs(graph.task(task).op)) --counts[static_cast<size_t>(s)];
  }
}

void ListWorkspace::Unplace(int task) {
  const size_t t = static_cast<size_t>(task);
  const int device = task_device[t];
  timelines[static_cast<size_t>(device)].Erase(timeline_position_[t]);
  placed_end_[Index(graph.task(task).op, device)] = -1.0;
  task_device[t] = -1;
  if (track_ready_) {
    for (OpId s : problem_->succs(graph.task(task).op)) ++counts[static_cast<size_t>(s)];
  }
}

}  // namespace psched::scheduler
