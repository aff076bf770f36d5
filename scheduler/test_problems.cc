#include "scheduler/test_problems.h"

#include <cstdlib>
#include <iostream>

#include "absl/strings/str_cat.h"

namespace psched::scheduler::testing {

platform::Platform MakePlatform(int n, bool separate_domains) {
  platform::Platform p;
  p.name = absl::StrCat("test", n);
  for (int d = 0; d < n; ++d) {
    p.devices.push_back(
        platform::DeviceSpec{absl::StrCat("d", d),
                             d == 0 ? platform::DeviceKind::kGpu : platform::DeviceKind::kCpu,
                             separate_domains ? d : 0,
                             {},
                             ""});
  }
  return p;
}

Problem TopcuogluExample() {
  TaskGraph g;
  g.cost = {{14, 16, 9}, {13, 19, 18}, {11, 13, 19}, {13, 8, 17},  {12, 13, 10},
            {13, 16, 9}, {7, 15, 11},  {5, 11, 14},  {18, 12, 20}, {21, 7, 16}};
  const int edges[][3] = {{1, 2, 18}, {1, 3, 12}, {1, 4, 9},   {1, 5, 11},  {1, 6, 14},
                          {2, 8, 19}, {2, 9, 16}, {3, 7, 23},  {4, 8, 27},  {4, 9, 23},
                          {5, 9, 13}, {6, 8, 15}, {7, 10, 17}, {8, 10, 11}, {9, 10, 13}};
  for (const auto& e : edges) g.edges.push_back({e[0] - 1, e[1] - 1, static_cast<double>(e[2])});
  absl::StatusOr<Problem> p = Problem::FromTaskGraph(g, MakePlatform(3, true));
  if (!p.ok()) {
    std::cerr << p.status() << "\n";
    std::abort();
  }
  return *std::move(p);
}

model::Graph ConvForkJoin(int branches) {
  using model::Shape;
  model::Graph g;
  g.name = "fork_join";
  auto add_tensor = [&g](Shape shape, model::OpId producer) {
    g.tensors.push_back(
        {absl::StrCat("t", g.tensors.size()), shape, 4, producer, model::kInvalidId});
    return static_cast<model::TensorId>(g.tensors.size() - 1);
  };
  auto add_conv = [&g, &add_tensor](model::TensorId in, int k, int64_t cout) {
    model::ConvAttrs conv;
    conv.window = model::Window2d{k, k, 1, 1, 1, 1, k / 2, k / 2, k / 2, k / 2};
    const model::OpId id = static_cast<model::OpId>(g.ops.size());
    const model::TensorId out = add_tensor(Shape{28, 28, cout}, id);
    g.ops.push_back({absl::StrCat("conv", id), model::OpKind::kConv2d, {in}, out, {}, conv});
    return out;
  };
  const model::TensorId x = add_tensor(Shape{28, 28, 64}, model::kInvalidId);
  const model::TensorId stem = add_conv(x, 3, 64);
  std::vector<model::TensorId> outs;
  for (int b = 0; b < branches; ++b) outs.push_back(add_conv(stem, 3, 64));
  const model::OpId concat_id = static_cast<model::OpId>(g.ops.size());
  const model::TensorId cat = add_tensor(Shape{28, 28, 64 * branches}, concat_id);
  g.ops.push_back({"concat", model::OpKind::kConcat, outs, cat, {}, {}});
  add_conv(cat, 1, 64);
  return g;
}

Problem TaskProblem(std::vector<std::vector<double>> cost, std::vector<TaskGraph::Edge> edges,
                    bool separate_domains) {
  TaskGraph g;
  const int devices = static_cast<int>(cost.front().size());
  g.cost = std::move(cost);
  g.edges = std::move(edges);
  absl::StatusOr<Problem> p = Problem::FromTaskGraph(g, MakePlatform(devices, separate_domains));
  if (!p.ok()) {
    std::cerr << p.status() << "\n";
    std::abort();
  }
  return *std::move(p);
}

}  // namespace psched::scheduler::testing
