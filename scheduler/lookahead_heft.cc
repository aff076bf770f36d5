#include "scheduler/lookahead_heft.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "scheduler/heft.h"
#include "scheduler/ranks.h"

namespace psched::scheduler {

absl::Status LookaheadHeftScheduler::PlaceAll(const Problem& problem, Workspace& ws) const {
  const ExpandedGraph& g = ws.graph;
  UpwardRanks(problem, g, ws.rank, ws.op_values);
  OrderByDecreasingRank(ws.rank, ws.order);
  std::vector<int>& children = ws.ready;
  for (int t : ws.order) {
    const OpId op = g.task(t).op;
    children.clear();
    for (OpId s : problem.succs(op)) {
      for (int c = g.TaskBegin(s); c < g.TaskEnd(s); ++c) children.push_back(c);
    }
    std::sort(children.begin(), children.end(), [&ws](int a, int b) {
      const double ra = ws.rank[static_cast<size_t>(a)];
      const double rb = ws.rank[static_cast<size_t>(b)];
      return ra != rb ? ra > rb : a < b;
    });
    Placement best;
    double best_score = std::numeric_limits<double>::infinity();
    for (int d = 0; d < problem.num_devices(); ++d) {
      if (ws.SiblingOn(op, d)) continue;
      const Placement own = ws.EftOn(problem, t, d);
      double score = own.end_us;
      if (!children.empty()) {
        // Children go where HEFT would put them now; parents not yet placed are ignored.
        ws.Place(t, own);
        score = 0;
        int placed = 0;
        for (int c : children) {
          const Placement pc = ws.BestEft(problem, c);
          if (pc.device < 0) break;
          ws.Place(c, pc);
          ++placed;
          score = std::max(score, pc.end_us);
        }
        for (int k = placed - 1; k >= 0; --k) ws.Unplace(children[static_cast<size_t>(k)]);
        ws.Unplace(t);
      }
      if (best.device < 0 || score < best_score ||
          (score == best_score && own.end_us < best.end_us)) {
        best = own;
        best_score = score;
      }
    }
    if (best.device < 0) {
      return absl::InternalError(absl::StrCat("lookahead-heft: no free device for subtask ",
                                              g.task(t).slot, " of op ", op));
    }
    ws.Place(t, best);
  }
  return absl::OkStatus();
}

}  // namespace psched::scheduler
