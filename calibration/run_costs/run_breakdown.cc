#include "calibration/run_costs/run_breakdown.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <tuple>

#include "model/split.h"
#include "scheduler/co_run_overlap.h"
#include "scheduler/retime.h"

namespace psched::calibration {
namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The subtasks in measured start order: every subtask comes after those of its predecessor
// ops (a subtask starts only once they have ended).
std::vector<const executor::runtime::SubtaskTiming*> InStartOrder(
    std::span<const executor::runtime::SubtaskTiming> timings) {
  std::vector<const executor::runtime::SubtaskTiming*> order;
  for (const executor::runtime::SubtaskTiming& t : timings) order.push_back(&t);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto* a, const auto* b) { return a->start_ns < b->start_ns; });
  return order;
}

size_t DeviceCount(std::span<const executor::runtime::SubtaskTiming> timings) {
  int devices = 0;
  for (const executor::runtime::SubtaskTiming& t : timings)
    devices = std::max(devices, t.device + 1);
  return static_cast<size_t>(devices);
}

// Per op, the devices its subtasks ran on (bit d: device d).
std::vector<uint64_t> DevicesOfOps(size_t num_ops,
                                   std::span<const executor::runtime::SubtaskTiming> timings) {
  std::vector<uint64_t> devices(num_ops, 0);
  for (const executor::runtime::SubtaskTiming& t : timings) {
    devices[static_cast<size_t>(t.step.op)] |= uint64_t{1} << t.device;
  }
  return devices;
}

// Whether a subtask of `op` on `device` right after one of `previous` there has a sync kernel
// between them (scheduler::SyncKernelBetween).
bool SyncedGap(const model::Graph& graph, const std::vector<std::vector<model::OpId>>& successors,
               const std::vector<uint64_t>& devices_of, model::OpId op, model::OpId previous,
               int device) {
  return scheduler::SyncKernelBetween(
      graph.Predecessors(op), successors[static_cast<size_t>(previous)], devices_of, device);
}

}  // namespace

double ReplayUs(const model::Graph& graph,
                std::span<const executor::runtime::SubtaskTiming> timings, const SyncCost& sync,
                std::span<const std::array<double, 2>> gap_us) {
  std::vector<double> device_free(DeviceCount(timings), 0);
  // Per device, the op of its last subtask so far (kInvalidId: none yet).
  std::vector<model::OpId> previous(device_free.size(), model::kInvalidId);
  const std::vector<std::vector<model::OpId>> successors =
      gap_us.empty() ? std::vector<std::vector<model::OpId>>() : graph.AllSuccessors();
  const std::vector<uint64_t> devices_of = DevicesOfOps(graph.ops.size(), timings);
  // Per op, when its subtasks ended on each device (-1: none there).
  std::vector<std::vector<double>> op_end(graph.ops.size(),
                                          std::vector<double>(device_free.size(), -1));
  double span = 0;
  for (const executor::runtime::SubtaskTiming* t : InStartOrder(timings)) {
    const auto d = static_cast<size_t>(t->device);
    double start = device_free[d];
    if (previous[d] != model::kInvalidId && d < gap_us.size()) {
      const bool synced =
          SyncedGap(graph, successors, devices_of, t->step.op, previous[d], t->device);
      start += gap_us[d][synced ? 1 : 0];
    }
    previous[d] = t->step.op;
    for (model::OpId p : graph.Predecessors(t->step.op)) {
      const std::vector<double>& ends = op_end[static_cast<size_t>(p)];
      for (size_t e = 0; e < ends.size(); ++e) {
        if (ends[e] < 0) continue;
        start = std::max(start, ends[e] + (e == d ? 0.0
                                                  : sync(static_cast<int>(e), t->device,
                                                         ends[e] - device_free[d])));
      }
    }
    device_free[d] = start + static_cast<double>(t->end_ns - t->start_ns) / 1e3;
    double& end = op_end[static_cast<size_t>(t->step.op)][d];
    end = std::max(end, device_free[d]);
    span = std::max(span, device_free[d]);
  }
  return span;
}

