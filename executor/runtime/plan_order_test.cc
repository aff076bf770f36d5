#include "executor/runtime/plan_order.h"

#include <algorithm>
#include <random>
#include <vector>

#include "executor/testing/graph_builder.h"
#include "gtest/gtest.h"

namespace psched::executor::runtime {
namespace {

using model::OpKind;
using model::SplitAxis;
using testing::GraphBuilder;
using testing::RandomConv;

// x -> a, x -> b (independent 1x1 convs), c = a + b.
model::Graph Fork() {
  GraphBuilder g;
  auto x = g.AddInput({4, 4, 4});
  auto a = g.AddOp(OpKind::kConv2d, {x}, {4, 4, 4}, RandomConv(g, 4, 4, 1, 1, 1, 0, 1, 1));
  auto b = g.AddOp(OpKind::kConv2d, {x}, {4, 4, 4}, RandomConv(g, 4, 4, 1, 1, 1, 0, 1, 2));
  g.MarkOutput(g.AddOp(OpKind::kAdd, {a, b}, {4, 4, 4}));
  return g.Build();
}

PlanStep Whole(model::OpId op) { return {op, WorkSlice::Whole()}; }

TEST(PlanOrder, OneDeviceInOpOrderIsSequential) {
  const model::Graph g = Fork();
  const OpOrder order = PlanOrder(g, SingleDevicePlan(g, 2));
  for (model::OpId a = 0; a < 3; ++a) {
    for (model::OpId b = 0; b < 3; ++b) EXPECT_EQ(order.Before(a, b), a < b) << a << " " << b;
  }
}

TEST(PlanOrder, IndependentOpsOnTwoDevicesAreUnordered) {
  const model::Graph g = Fork();
  ExecutionPlan plan;
  plan.device_steps = {{Whole(0), Whole(2)}, {Whole(1)}};
  const OpOrder order = PlanOrder(g, plan);
  EXPECT_FALSE(order.Before(0, 1));
  EXPECT_FALSE(order.Before(1, 0));
  EXPECT_TRUE(order.Before(0, 2));
  EXPECT_TRUE(order.Before(1, 2));
}

TEST(PlanOrder, AQueueOrdersIndependentOpsItRunsInTurn) {
  const model::Graph g = Fork();
  ExecutionPlan plan;
  plan.device_steps = {{Whole(1), Whole(0), Whole(2)}, {}};
  const OpOrder order = PlanOrder(g, plan);
  EXPECT_TRUE(order.Before(1, 0));
  EXPECT_FALSE(order.Before(0, 1));
}

// A split op is Before a later op only when all of its slices are: a's second slice runs on
// device 1, which b does not wait for.
TEST(PlanOrder, EverySliceOfAnOpMustPrecede) {
  const model::Graph g = Fork();
  ExecutionPlan plan;
  plan.device_steps = {{{0, {SplitAxis::kOutputChannels, 0, 2}}, Whole(1), Whole(2)},
                       {{0, {SplitAxis::kOutputChannels, 2, 4}}}};
  const OpOrder order = PlanOrder(g, plan);
  EXPECT_FALSE(order.Before(0, 1));
  EXPECT_TRUE(order.Before(0, 2));  // c waits for both slices of a
  EXPECT_TRUE(order.Before(1, 2));
}

// Random DAGs of convs and adds, random topological queue orders over three devices, some ops
// split in cout slices: in every simulated run (random durations, each step starting once its
// device is free and every step of its predecessor ops has ended - the runtime's rules), an op
// the order puts Before another has finished all its steps before any step of the other starts.
TEST(PlanOrder, HoldsInRandomRunsOfRandomPlans) {
  for (uint32_t seed = 0; seed < 20; ++seed) {
    std::mt19937 rng(seed);
    GraphBuilder gb;
    std::vector<model::TensorId> tensors{gb.AddInput({4, 4, 4})};
    const int num_ops = 8 + static_cast<int>(rng() % 12);
    for (int i = 0; i < num_ops; ++i) {
      const model::TensorId in = tensors[rng() % tensors.size()];
      if (rng() % 4 == 0 && tensors.size() > 1) {
        model::TensorId other = tensors[rng() % tensors.size()];
        tensors.push_back(gb.AddOp(OpKind::kAdd, {in, other}, {4, 4, 4}));
      } else {
        tensors.push_back(gb.AddOp(OpKind::kConv2d, {in}, {4, 4, 4},
                                   RandomConv(gb, 4, 4, 1, 1, 1, 0, 1, seed * 100 + i)));
      }
    }
    gb.MarkOutput(tensors.back());
    const model::Graph g = gb.Build();
    const int n = static_cast<int>(g.ops.size());
    // A random topological order, each op whole on a random device or in two or three slices.
    ExecutionPlan plan;
    plan.device_steps.resize(3);
    std::vector<int> missing(static_cast<size_t>(n));
    for (model::OpId op = 0; op < n; ++op) {
      missing[static_cast<size_t>(op)] = static_cast<int>(g.Predecessors(op).size());
    }
    std::vector<model::OpId> ready;
    for (model::OpId op = 0; op < n; ++op) {
      if (missing[static_cast<size_t>(op)] == 0) ready.push_back(op);
    }
    while (!ready.empty()) {
      const size_t pick = rng() % ready.size();
      const model::OpId op = ready[pick];
      ready.erase(ready.begin() + static_cast<std::ptrdiff_t>(pick));
      const int64_t work = model::WorkSize(g, op, SplitAxis::kOutputChannels);
      const int pieces = work > 0 ? 1 + static_cast<int>(rng() % 3) : 1;
      std::vector<int> devices{0, 1, 2};
      std::shuffle(devices.begin(), devices.end(), rng);
      for (int k = 0; k < pieces; ++k) {
        const WorkSlice slice = pieces == 1 ? WorkSlice::Whole()
                                            : WorkSlice{SplitAxis::kOutputChannels,
                                                        work * k / pieces, work * (k + 1) / pieces};
        plan.device_steps[static_cast<size_t>(devices[static_cast<size_t>(k)])].push_back(
            {op, slice});
      }
      for (model::OpId later = op + 1; later < n; ++later) {
        const auto preds = g.Predecessors(later);
        if (std::count(preds.begin(), preds.end(), op) > 0 &&
            --missing[static_cast<size_t>(later)] == 0) {
          ready.push_back(later);
        }
      }
    }
    ASSERT_TRUE(ValidateExecutionPlan(g, plan, 3).ok());
    const OpOrder order = PlanOrder(g, plan);
    for (int trial = 0; trial < 50; ++trial) {
      std::vector<double> op_start(static_cast<size_t>(n), 1e18), op_end(static_cast<size_t>(n), 0);
      std::vector<size_t> next(3, 0);
      std::vector<double> free_at(3, 0);
      std::vector<int> steps_left(static_cast<size_t>(n), 0);
      for (const auto& queue : plan.device_steps) {
        for (const PlanStep& s : queue) ++steps_left[static_cast<size_t>(s.op)];
      }
      // Run whichever device's next step is ready; the plan is valid, so one always is.
      for (bool progress = true; progress;) {
        progress = false;
        for (size_t d = 0; d < 3; ++d) {
          if (next[d] >= plan.device_steps[d].size()) continue;
          const PlanStep& s = plan.device_steps[d][next[d]];
          double start = free_at[d];
          bool ready_now = true;
          for (model::OpId p : g.Predecessors(s.op)) {
            ready_now = ready_now && steps_left[static_cast<size_t>(p)] == 0;
            start = std::max(start, op_end[static_cast<size_t>(p)]);
          }
          if (!ready_now) continue;
          start += std::uniform_real_distribution<double>(0, 5)(rng);
          const double end = start + std::uniform_real_distribution<double>(1, 100)(rng);
          op_start[static_cast<size_t>(s.op)] =
              std::min(op_start[static_cast<size_t>(s.op)], start);
          op_end[static_cast<size_t>(s.op)] = std::max(op_end[static_cast<size_t>(s.op)], end);
          --steps_left[static_cast<size_t>(s.op)];
          free_at[d] = end;
          ++next[d];
          progress = true;
        }
      }
      for (model::OpId a = 0; a < n; ++a) {
        for (model::OpId b = 0; b < n; ++b) {
          if (order.Before(a, b)) {
            EXPECT_LE(op_end[static_cast<size_t>(a)], op_start[static_cast<size_t>(b)])
                << "seed " << seed << ": op " << a << " is Before op " << b;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace psched::executor::runtime
