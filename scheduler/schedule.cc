#include "scheduler/schedule.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace psched::scheduler {
namespace {

// Relative tolerance for comparing times computed along different summation orders.
constexpr double kTimeEpsilon = 1e-6;

bool Before(double a, double b) { return a < b - kTimeEpsilon * std::max(1.0, std::abs(b)); }

std::string Describe(const Problem& problem, const ScheduledSubtask& s) {
  return absl::StrCat("subtask ", s.slot, " of op ", s.op, " (",
                      s.op >= 0 && s.op < problem.num_ops() ? problem.op_name(s.op) : "?", ")");
}

}  // namespace

void Schedule::Reset(int num_ops, int num_devices) {
  subtasks_.clear();
  plans_.resize(static_cast<size_t>(num_ops));
  for (PartitionPlan& p : plans_) {
    p.axis = model::SplitAxis::kNone;
    p.work.assign(1, 1);
  }
  device_order_.resize(static_cast<size_t>(num_devices));
  for (auto& order : device_order_) order.clear();
  makespan_us_ = 0;
}

void Schedule::Add(const ScheduledSubtask& subtask) {
  const int index = static_cast<int>(subtasks_.size());
  subtasks_.push_back(subtask);
  makespan_us_ = std::max(makespan_us_, subtask.end_us);
  if (subtask.device < 0 || subtask.device >= num_devices()) return;  // the validator reports it
  std::vector<int>& order = device_order_[static_cast<size_t>(subtask.device)];
  auto pos = std::upper_bound(
      order.begin(), order.end(), subtask.start_us,
      [this](double start, int i) { return start < subtasks_[static_cast<size_t>(i)].start_us; });
  order.insert(pos, index);
}

double Schedule::CompletionUs(OpId op) const {
  double c = 0;
  for (const ScheduledSubtask& s : subtasks_) {
    if (s.op == op) c = std::max(c, s.end_us);
  }
  return c;
}

