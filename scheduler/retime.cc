#include "scheduler/retime.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"

namespace psched::scheduler {
namespace {

// When a subtask on `to` whose device is free at `device_free` may start after an input from
// `from` (!= `to`) that ended at `end` over an edge of `transfer_us`.
using InputReady =
    absl::FunctionRef<double(double transfer_us, int from, int to, double end, double device_free)>;

// `scale[d]`: device d's subtasks last this many times their prediction.
absl::StatusOr<Schedule> Retime(const Problem& problem, const Schedule& schedule,
                                std::span<const double> scale, InputReady input_ready) {
  if (schedule.num_ops() != problem.num_ops() || schedule.num_devices() != problem.num_devices()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the schedule has ", schedule.num_ops(), " ops on ", schedule.num_devices(),
        " devices; the problem ", problem.num_ops(), " ops on ", problem.num_devices()));
  }
  const std::span<const ScheduledSubtask> planned = schedule.subtasks();
  for (const ScheduledSubtask& s : planned) {
    const int64_t units = problem.WorkSize(s.op, s.axis);
    if (units <= 0 || s.begin < 0 || s.end > units || s.begin >= s.end) {
      return absl::InvalidArgumentError(
          absl::StrCat("op ", s.op, " (", problem.op_name(s.op), "): subtask [", s.begin, ", ",
                       s.end, ") along ", std::string(model::SplitAxisName(s.axis)),
                       " does not fit its ", units, " work units in this problem"));
    }
  }
  // In planned start order every subtask comes after its device predecessor and after the
  // subtasks of the ops it reads, so one pass sees each constraint's source first.
  std::vector<size_t> order(planned.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // Ties (zero-length subtasks) go by end, then op id (ops are numbered in graph order).
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const ScheduledSubtask& x = planned[a];
    const ScheduledSubtask& y = planned[b];
    return std::tie(x.start_us, x.end_us, x.op, a) < std::tie(y.start_us, y.end_us, y.op, b);
  });
  std::vector<double> device_free(static_cast<size_t>(problem.num_devices()), 0.0);
  // Per op: its subtasks' (device, end) as re-timed so far.
  std::vector<std::vector<std::pair<int, double>>> done(static_cast<size_t>(problem.num_ops()));
  Schedule out(problem.num_ops(), problem.num_devices());
  for (OpId op = 0; op < problem.num_ops(); ++op) out.SetPlan(op, schedule.plan(op));
  for (size_t i : order) {
    ScheduledSubtask s = planned[i];
    double start = device_free[static_cast<size_t>(s.device)];
    const auto preds = problem.preds(s.op);
    const auto transfer = problem.pred_transfer_us(s.op);
    for (size_t k = 0; k < preds.size(); ++k) {
      for (const auto& [device, end] : done[static_cast<size_t>(preds[k])]) {
        start = std::max(start, device == s.device
                                    ? end
                                    : input_ready(transfer[k], device, s.device, end,
                                                  device_free[static_cast<size_t>(s.device)]));
      }
    }
    s.start_us = start;
    s.end_us = start + problem.LatencyUs(s.op, s.axis, s.end - s.begin, s.device) *
                           scale[static_cast<size_t>(s.device)];
    device_free[static_cast<size_t>(s.device)] = s.end_us;
    done[static_cast<size_t>(s.op)].emplace_back(s.device, s.end_us);
    out.Add(s);
  }
  return out;
}

}  // namespace

absl::StatusOr<Schedule> RetimeSchedule(const Problem& problem, const Schedule& schedule) {
  const std::vector<double> unscaled(static_cast<size_t>(problem.num_devices()), 1.0);
  return Retime(problem, schedule, unscaled,
                [&](double transfer_us, int from, int to, double end, double) {
                  return end + problem.EdgeCostUs(transfer_us, from, to);
                });
}

absl::StatusOr<Schedule> RetimeByWaits(const Problem& problem, const Schedule& schedule) {
  std::vector<bool> used(static_cast<size_t>(problem.num_devices()), false);
  for (const ScheduledSubtask& s : schedule.subtasks()) {
    if (s.device >= 0 && s.device < problem.num_devices())
      used[static_cast<size_t>(s.device)] = true;
  }
  const bool co_running = std::count(used.begin(), used.end(), true) >= 2;
  std::vector<double> scale(used.size(), 1.0);
  for (size_t d = 0; co_running && d < scale.size(); ++d) {
    const double f = problem.CoRunFactor(static_cast<int>(d));
    scale[d] = std::isfinite(f) && f > 0 ? f : 1.0;
  }
  return Retime(problem, schedule, scale,
                [&](double transfer_us, int from, int to, double end, double device_free) {
                  const double arrival = end + (problem.SameDomain(from, to) ? 0.0 : transfer_us);
                  const double idle_us = arrival - device_free;
                  if (idle_us <= 0) return arrival;
                  const double hand_off = problem.HandOffUs(from, to, idle_us);
                  return arrival + (std::isfinite(hand_off) ? std::max(0.0, hand_off) : 0.0);
                });
}

}  // namespace psched::scheduler
