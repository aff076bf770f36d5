#include "scheduler/peft.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"

namespace psched::scheduler {

absl::Status PeftScheduler::PlaceAll(const Problem& problem, Workspace& ws) const {
  const ExpandedGraph& g = ws.graph;
  const int num_devices = problem.num_devices();
  // OCT per op and device (siblings share successors, hence their OCT row).
  std::vector<double>& oct = ws.table;
  oct.assign(static_cast<size_t>(problem.num_ops()) * static_cast<size_t>(num_devices), 0.0);
  const auto ops = g.ops();
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
    const OpId op = *it;
    const auto succs = problem.succs(op);
    const auto transfer = problem.succ_transfer_us(op);
    for (int p = 0; p < num_devices; ++p) {
      double worst = 0;
      for (size_t k = 0; k < succs.size(); ++k) {
        const OpId s = succs[k];
        for (int c = g.TaskBegin(s); c < g.TaskEnd(s); ++c) {
          double cheapest = std::numeric_limits<double>::infinity();
          for (int w = 0; w < num_devices; ++w) {
            cheapest = std::min(cheapest, oct[static_cast<size_t>(s) * num_devices + w] +
                                              g.cost(c, w) + problem.EdgeCostUs(transfer[k], p, w));
          }
          worst = std::max(worst, cheapest);
        }
      }
      oct[static_cast<size_t>(op) * num_devices + p] = worst;
    }
  }
  std::vector<double>& rank = ws.rank;
  rank.assign(static_cast<size_t>(g.num_tasks()), 0.0);
  for (int t = 0; t < g.num_tasks(); ++t) {
    double sum = 0;
    for (int p = 0; p < num_devices; ++p)
      sum += oct[static_cast<size_t>(g.task(t).op) * num_devices + p];
    rank[static_cast<size_t>(t)] = sum / num_devices;
  }
  ws.InitReady(problem);
  for (int step = 0; step < g.num_tasks(); ++step) {
    int next = -1;
    for (int t = 0; t < g.num_tasks(); ++t) {
      if (ws.IsReady(t) &&
          (next < 0 || rank[static_cast<size_t>(t)] > rank[static_cast<size_t>(next)]))
        next = t;
    }
    if (next < 0) return absl::InternalError("peft: no ready task left");
    const OpId op = g.task(next).op;
    Placement best;
    double best_score = std::numeric_limits<double>::infinity();
    for (int d = 0; d < num_devices; ++d) {
      if (ws.SiblingOn(op, d)) continue;
      const Placement p = ws.EftOn(problem, next, d);
      const double score = p.end_us + oct[static_cast<size_t>(op) * num_devices + d];
      if (best.device < 0 || score < best_score ||
          (score == best_score && p.end_us < best.end_us)) {
        best = p;
        best_score = score;
      }
    }
    if (best.device < 0) {
      return absl::InternalError(absl::StrCat("peft: no free device for op ", op));
    }
    ws.Place(next, best);
  }
  return absl::OkStatus();
}

}  // namespace psched::scheduler
