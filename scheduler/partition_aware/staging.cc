#include "scheduler/partition_aware/staging.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <queue>
#include <utility>

namespace psched::scheduler::partition_aware {

std::vector<bool> GlobalJoinPoints(const Problem& problem) {
  const int n = problem.num_ops();
  const size_t words = (static_cast<size_t>(n) + 63) / 64;
  // One bitset row per op; ops are topological, so one pass each way fills them.
  std::vector<uint64_t> anc(static_cast<size_t>(n) * words, 0);
  std::vector<uint64_t> desc(static_cast<size_t>(n) * words, 0);
  auto row = [words](std::vector<uint64_t>& bits, int op) { return bits.data() + static_cast<size_t>(op) * words; };
  for (OpId op = 0; op < n; ++op) {
    uint64_t* mine = row(anc, op);
    for (OpId p : problem.preds(op)) {
      const uint64_t* theirs = row(anc, p);
      for (size_t w = 0; w < words; ++w) mine[w] |= theirs[w];
      mine[static_cast<size_t>(p) / 64] |= uint64_t{1} << (p % 64);
    }
  }
  for (OpId op = n - 1; op >= 0; --op) {
    uint64_t* mine = row(desc, op);
    for (OpId s : problem.succs(op)) {
      const uint64_t* theirs = row(desc, s);
      for (size_t w = 0; w < words; ++w) mine[w] |= theirs[w];
      mine[static_cast<size_t>(s) / 64] |= uint64_t{1} << (s % 64);
    }
  }
  std::vector<bool> join(static_cast<size_t>(n), false);
  for (OpId op = 0; op < n; ++op) {
    int count = 0;
    const uint64_t* a = row(anc, op);
    const uint64_t* d = row(desc, op);
    for (size_t w = 0; w < words; ++w) count += std::popcount(a[w]) + std::popcount(d[w]);
    join[static_cast<size_t>(op)] = count == n - 1;
  }
  return join;
}

std::vector<std::vector<OpId>> BuildStages(const Problem& problem, std::span<const double> rank,
                                           int max_stage_size) {
  const int n = problem.num_ops();
  const std::vector<bool> join = GlobalJoinPoints(problem);
  std::vector<int> missing(static_cast<size_t>(n));
  // Max-heap on (rank, -op): the largest rank first, the lowest op id among ties.
  using Item = std::pair<double, int>;
  std::priority_queue<Item> available;
  for (OpId op = 0; op < n; ++op) {
    missing[static_cast<size_t>(op)] = static_cast<int>(problem.preds(op).size());
    if (missing[static_cast<size_t>(op)] == 0) available.emplace(rank[static_cast<size_t>(op)], -op);
  }
  std::vector<std::vector<OpId>> stages;
  std::vector<OpId> current;
  while (!available.empty()) {
    const OpId op = -available.top().second;
    available.pop();
    current.push_back(op);
    for (OpId s : problem.succs(op)) {
      if (--missing[static_cast<size_t>(s)] == 0) available.emplace(rank[static_cast<size_t>(s)], -s);
    }
    if (join[static_cast<size_t>(op)] || static_cast<int>(current.size()) >= max_stage_size) {
      std::sort(current.begin(), current.end());
      stages.push_back(std::move(current));
      current.clear();
    }
  }
  if (!current.empty()) {
    std::sort(current.begin(), current.end());
    stages.push_back(std::move(current));
  }
  return stages;
}

}  // namespace psched::scheduler::partition_aware
