#include "scheduler/ldcp.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace psched::scheduler {
namespace {

// URank of every task in every DAGP. In DAGP p an unplaced task costs what it costs on p
// and a placed task what it costs where it was placed. An edge costs its real transfer once
// both ends are placed, else the mean transfer cost (the original edge weight when every
// device is its own domain). ws.table[t * D + p].
void DynamicRanks(const Problem& problem, ListWorkspace& ws) {
  const ExpandedGraph& g = ws.graph;
  const int num_devices = problem.num_devices();
  std::vector<double>& urank = ws.table;
  urank.assign(static_cast<size_t>(g.num_tasks()) * static_cast<size_t>(num_devices), 0.0);
  const auto ops = g.ops();
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
    const OpId op = *it;
    const auto succs = problem.succs(op);
    const auto transfer = problem.succ_transfer_us(op);
    for (int t = g.TaskBegin(op); t < g.TaskEnd(op); ++t) {
      const int placed_on = ws.task_device[static_cast<size_t>(t)];
      for (int p = 0; p < num_devices; ++p) {
        const int dev_t = placed_on >= 0 ? placed_on : p;
        double tail = 0;
        for (size_t k = 0; k < succs.size(); ++k) {
          for (int s = g.TaskBegin(succs[k]); s < g.TaskEnd(succs[k]); ++s) {
            const int dev_s = ws.task_device[static_cast<size_t>(s)];
            const double edge = placed_on >= 0 && dev_s >= 0
                                    ? problem.EdgeCostUs(transfer[k], dev_t, dev_s)
                                    : problem.MeanTransferUs(transfer[k]);
            tail = std::max(tail, edge + urank[static_cast<size_t>(s) * num_devices + p]);
          }
        }
        urank[static_cast<size_t>(t) * num_devices + p] = g.cost(t, dev_t) + tail;
      }
    }
  }
}

}  // namespace

absl::Status LdcpScheduler::PlaceAll(const Problem& problem, Workspace& ws) const {
  const ExpandedGraph& g = ws.graph;
  const int num_devices = problem.num_devices();
  ws.InitReady(problem);
  for (int step = 0; step < g.num_tasks(); ++step) {
    DynamicRanks(problem, ws);
    int next = -1;
    double next_rank = 0;
    for (int t = 0; t < g.num_tasks(); ++t) {
      if (!ws.IsReady(t)) continue;
      for (int p = 0; p < num_devices; ++p) {
        const double r = ws.table[static_cast<size_t>(t) * num_devices + p];
        if (next < 0 || r > next_rank) {
          next = t;
          next_rank = r;
        }
      }
    }
    if (next < 0) return absl::InternalError("ldcp: no ready task left");
    const Placement best = ws.BestEft(problem, next);
    if (best.device < 0) {
      return absl::InternalError(absl::StrCat("ldcp: no free device for op ", g.task(next).op));
    }
    ws.Place(next, best);
  }
  return absl::OkStatus();
}

}  // namespace psched::scheduler
