#include "scheduler/exact/random_task_graphs.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace psched::scheduler::exact::testing {

platform::Platform RandomPlatform(const RandomTaskGraphOptions& options) {
  platform::Platform p;
  p.name = absl::StrCat("random", options.devices);
  for (int d = 0; d < options.devices; ++d) {
    platform::DeviceSpec spec;
    spec.name = d == 0 ? "gpu" : d == 1 ? "cpu.l" : d == 2 ? "cpu.m" : absl::StrCat("cpu.", d);
    spec.kind = d == 0 ? platform::DeviceKind::kGpu : platform::DeviceKind::kCpu;
    spec.memory_domain = d % std::max(1, options.domains);
    p.devices.push_back(spec);
  }
  return p;
}

TaskGraph RandomTaskGraph(const RandomTaskGraphOptions& options, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  const int n = options.tasks;
  const int D = options.devices;
  std::vector<double> speed(static_cast<size_t>(D));
  for (int d = 0; d < D; ++d) speed[static_cast<size_t>(d)] = d == 0 ? 1.0 : uniform(2.0, 5.0);
  std::vector<double> overhead(static_cast<size_t>(D));
  for (int d = 0; d < D; ++d) overhead[static_cast<size_t>(d)] = d == 0 ? 3.0 : 1.0;

  TaskGraph g;
  g.splits.resize(static_cast<size_t>(n));
  std::vector<int> order(static_cast<size_t>(n));
  for (int t = 0; t < n; ++t) order[static_cast<size_t>(t)] = t;
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<bool> partitionable(static_cast<size_t>(n), false);
  for (int k = 0; k < std::min(n, options.partitionable); ++k) partitionable[static_cast<size_t>(order[static_cast<size_t>(k)])] = true;
  const model::SplitAxis axes[] = {model::SplitAxis::kOutputChannels, model::SplitAxis::kInputChannels,
                                   model::SplitAxis::kRows};
  for (int t = 0; t < n; ++t) {
    const double base = uniform(10, 100);
    std::vector<double> whole(static_cast<size_t>(D));
    for (int d = 0; d < D; ++d) {
      whole[static_cast<size_t>(d)] = std::max(1.0, std::round(base * speed[static_cast<size_t>(d)] * uniform(0.7, 1.3)));
    }
    g.cost.push_back(whole);
    if (partitionable[static_cast<size_t>(t)]) {
      for (int a = 0; a < std::clamp(options.axes, 1, 3); ++a) {
        TaskGraph::Split split;
        split.axis = axes[a];
        const int units = static_cast<int>(std::uniform_int_distribution<int>(2, std::max(2, options.max_units))(rng));
        for (int u = 1; u <= units; ++u) {
          std::vector<double> row(static_cast<size_t>(D));
          for (int d = 0; d < D; ++d) {
            row[static_cast<size_t>(d)] = overhead[static_cast<size_t>(d)] +
                std::ceil(whole[static_cast<size_t>(d)] * uniform(0.9, 1.1) * u / units);
          }
          split.cost.push_back(row);
        }
        g.splits[static_cast<size_t>(t)].push_back(std::move(split));
      }
    }
    int inputs = 0;
    for (int p = t - 1; p >= 0 && inputs < 3; --p) {
      if (uniform(0, 1) < options.edge_probability) {
        const double transfer = options.max_transfer_us > 0
                                    ? std::round(uniform(0, options.max_transfer_us))
                                    : 0.0;
        g.edges.push_back({p, t, transfer});
        ++inputs;
      }
    }
  }
  std::sort(g.edges.begin(), g.edges.end(), [](const TaskGraph::Edge& a, const TaskGraph::Edge& b) {
    return a.to != b.to ? a.to < b.to : a.from < b.from;
  });
  return g;
}

}  // namespace psched::scheduler::exact::testing
