#include "executor/runtime/plan_order.h"

#include <cstdint>
#include <vector>

namespace psched::executor::runtime {

OpOrder PlanOrder(const model::Graph& graph, const ExecutionPlan& plan) {
  const int num_ops = static_cast<int>(graph.ops.size());
  // Steps numbered device by device, in queue order.
  std::vector<std::vector<int>> steps_of_op(static_cast<size_t>(num_ops));
  std::vector<std::vector<int>> succs;
  std::vector<model::OpId> op_of;
  for (const std::vector<PlanStep>& queue : plan.device_steps) {
    for (size_t i = 0; i < queue.size(); ++i) {
      const int s = static_cast<int>(op_of.size());
      op_of.push_back(queue[i].op);
      steps_of_op[static_cast<size_t>(queue[i].op)].push_back(s);
      succs.emplace_back();
      if (i > 0) succs[static_cast<size_t>(s - 1)].push_back(s);
    }
  }
  const size_t num_steps = op_of.size();
  for (size_t s = 0; s < num_steps; ++s) {
    for (model::OpId pred : graph.Predecessors(op_of[s])) {
      for (int p : steps_of_op[static_cast<size_t>(pred)]) {
        succs[static_cast<size_t>(p)].push_back(static_cast<int>(s));
      }
    }
  }
  // Kahn's order; a valid plan's step graph is acyclic.
  std::vector<int> indegree(num_steps, 0);
  for (const std::vector<int>& out : succs) {
    for (int u : out) ++indegree[static_cast<size_t>(u)];
  }
  std::vector<int> topo;
  for (size_t s = 0; s < num_steps; ++s) {
    if (indegree[s] == 0) topo.push_back(static_cast<int>(s));
  }
  for (size_t i = 0; i < topo.size(); ++i) {
    for (int u : succs[static_cast<size_t>(topo[i])]) {
      if (--indegree[static_cast<size_t>(u)] == 0) topo.push_back(u);
    }
  }
  // reach[s]: the steps that start after s has finished, in every run.
  const size_t words = (num_steps + 63) / 64;
  std::vector<uint64_t> reach(num_steps * words, 0);
  auto row = [&](size_t s) { return reach.data() + s * words; };
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    uint64_t* r = row(static_cast<size_t>(*it));
    for (int u : succs[static_cast<size_t>(*it)]) {
      const uint64_t* ru = row(static_cast<size_t>(u));
      for (size_t w = 0; w < words; ++w) r[w] |= ru[w];
      r[static_cast<size_t>(u) / 64] |= uint64_t{1} << (static_cast<size_t>(u) % 64);
    }
  }
  OpOrder order(num_ops);
  std::vector<uint64_t> after_all(words);
  for (model::OpId a = 0; a < num_ops; ++a) {
    const std::vector<int>& steps = steps_of_op[static_cast<size_t>(a)];
    if (steps.empty()) continue;
    // Steps reached from every step of `a`.
    after_all.assign(words, ~uint64_t{0});
    for (int s : steps) {
      const uint64_t* r = row(static_cast<size_t>(s));
      for (size_t w = 0; w < words; ++w) after_all[w] &= r[w];
    }
    for (model::OpId b = 0; b < num_ops; ++b) {
      const std::vector<int>& later = steps_of_op[static_cast<size_t>(b)];
      if (b == a || later.empty()) continue;
      bool all = true;
      for (int s : later) {
        all =
            all && ((after_all[static_cast<size_t>(s) / 64] >> (static_cast<size_t>(s) % 64)) & 1u);
      }
      if (all) order.Order(a, b);
    }
  }
  return order;
}

}  // namespace psched::executor::runtime
