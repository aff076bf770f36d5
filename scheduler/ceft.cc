#include "scheduler/ceft.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "scheduler/heft.h"
#include "scheduler/ranks.h"

namespace psched::scheduler {
namespace {

// Cuts the tasks into critical paths: from the unassigned task of highest upward rank,
// follow the unassigned successor task of highest rank until none is left. Paths are
// stored flat in ws.groups, path k spanning [group_begin[k], group_begin[k + 1]).
void CriticalPaths(const Problem& problem, ListWorkspace& ws) {
  const ExpandedGraph& g = ws.graph;
  std::vector<int>& path_of = ws.task_marks;
  path_of.assign(static_cast<size_t>(g.num_tasks()), -1);
  ws.groups.clear();
  ws.group_begin.assign(1, 0);
  for (int head : ws.order) {
    if (path_of[static_cast<size_t>(head)] >= 0) continue;
    const int path = static_cast<int>(ws.group_begin.size()) - 1;
    for (int cur = head; cur >= 0;) {
      path_of[static_cast<size_t>(cur)] = path;
      ws.groups.push_back(cur);
      int next = -1;
      for (OpId s : problem.succs(g.task(cur).op)) {
        for (int c = g.TaskBegin(s); c < g.TaskEnd(s); ++c) {
          if (path_of[static_cast<size_t>(c)] >= 0) continue;
          if (next < 0 || ws.rank[static_cast<size_t>(c)] > ws.rank[static_cast<size_t>(next)] ||
              (ws.rank[static_cast<size_t>(c)] == ws.rank[static_cast<size_t>(next)] && c < next)) {
            next = c;
          }
        }
      }
      cur = next;
    }
    ws.group_begin.push_back(static_cast<int>(ws.groups.size()));
  }
}

}  // namespace

absl::Status CeftScheduler::PlaceAll(const Problem& problem, Workspace& ws) const {
  const ExpandedGraph& g = ws.graph;
  UpwardRanks(problem, g, ws.rank, ws.op_values);
  OrderByDecreasingRank(ws.rank, ws.order);
  CriticalPaths(problem, ws);
  ws.InitReady(problem);
  const int num_paths = static_cast<int>(ws.group_begin.size()) - 1;
  // next[k]: first unplaced task of path k, as an index into ws.groups.
  std::vector<int>& next = ws.order;
  next.assign(ws.group_begin.begin(), ws.group_begin.end() - 1);
  int remaining = g.num_tasks();
  while (remaining > 0) {
    bool progress = false;
    for (int k = 0; k < num_paths; ++k) {
      const int first = next[static_cast<size_t>(k)];
      const int end = ws.group_begin[static_cast<size_t>(k) + 1];
      if (first >= end || !ws.IsReady(ws.groups[static_cast<size_t>(first)])) continue;
      // The CCP: the prefix of the path that becomes ready as it is placed. Its extent does
      // not depend on the device, so find it with a throw-away placement.
      int last = first;
      for (; last < end && ws.IsReady(ws.groups[static_cast<size_t>(last)]); ++last) {
        const int t = ws.groups[static_cast<size_t>(last)];
        ws.Place(t, ws.BestEft(problem, t));
      }
      for (int i = last - 1; i >= first; --i) ws.Unplace(ws.groups[static_cast<size_t>(i)]);
      // The device on which the whole CCP finishes first; siblings must not share it.
      int best_device = -1;
      double best_finish = std::numeric_limits<double>::infinity();
      for (int d = 0; d < problem.num_devices(); ++d) {
        bool allowed = true;
        for (int i = first; i < last && allowed; ++i) {
          allowed = !ws.SiblingOn(g.task(ws.groups[static_cast<size_t>(i)]).op, d);
        }
        if (!allowed) continue;
        double finish = 0;
        for (int i = first; i < last; ++i) {
          const int t = ws.groups[static_cast<size_t>(i)];
          const Placement p = ws.EftOn(problem, t, d);
          ws.Place(t, p);
          finish = std::max(finish, p.end_us);
        }
        for (int i = last - 1; i >= first; --i) ws.Unplace(ws.groups[static_cast<size_t>(i)]);
        if (finish < best_finish) {
          best_finish = finish;
          best_device = d;
        }
      }
      for (int i = first; i < last; ++i) {
        const int t = ws.groups[static_cast<size_t>(i)];
        const Placement p =
            best_device >= 0 ? ws.EftOn(problem, t, best_device) : ws.BestEft(problem, t);
        if (p.device < 0) {
          return absl::InternalError(absl::StrCat("ceft: no free device for op ", g.task(t).op));
        }
        ws.Place(t, p);
      }
      remaining -= last - first;
      next[static_cast<size_t>(k)] = last;
      progress = true;
    }
    if (!progress) return absl::InternalError("ceft: no constrained critical path is ready");
  }
  return absl::OkStatus();
}

}  // namespace psched::scheduler