std::vector<std::optional<double>> PredictedDurationsUs(
    const scheduler::Schedule& schedule,
    std::span<const executor::runtime::SubtaskTiming> timings) {
  std::map<std::tuple<int, model::OpId, int64_t>, double> predicted;
  for (const scheduler::ScheduledSubtask& s : schedule.subtasks()) {
    predicted[{s.device, s.op, s.begin}] = s.end_us - s.start_us;
  }
  std::vector<std::optional<double>> out;
  out.reserve(timings.size());
  for (const executor::runtime::SubtaskTiming& t : timings) {
    const auto it = predicted.find({t.device, t.step.op, t.step.slice.begin});
    out.push_back(it == predicted.end() ? std::nullopt : std::optional<double>(it->second));
  }
  return out;
}

std::vector<double> MeasuredOverlapFractions(
    std::span<const executor::runtime::SubtaskTiming> timings) {
  std::vector<scheduler::BusyInterval> busy;
  busy.reserve(timings.size());
  for (const executor::runtime::SubtaskTiming& t : timings) {
    busy.push_back({.device = t.device,
                    .start = static_cast<double>(t.start_ns),
                    .end = static_cast<double>(t.end_ns)});
  }
  return scheduler::OverlapFractions(busy);
}

RunBreakdown BreakDownRun(const model::Graph& graph, const scheduler::Schedule& schedule,
                          std::span<const executor::runtime::SubtaskTiming> timings,
                          double wall_us) {
  RunBreakdown out;
  const auto num_devices = static_cast<size_t>(schedule.num_devices());
  out.predicted_us = schedule.makespan_us();
  out.wall_us = wall_us;
  out.measured_kernel_us.assign(num_devices, 0);
  out.predicted_kernel_us.assign(num_devices, 0);
  out.predicted_overlapped_us.assign(num_devices, 0);
  out.gap_us.assign(num_devices, {0, 0});
  out.gaps.assign(num_devices, {0, 0});
  out.replay_us = ReplayUs(graph, timings, [](int, int, double) { return 0.0; });
  const std::vector<std::optional<double>> predicted = PredictedDurationsUs(schedule, timings);
  // Share of each op's work done per device, by the plan.
  std::vector<std::vector<double>> share(graph.ops.size(), std::vector<double>(num_devices, 0));
  for (const scheduler::ScheduledSubtask& s : schedule.subtasks()) {
    const auto work = static_cast<double>(model::WorkSize(graph, s.op, s.axis));
    share[static_cast<size_t>(s.op)][static_cast<size_t>(s.device)] +=
        static_cast<double>(s.end - s.begin) / std::max(1.0, work);
  }
  const std::vector<double> overlap = MeasuredOverlapFractions(timings);
  const std::vector<const executor::runtime::SubtaskTiming*> order = InStartOrder(timings);
  std::vector<double> device_free(num_devices, 0);
  std::vector<model::OpId> previous(num_devices, model::kInvalidId);
  const std::vector<std::vector<model::OpId>> successors = graph.AllSuccessors();
  const std::vector<uint64_t> devices_of = DevicesOfOps(graph.ops.size(), timings);
  std::vector<double> op_end(graph.ops.size(), 0);
  std::vector<int> op_end_device(graph.ops.size(), -1);
  out.first_start_us = order.empty() ? 0 : static_cast<double>(order.front()->start_ns) / 1e3;
  for (const executor::runtime::SubtaskTiming* t : order) {
    const auto d = static_cast<size_t>(t->device);
    const double start = static_cast<double>(t->start_ns) / 1e3;
    const double end = static_cast<double>(t->end_ns) / 1e3;
    double inputs_ready = 0, remote = 0, inputs = 0;
    int inputs_device = -1;
    for (model::OpId p : graph.Predecessors(t->step.op)) {
      const auto pi = static_cast<size_t>(p);
      if (op_end[pi] > inputs_ready) {
        inputs_ready = op_end[pi];
        inputs_device = op_end_device[pi];
      }
      remote += 1.0 - share[pi][d];
      inputs += 1.0;
    }
    const double delay = std::max(0.0, start - std::max(device_free[d], inputs_ready));
    if (inputs_ready > device_free[d] && inputs_device >= 0 && inputs_device != t->device) {
      out.cross_delays.push_back({.delay_us = delay,
                                  .idle_us = inputs_ready - device_free[d],
                                  .from_device = inputs_device,
                                  .to_device = t->device});
    } else {
      out.local_delay_us += delay;
      if (previous[d] != model::kInvalidId) {
        const size_t synced =
            SyncedGap(graph, successors, devices_of, t->step.op, previous[d], t->device) ? 1 : 0;
        out.gap_us[d][synced] += delay;
        out.gaps[d][synced] += 1;
      }
    }
    previous[d] = t->step.op;
    device_free[d] = end;
    if (end > op_end[static_cast<size_t>(t->step.op)]) {
      op_end[static_cast<size_t>(t->step.op)] = end;
      op_end_device[static_cast<size_t>(t->step.op)] = t->device;
    }
    out.trace_end_us = std::max(out.trace_end_us, end);
    const auto index = static_cast<size_t>(t - timings.data());
    const double predicted_us = predicted[index].value_or(0);
    const double duration = end - start;
    out.measured_kernel_us[d] += duration;
    out.predicted_kernel_us[d] += predicted_us;
    out.predicted_overlapped_us[d] += predicted_us * overlap[index];
    const double f = inputs > 0 ? remote / inputs : 0;
    const size_t bucket = f < 1e-6 ? 0 : (f > 1 - 1e-6 ? 2 : 1);
    out.measured_by_locality[bucket] += duration;
    out.predicted_by_locality[bucket] += predicted_us;
    if (t->step.slice.axis == model::SplitAxis::kNone) {
      out.measured_whole_us += duration;
      out.predicted_whole_us += predicted_us;
    } else {
      out.measured_slice_us += duration;
      out.predicted_slice_us += predicted_us;
    }
  }
  return out;
}

