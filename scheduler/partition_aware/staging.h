// Stages of the iterative search (paper sec. 5.2): global join points, and the split of
// the DAG into stages by HEFT-rank-guided exploration closed at a join or a size limit.
//
// A global join point is an op comparable with every other op: |Anc(i)| + |Desc(i)| =
// |V| - 1. Exploration keeps the ops whose predecessors are all explored, repeatedly takes
// the one with the largest upward rank (ties: lowest op id), and closes the current stage
// after taking a global join point or when the stage holds `max_stage_size` ops. Every
// op's predecessors therefore lie in its own or an earlier stage. Pure functions.
#pragma once

#include <span>
#include <vector>

#include "scheduler/problem.h"

namespace psched::scheduler::partition_aware {

// Per op: true when it is a global join point. O(|V|^2 / 64) time and space.
std::vector<bool> GlobalJoinPoints(const Problem& problem);

// The stages, in order; each lists its ops ascending. `rank` has one value per op
// (typically the HEFT upward rank of the unpartitioned ops). REQUIRES: max_stage_size >= 1.
std::vector<std::vector<OpId>> BuildStages(const Problem& problem, std::span<const double> rank,
                                           int max_stage_size);

}  // namespace psched::scheduler::partition_aware
