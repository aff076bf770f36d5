// Priority ranks shared by the list schedulers, over the tasks of an expanded graph.
//
// Costs are averaged over devices (ExpandedGraph::mean_cost) and edges use the mean
// transfer cost over ordered pairs of distinct devices (Problem::MeanTransferUs), as in
// HEFT (Topcuoglu et al. 2002). Successors and predecessors outside the graph's scope are
// ignored. The output vectors are resized, so reused vectors do not allocate.
#pragma once

#include <vector>

#include "scheduler/expanded_graph.h"
#include "scheduler/problem.h"

namespace psched::scheduler {

// rank_u(t) = w(t) + max over successor tasks s of (c(t, s) + rank_u(s)); 0 max for exits.
// `op_max` receives, per op, the largest rank of its tasks.
void UpwardRanks(const Problem& problem, const ExpandedGraph& graph, std::vector<double>& rank,
                 std::vector<double>& op_max);

// rank_d(t) = max over predecessor tasks p of (rank_d(p) + w(p) + c(p, t)); 0 for entries.
// `op_max` receives, per op, the largest rank_d(p) + w(p) over its tasks.
void DownwardRanks(const Problem& problem, const ExpandedGraph& graph, std::vector<double>& rank,
                   std::vector<double>& op_max);

}  // namespace psched::scheduler