absl::Status ValidateSchedule(const Problem& problem, const Schedule& schedule) {
  const int n = problem.num_ops();
  const int num_devices = problem.num_devices();
  if (schedule.num_ops() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("schedule has plans for ", schedule.num_ops(), " ops, problem has ", n));
  }
  if (schedule.num_devices() != num_devices) {
    return absl::InvalidArgumentError(absl::StrCat("schedule is for ", schedule.num_devices(),
                                                   " devices, problem has ", num_devices));
  }
  // Plans.
  for (OpId op = 0; op < n; ++op) {
    const PartitionPlan& plan = schedule.plan(op);
    const int64_t total = problem.WorkSize(op, plan.axis);
    if (total <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("op ", op, " (", problem.op_name(op), ") cannot be split along '",
                       std::string(model::SplitAxisName(plan.axis)), "'"));
    }
    if (plan.work.empty() || static_cast<int>(plan.work.size()) > problem.max_splits()) {
      return absl::InvalidArgumentError(absl::StrCat("op ", op, " (", problem.op_name(op),
                                                     "): plan has ", plan.work.size(),
                                                     " slots; need 1..", problem.max_splits()));
    }
    int64_t sum = 0;
    for (int64_t w : plan.work) {
      if (w < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("op ", op, " (", problem.op_name(op), "): plan has negative work ", w));
      }
      sum += w;
    }
    if (sum != total) {
      return absl::InvalidArgumentError(absl::StrCat(
          "op ", op, " (", problem.op_name(op), "): plan work sums to ", sum, ", U along '",
          std::string(model::SplitAxisName(plan.axis)), "' is ", total));
    }
  }
  // One subtask per active slot, tiling [0, U) in slot order.
  std::vector<int> first_subtask(static_cast<size_t>(n) * static_cast<size_t>(problem.max_splits()),
                                 -1);
  std::vector<double> completion(static_cast<size_t>(n), 0.0);
  const auto subtasks = schedule.subtasks();
  double latest_end = 0;
  for (size_t i = 0; i < subtasks.size(); ++i) {
    const ScheduledSubtask& s = subtasks[i];
    if (s.op < 0 || s.op >= n) {
      return absl::InvalidArgumentError(
          absl::StrCat("subtask ", i, " names op ", s.op, ", outside [0, ", n, ")"));
    }
    const PartitionPlan& plan = schedule.plan(s.op);
    if (s.slot < 0 || s.slot >= static_cast<int>(plan.work.size()) ||
        plan.work[static_cast<size_t>(s.slot)] == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(Describe(problem, s), " is extra: its plan has no active slot ", s.slot));
    }
    int& seen =
        first_subtask[static_cast<size_t>(s.op) * static_cast<size_t>(problem.max_splits()) +
                      static_cast<size_t>(s.slot)];
    if (seen >= 0) {
      return absl::InvalidArgumentError(absl::StrCat(Describe(problem, s), " is scheduled twice"));
    }
    seen = static_cast<int>(i);
    if (s.axis != plan.axis) {
      return absl::InvalidArgumentError(absl::StrCat(
          Describe(problem, s), " has axis '", std::string(model::SplitAxisName(s.axis)),
          "', its plan '", std::string(model::SplitAxisName(plan.axis)), "'"));
    }
    int64_t begin = 0;
    for (int q = 0; q < s.slot; ++q) begin += plan.work[static_cast<size_t>(q)];
    const int64_t end = begin + plan.work[static_cast<size_t>(s.slot)];
    if (s.begin != begin || s.end != end) {
      return absl::InvalidArgumentError(absl::StrCat(Describe(problem, s), " covers [", s.begin,
                                                     ", ", s.end, "); its plan slot covers [",
                                                     begin, ", ", end, ")"));
    }
    if (s.device < 0 || s.device >= num_devices) {
      return absl::InvalidArgumentError(
          absl::StrCat(Describe(problem, s), " runs on unknown device ", s.device));
    }
    if (!problem.DeviceRuns(s.op, s.device, s.axis)) {
      return absl::InvalidArgumentError(
          absl::StrCat(Describe(problem, s), " is placed on ",
                       problem.platform().devices[static_cast<size_t>(s.device)].name,
                       ", which has no kernel for it"));
    }
    if (!std::isfinite(s.start_us) || s.start_us < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(Describe(problem, s), " starts at ", s.start_us));
    }
    const double expected = problem.LatencyUs(s.op, s.axis, s.end - s.begin, s.device);
    const double duration = s.end_us - s.start_us;
    if (std::abs(duration - expected) > kTimeEpsilon * std::max(1.0, expected)) {
      return absl::InvalidArgumentError(
          absl::StrCat(Describe(problem, s), " on device ", s.device, " lasts ", duration,
                       " us; predicted latency is ", expected, " us"));
    }
    completion[static_cast<size_t>(s.op)] =
        std::max(completion[static_cast<size_t>(s.op)], s.end_us);
    latest_end = std::max(latest_end, s.end_us);
  }
  for (OpId op = 0; op < n; ++op) {
    const PartitionPlan& plan = schedule.plan(op);
    for (size_t q = 0; q < plan.work.size(); ++q) {
      if (plan.work[q] > 0 &&
          first_subtask[static_cast<size_t>(op) * static_cast<size_t>(problem.max_splits()) + q] <
              0) {
        return absl::InvalidArgumentError(
            absl::StrCat("subtask ", q, " of op ", op, " (", problem.op_name(op), ") is missing"));
      }
    }
  }
  // Siblings on distinct devices, and full-barrier dependencies.
  for (size_t i = 0; i < subtasks.size(); ++i) {
    const ScheduledSubtask& s = subtasks[i];
    for (size_t j = i + 1; j < subtasks.size(); ++j) {
      if (subtasks[j].op == s.op && subtasks[j].device == s.device) {
        return absl::InvalidArgumentError(
            absl::StrCat("subtasks ", s.slot, " and ", subtasks[j].slot, " of op ", s.op, " (",
                         problem.op_name(s.op), ") both run on device ", s.device));
      }
    }
  }
  for (const ScheduledSubtask& s : subtasks) {
    const auto preds = problem.preds(s.op);
    const auto transfer = problem.pred_transfer_us(s.op);
    for (size_t k = 0; k < preds.size(); ++k) {
      for (const ScheduledSubtask& p : subtasks) {
        if (p.op != preds[k]) continue;
        const double ready = p.end_us + problem.EdgeCostUs(transfer[k], p.device, s.device);
        if (Before(s.start_us, ready)) {
          return absl::InvalidArgumentError(absl::StrCat(
              Describe(problem, s), " starts at ", s.start_us, " us before its input from ",
              Describe(problem, p), " is ready at ", ready, " us"));
        }
      }
    }
  }
  // No overlap on a device.
  for (int d = 0; d < num_devices; ++d) {
    const auto order = schedule.device_order(d);
    for (size_t k = 1; k < order.size(); ++k) {
      const ScheduledSubtask& a = subtasks[static_cast<size_t>(order[k - 1])];
      const ScheduledSubtask& b = subtasks[static_cast<size_t>(order[k])];
      if (Before(b.start_us, a.end_us)) {
        return absl::InvalidArgumentError(absl::StrCat(
            Describe(problem, a), " [", a.start_us, ", ", a.end_us, ") overlaps ",
            Describe(problem, b), " [", b.start_us, ", ", b.end_us, ") on device ", d));
      }
    }
  }
  if (std::abs(schedule.makespan_us() - latest_end) > kTimeEpsilon * std::max(1.0, latest_end)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "makespan is ", schedule.makespan_us(), " us, latest subtask ends at ", latest_end, " us"));
  }
  return absl::OkStatus();
}

}  // namespace psched::scheduler
