#include "scheduler/test_problems.h"

#include <cstdlib>
#include <iostream>

#include "absl/strings/str_cat.h"

namespace psched::scheduler::testing {

Platform MakePlatform(int n, bool separate_domains) {
  Platform p;
  p.name = absl::StrCat("test", n);
  for (int d = 0; d < n; ++d) {
    p.devices.push_back(DeviceSpec{absl::StrCat("d", d), d == 0 ? DeviceKind::kGpu : DeviceKind::kCpu,
                                   separate_domains ? d : 0, {}, ""});
  }
  return p;
}

Problem TopcuogluExample() {
  TaskGraph g;
  g.cost = {{14, 16, 9}, {13, 19, 18}, {11, 13, 19}, {13, 8, 17}, {12, 13, 10},
            {13, 16, 9}, {7, 15, 11},  {5, 11, 14},  {18, 12, 20}, {21, 7, 16}};
  const int edges[][3] = {{1, 2, 18}, {1, 3, 12}, {1, 4, 9},  {1, 5, 11}, {1, 6, 14},
                          {2, 8, 19}, {2, 9, 16}, {3, 7, 23}, {4, 8, 27}, {4, 9, 23},
                          {5, 9, 13}, {6, 8, 15}, {7, 10, 17}, {8, 10, 11}, {9, 10, 13}};
  for (const auto& e : edges) g.edges.push_back({e[0] - 1, e[1] - 1, static_cast<double>(e[2])});
  absl::StatusOr<Problem> p = Problem::FromTaskGraph(g, MakePlatform(3, true));
  if (!p.ok()) {
    std::cerr << p.status() << "\n";
    std::abort();
  }
  return *std::move(p);
}

}  // namespace psched::scheduler::testing