RunBreakdown MedianBreakdown(std::span<const RunBreakdown> runs) {
  RunBreakdown out;
  if (runs.empty()) return out;
  auto median = [&](auto field) {
    std::vector<double> v;
    for (const RunBreakdown& r : runs) v.push_back(static_cast<double>(field(r)));
    return Median(std::move(v));
  };
  out.predicted_us = median([](const RunBreakdown& r) { return r.predicted_us; });
  out.replay_us = median([](const RunBreakdown& r) { return r.replay_us; });
  out.trace_end_us = median([](const RunBreakdown& r) { return r.trace_end_us; });
  out.first_start_us = median([](const RunBreakdown& r) { return r.first_start_us; });
  out.wall_us = median([](const RunBreakdown& r) { return r.wall_us; });
  for (const RunBreakdown& r : runs) {
    out.cross_delays.insert(out.cross_delays.end(), r.cross_delays.begin(), r.cross_delays.end());
  }
  out.local_delay_us = median([](const RunBreakdown& r) { return r.local_delay_us; });
  out.measured_whole_us = median([](const RunBreakdown& r) { return r.measured_whole_us; });
  out.predicted_whole_us = median([](const RunBreakdown& r) { return r.predicted_whole_us; });
  out.measured_slice_us = median([](const RunBreakdown& r) { return r.measured_slice_us; });
  out.predicted_slice_us = median([](const RunBreakdown& r) { return r.predicted_slice_us; });
  for (size_t b = 0; b < 3; ++b) {
    out.measured_by_locality[b] =
        median([b](const RunBreakdown& r) { return r.measured_by_locality[b]; });
    out.predicted_by_locality[b] =
        median([b](const RunBreakdown& r) { return r.predicted_by_locality[b]; });
  }
  const size_t devices = runs.front().measured_kernel_us.size();
  for (size_t d = 0; d < devices; ++d) {
    out.measured_kernel_us.push_back(
        median([d](const RunBreakdown& r) { return r.measured_kernel_us[d]; }));
    out.predicted_kernel_us.push_back(
        median([d](const RunBreakdown& r) { return r.predicted_kernel_us[d]; }));
    out.predicted_overlapped_us.push_back(median([d](const RunBreakdown& r) {
      return d < r.predicted_overlapped_us.size() ? r.predicted_overlapped_us[d] : 0.0;
    }));
    std::array<double, 2> gap_us{}, gaps{};
    for (size_t k = 0; k < 2; ++k) {
      gap_us[k] = median(
          [d, k](const RunBreakdown& r) { return d < r.gap_us.size() ? r.gap_us[d][k] : 0.0; });
      gaps[k] =
          median([d, k](const RunBreakdown& r) { return d < r.gaps.size() ? r.gaps[d][k] : 0.0; });
    }
    out.gap_us.push_back(gap_us);
    out.gaps.push_back(gaps);
  }
  return out;
}

}  // namespace psched::calibration
