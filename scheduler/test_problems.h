// Small scheduling instances shared by the scheduler tests.
#pragma once

#include "model/graph.h"
#include "scheduler/problem.h"

namespace psched::scheduler::testing {

// `n` devices named d0..d{n-1}; each in its own memory domain when `separate_domains`.
platform::Platform MakePlatform(int n, bool separate_domains);

// The 10-task, 3-processor example of Topcuoglu, Hariri and Wu (2002, Fig. 2): tasks
// 1..10 become 0..9; every processor is its own memory domain, so an edge costs its
// communication cost exactly when its ends run on different processors.
Problem TopcuogluExample();

// A fork-join of convolutions: stem conv -> `branches` parallel 3x3 convs -> concat ->
// 1x1 conv. Every conv is 28x28, 64 -> 64 channels; only shapes are set (no weights).
model::Graph ConvForkJoin(int branches);

// Builds a task graph problem from a cost table and (from, to, transfer) edges.
Problem TaskProblem(std::vector<std::vector<double>> cost, std::vector<TaskGraph::Edge> edges,
                    bool separate_domains = false);

}  // namespace psched::scheduler::testing
