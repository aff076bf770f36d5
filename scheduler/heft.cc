#include "scheduler/heft.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "scheduler/ranks.h"

namespace psched::scheduler {

void OrderByDecreasingRank(const std::vector<double>& rank, std::vector<int>& order) {
  order.resize(rank.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&rank](int a, int b) {
    const double ra = rank[static_cast<size_t>(a)];
    const double rb = rank[static_cast<size_t>(b)];
    return ra != rb ? ra > rb : a < b;
  });
}

absl::Status HeftScheduler::PlaceAll(const Problem& problem, Workspace& ws) const {
  return PlaceHeft(problem, ws);
}

absl::Status PlaceHeft(const Problem& problem, ListWorkspace& ws) {
  UpwardRanks(problem, ws.graph, ws.rank, ws.op_values);
  OrderByDecreasingRank(ws.rank, ws.order);
  for (int t : ws.order) {
    const Placement best = ws.BestEft(problem, t);
    if (best.device < 0) {
      return absl::InternalError(absl::StrCat("heft: no free device for subtask ",
                                              ws.graph.task(t).slot, " of op ",
                                              ws.graph.task(t).op));
    }
    ws.Place(t, best);
  }
  return absl::OkStatus();
}

}  // namespace psched::scheduler
