#include "scheduler/psls.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "scheduler/heft.h"

namespace psched::scheduler {

absl::Status PslsScheduler::PlaceAll(const Problem& problem, Workspace& ws) const {
  const ExpandedGraph& g = ws.graph;
  const int num_devices = problem.num_devices();
  const int n = g.num_tasks();
  // Phase 1: pre-schedule with HEFT; keep its devices and start times.
  if (absl::Status s = PlaceHeft(problem, ws); !s.ok()) return s;
  std::vector<int>& pre_device = ws.task_marks;
  pre_device.assign(ws.task_device.begin(), ws.task_device.end());
  std::vector<double>& pre_start = ws.rank2;
  pre_start.assign(ws.task_start.begin(), ws.task_start.end());
  double pre_makespan = 0;
  for (int t = 0; t < n; ++t) {
    pre_makespan = std::max(pre_makespan, pre_start[static_cast<size_t>(t)] +
                                              g.cost(t, pre_device[static_cast<size_t>(t)]));
  }
  // Phase 2: remaining length of every task under the pre-schedule's devices.
  std::vector<double>& rank = ws.rank;
  rank.assign(static_cast<size_t>(n), 0.0);
  const auto ops = g.ops();
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
    const auto succs = problem.succs(*it);
    const auto transfer = problem.succ_transfer_us(*it);
    for (int t = g.TaskBegin(*it); t < g.TaskEnd(*it); ++t) {
      const int dt = pre_device[static_cast<size_t>(t)];
      double tail = 0;
      for (size_t k = 0; k < succs.size(); ++k) {
        for (int s = g.TaskBegin(succs[k]); s < g.TaskEnd(succs[k]); ++s) {
          tail = std::max(tail,
                          problem.EdgeCostUs(transfer[k], dt, pre_device[static_cast<size_t>(s)]) +
                              rank[static_cast<size_t>(s)]);
        }
      }
      rank[static_cast<size_t>(t)] = g.cost(t, dt) + tail;
    }
  }
  // Phase 3: ready list by remaining length; device by finish + remaining successor length.
  if (absl::Status s = ws.Restart(); !s.ok()) return s;
  ws.InitReady(problem);
  double makespan = 0;
  for (int step = 0; step < n; ++step) {
    int next = -1;
    for (int t = 0; t < n; ++t) {
      if (ws.IsReady(t) &&
          (next < 0 || rank[static_cast<size_t>(t)] > rank[static_cast<size_t>(next)]))
        next = t;
    }
    if (next < 0) return absl::InternalError("psls: no ready task left");
    const OpId op = g.task(next).op;
    const auto succs = problem.succs(op);
    const auto transfer = problem.succ_transfer_us(op);
    Placement best;
    double best_score = std::numeric_limits<double>::infinity();
    for (int d = 0; d < num_devices; ++d) {
      if (ws.SiblingOn(op, d)) continue;
      const Placement p = ws.EftOn(problem, next, d);
      double tail = 0;
      for (size_t k = 0; k < succs.size(); ++k) {
        for (int s = g.TaskBegin(succs[k]); s < g.TaskEnd(succs[k]); ++s) {
          tail = std::max(tail,
                          problem.EdgeCostUs(transfer[k], d, pre_device[static_cast<size_t>(s)]) +
                              rank[static_cast<size_t>(s)]);
        }
      }
      const double score = p.end_us + tail;
      if (best.device < 0 || score < best_score ||
          (score == best_score && p.end_us < best.end_us)) {
        best = p;
        best_score = score;
      }
    }
    if (best.device < 0)
      return absl::InternalError(absl::StrCat("psls: no free device for op ", op));
    ws.Place(next, best);
    makespan = std::max(makespan, best.end_us);
  }
  if (makespan <= pre_makespan) return absl::OkStatus();
  // The pre-schedule was better: restore it.
  if (absl::Status s = ws.Restart(); !s.ok()) return s;
  for (int t = 0; t < n; ++t) {
    const int d = pre_device[static_cast<size_t>(t)];
    const double start = pre_start[static_cast<size_t>(t)];
    ws.Place(t, Placement{d, start, start + g.cost(t, d)});
  }
  return absl::OkStatus();
}

}  // namespace psched::scheduler
