#include "scheduler/ranks.h"

#include <algorithm>

namespace psched::scheduler {

void UpwardRanks(const Problem& problem, const ExpandedGraph& graph, std::vector<double>& rank,
                 std::vector<double>& op_max) {
  rank.assign(static_cast<size_t>(graph.num_tasks()), 0.0);
  op_max.assign(static_cast<size_t>(problem.num_ops()), 0.0);
  const auto ops = graph.ops();
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
    const OpId op = *it;
    const auto succs = problem.succs(op);
    const auto transfer = problem.succ_transfer_us(op);
    double tail = 0;
    for (size_t k = 0; k < succs.size(); ++k) {
      if (!graph.InScope(succs[k])) continue;
      tail = std::max(tail,
                      problem.MeanTransferUs(transfer[k]) + op_max[static_cast<size_t>(succs[k])]);
    }
    double best = 0;
    for (int t = graph.TaskBegin(op); t < graph.TaskEnd(op); ++t) {
      rank[static_cast<size_t>(t)] = graph.mean_cost(t) + tail;
      best = std::max(best, rank[static_cast<size_t>(t)]);
    }
    op_max[static_cast<size_t>(op)] = best;
  }
}

void DownwardRanks(const Problem& problem, const ExpandedGraph& graph, std::vector<double>& rank,
                   std::vector<double>& op_max) {
  rank.assign(static_cast<size_t>(graph.num_tasks()), 0.0);
  op_max.assign(static_cast<size_t>(problem.num_ops()), 0.0);
  for (OpId op : graph.ops()) {
    const auto preds = problem.preds(op);
    const auto transfer = problem.pred_transfer_us(op);
    double head = 0;
    for (size_t k = 0; k < preds.size(); ++k) {
      if (!graph.InScope(preds[k])) continue;
      head = std::max(head,
                      op_max[static_cast<size_t>(preds[k])] + problem.MeanTransferUs(transfer[k]));
    }
    double best = 0;
    for (int t = graph.TaskBegin(op); t < graph.TaskEnd(op); ++t) {
      rank[static_cast<size_t>(t)] = head;
      best = std::max(best, head + graph.mean_cost(t));
    }
    op_max[static_cast<size_t>(op)] = best;
  }
}

}  // namespace psched::scheduler
