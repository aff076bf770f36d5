#include "scheduler/retime.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "scheduler/co_run_overlap.h"

namespace psched::scheduler {
namespace {

// When a subtask on `to` whose device is free at `device_free` may start after an input from
// `from` (!= `to`) that ended at `end` over an edge of `transfer_us`.
using InputReady =
    absl::FunctionRef<double(double transfer_us, int from, int to, double end, double device_free)>;

// `scale[i]`: the schedule's subtask i lasts this many times its prediction (empty: 1 for all).
// `gap_us[d][synced]`: what a subtask of device d waits after the device's previous one, [1] one
// with a sync kernel before it in a GPU queue - an input from another device, or the previous
// subtask feeding another device (empty: none).
// With `combine_partials`, an op split along input channels completes Problem::CombineUs after
// its slices end, on the device of the one placed last (the runtime adds the partial sums on
// the device whose slice ends last). The result's subtasks come in planned start order;
// `source`, when given, receives the index into schedule.subtasks() of each.
absl::StatusOr<Schedule> Retime(const Problem& problem, const Schedule& schedule,
                                std::span<const double> scale,
                                std::span<const std::array<double, 2>> gap_us,
                                InputReady input_ready, bool combine_partials,
                                std::vector<size_t>* source = nullptr) {
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
  // Per device, the op of its last subtask so far (-1: none yet); per op, its devices (bits).
  std::vector<OpId> previous(device_free.size(), -1);
  std::vector<uint64_t> devices_of(static_cast<size_t>(problem.num_ops()), 0);
  for (const ScheduledSubtask& s : planned) {
    devices_of[static_cast<size_t>(s.op)] |= uint64_t{1} << s.device;
  }
  // Per op: its subtasks' (device, end) as re-timed so far.
  std::vector<std::vector<std::pair<int, double>>> done(static_cast<size_t>(problem.num_ops()));
  // Per op: its cin slices, and how many are still to be placed.
  std::vector<int> cin_slices(static_cast<size_t>(problem.num_ops()), 0);
  if (combine_partials) {
    for (const ScheduledSubtask& s : planned) {
      if (s.axis == model::SplitAxis::kInputChannels) ++cin_slices[static_cast<size_t>(s.op)];
    }
  }
  std::vector<int> cin_left = cin_slices;
  if (source != nullptr) *source = order;
  Schedule out(problem.num_ops(), problem.num_devices());
  for (OpId op = 0; op < problem.num_ops(); ++op) out.SetPlan(op, schedule.plan(op));
  for (size_t i : order) {
    ScheduledSubtask s = planned[i];
    const auto dev = static_cast<size_t>(s.device);
    double start = device_free[dev];
    const auto preds = problem.preds(s.op);
    const auto transfer = problem.pred_transfer_us(s.op);
    if (previous[dev] >= 0 && dev < gap_us.size()) {
      const bool synced =
          SyncKernelBetween(preds, problem.succs(previous[dev]), devices_of, s.device);
      start += gap_us[dev][synced ? 1 : 0];
    }
    previous[dev] = s.op;
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
                           (scale.empty() ? 1.0 : scale[i]);
    std::vector<std::pair<int, double>>& op_done = done[static_cast<size_t>(s.op)];
    const size_t o = static_cast<size_t>(s.op);
    if (cin_slices[o] > 1 && --cin_left[o] == 0) {
      // The op's last slice adds the others' partial sums, after they end too. It is charged to
      // the slice placed last, which is almost always the last to end (slices of one op start
      // together and are balanced); otherwise its device is held until the others end.
      double others_end = 0;
      for (const auto& [device, end] : op_done) others_end = std::max(others_end, end);
      s.end_us =
          std::max(s.end_us, others_end) + problem.CombineUs(s.op, s.device, cin_slices[o] - 1);
    }
    device_free[static_cast<size_t>(s.device)] = s.end_us;
    op_done.emplace_back(s.device, s.end_us);
    out.Add(s);
  }
  return out;
}

}  // namespace

bool SyncKernelBetween(std::span<const OpId> preds, std::span<const OpId> previous_succs,
                       std::span<const uint64_t> devices_of, int device) {
  const uint64_t others = ~(uint64_t{1} << device);
  auto on_others = [&](std::span<const OpId> ops) {
    return std::any_of(ops.begin(), ops.end(),
                       [&](OpId o) { return (devices_of[static_cast<size_t>(o)] & others) != 0; });
  };
  return on_others(preds) || on_others(previous_succs);
}

absl::StatusOr<Schedule> RetimeSchedule(const Problem& problem, const Schedule& schedule) {
  return Retime(
      problem, schedule, {}, {},
      [&](double transfer_us, int from, int to, double end, double) {
        return end + problem.EdgeCostUs(transfer_us, from, to);
      },
      /*combine_partials=*/false);
}

absl::StatusOr<Schedule> RetimeByWaits(const Problem& problem, const Schedule& schedule) {
  std::vector<bool> used(static_cast<size_t>(problem.num_devices()), false);
  for (const ScheduledSubtask& s : schedule.subtasks()) {
    if (s.device >= 0 && s.device < problem.num_devices())
      used[static_cast<size_t>(s.device)] = true;
  }
  std::vector<double> co_run(used.size(), 1.0);
  for (size_t d = 0; d < co_run.size(); ++d) {
    const double f = problem.CoRunFactor(static_cast<int>(d));
    co_run[d] = std::isfinite(f) && f > 0 ? f : 1.0;
  }
  const bool co_running =
      std::count(used.begin(), used.end(), true) >= 2 &&
      std::any_of(co_run.begin(), co_run.end(), [](double f) { return f != 1; });
  auto by_waits = [&](double transfer_us, int from, int to, double end, double device_free) {
    const double arrival = end + (problem.SameDomain(from, to) ? 0.0 : transfer_us);
    const double idle_us = arrival - device_free;
    if (idle_us <= 0) return arrival;
    const double hand_off = problem.HandOffUs(from, to, idle_us);
    return arrival + (std::isfinite(hand_off) ? std::max(0.0, hand_off) : 0.0);
  };
  // Gaps only in plans on two devices or more: a lone GPU's queue runs no sync kernels, and its
  // gaps were a fifth of a shared one's.
  const bool multi_device = std::count(used.begin(), used.end(), true) >= 2;
  std::vector<std::array<double, 2>> gap_us(multi_device ? used.size() : 0, {0, 0});
  for (size_t d = 0; d < gap_us.size(); ++d) {
    for (bool synced : {false, true}) {
      const double gap = problem.SubtaskGapUs(static_cast<int>(d), synced);
      gap_us[d][synced ? 1 : 0] = std::isfinite(gap) && gap > 0 ? gap : 0.0;
    }
  }
  std::vector<size_t> source;
  absl::StatusOr<Schedule> run =
      Retime(problem, schedule, {}, gap_us, by_waits, /*combine_partials=*/true, &source);
  if (!run.ok() || !co_running) return run;
  // Each subtask slowed by its device's co-run factor over the share of it that overlaps work on
  // another device. Overlaps move as durations grow, so this iterates to a fixed point; the
  // change per round shrinks with the overlapped share, and a few rounds settle every plan seen.
  constexpr int kMaxRounds = 8;
  constexpr double kSettledUs = 0.01;
  std::vector<double> scale(schedule.subtasks().size(), 1.0);
  std::vector<BusyInterval> busy;
  for (int round = 0; round < kMaxRounds; ++round) {
    busy.clear();
    for (const ScheduledSubtask& s : run->subtasks()) {
      busy.push_back({.device = s.device, .start = s.start_us, .end = s.end_us});
    }
    const std::vector<double> overlap = OverlapFractions(busy);
    for (size_t j = 0; j < source.size(); ++j) {
      const double f = co_run[static_cast<size_t>(run->subtasks()[j].device)];
      scale[source[j]] = 1 + (f - 1) * overlap[j];
    }
    absl::StatusOr<Schedule> next =
        Retime(problem, schedule, scale, gap_us, by_waits, /*combine_partials=*/true, &source);
    if (!next.ok()) return next;
    const bool settled = std::abs(next->makespan_us() - run->makespan_us()) < kSettledUs;
    run = std::move(next);
    if (settled) break;
  }
  return run;
}

}  // namespace psched::scheduler
