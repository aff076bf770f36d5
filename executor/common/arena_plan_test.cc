#include "executor/common/arena_plan.h"

#include <algorithm>
#include <random>

#include "executor/testing/graph_builder.h"
#include "gtest/gtest.h"

namespace psched::executor {
namespace {

using model::OpKind;
using testing::GraphBuilder;

TEST(ArenaPlan, ReusesMemoryOfDeadTensors) {
  // x -> a -> b -> c: x and b may share a block, as may a and c.
  GraphBuilder g0;
  auto x = g0.AddInput({8, 8, 4});
  auto a = g0.AddOp(OpKind::kActivation, {x}, {8, 8, 4});
  auto b = g0.AddOp(OpKind::kActivation, {a}, {8, 8, 4});
  auto c = g0.AddOp(OpKind::kActivation, {b}, {8, 8, 4});
  g0.MarkOutput(c);
  const model::Graph g = g0.Build();
  const ArenaPlan reuse = PlanArena(g);
  const ArenaPlan no_reuse = PlanArena(g, /*reuse_memory=*/false);
  // 256 floats + 16 slack per tensor.
  EXPECT_EQ(reuse.size, 2 * 272);
  EXPECT_EQ(no_reuse.size, 4 * 272);
  auto offset = [&](model::TensorId t) { return reuse.tensors[static_cast<size_t>(t)].offset; };
  EXPECT_NE(offset(x), offset(a));
  EXPECT_NE(offset(a), offset(b));
  EXPECT_NE(offset(b), offset(c));
  EXPECT_EQ(reuse.tensors[static_cast<size_t>(c)].pixel_stride, 4);
}

TEST(ArenaPlan, GraphInputsAndConstantsAreNeverAliased) {
  GraphBuilder g0;
  auto x = g0.AddInput({2, 2, 1});
  auto k = g0.AddConstantTensor({1, 1, 1}, {2.0f});
  auto m = g0.AddOp(OpKind::kMul, {x, k}, {2, 2, 1});
  auto cat = g0.AddOp(OpKind::kConcat, {x, m}, {2, 2, 2});
  g0.MarkOutput(cat);
  const ArenaPlan plan = PlanArena(g0.Build());
  EXPECT_EQ(plan.in_place_concat_inputs, 0);  // x is an input, mul writes contiguously
  EXPECT_EQ(plan.tensors[static_cast<size_t>(k)].offset, -1);
}

// Every pair of blocks whose memory overlaps must be touched by ops `order` puts one wholly
// before the other (graph inputs first, graph outputs last): the planner's one promise. A block is
// a tensor with the concat inputs placed inside it (found from the placements: an input of a
// concat whose data lies inside the concat's output).
void ExpectOverlapsAreOrdered(const model::Graph& g, const ArenaPlan& plan, const OpOrder& order) {
  const size_t n = g.tensors.size();
  std::vector<size_t> root(n);
  for (size_t t = 0; t < n; ++t) root[t] = t;
  for (model::OpId id = static_cast<model::OpId>(g.ops.size()) - 1; id >= 0; --id) {
    const model::Op& op = g.op(id);
    if (op.kind != OpKind::kConcat) continue;
    int64_t channel = 0;
    for (model::TensorId t : op.inputs) {
      const auto ti = static_cast<size_t>(t);
      const auto out = static_cast<size_t>(op.output);
      if (plan.tensors[ti].offset == plan.tensors[out].offset + channel) root[ti] = root[out];
      channel += g.tensor(t).shape.c;
    }
  }
  struct Use {
    int64_t begin = -1, end = -1;
    std::vector<model::OpId> ops;
    bool from_start = false, to_end = false;
  };
  std::vector<Use> uses(n);
  for (size_t t = 0; t < n; ++t) {
    if (plan.tensors[t].offset < 0) continue;
    Use& u = uses[root[t]];
    if (root[t] == t) {
      u.begin = plan.tensors[t].offset;
      u.end = u.begin + g.tensors[t].shape.Elements();
    }
    if (g.tensors[t].producer == model::kInvalidId) {
      u.from_start = true;
    } else {
      u.ops.push_back(g.tensors[t].producer);
    }
  }
  for (model::OpId id = 0; id < static_cast<model::OpId>(g.ops.size()); ++id) {
    for (model::TensorId t : g.op(id).inputs) {
      if (plan.tensors[static_cast<size_t>(t)].offset >= 0) {
        uses[root[static_cast<size_t>(t)]].ops.push_back(id);
      }
    }
  }
  for (const model::GraphIO& io : g.outputs)
    uses[root[static_cast<size_t>(io.tensor)]].to_end = true;
  auto before = [&](const Use& x, const Use& y) {
    if (x.to_end || y.from_start) return false;
    for (model::OpId a : x.ops) {
      for (model::OpId b : y.ops) {
        if (!order.Before(a, b)) return false;
      }
    }
    return true;
  };
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = a + 1; b < n; ++b) {
      const Use& x = uses[a];
      const Use& y = uses[b];
      if (x.begin < 0 || y.begin < 0 || x.end <= y.begin || y.end <= x.begin) continue;
      EXPECT_TRUE(before(x, y) || before(y, x))
          << "blocks of tensors " << a << " and " << b << " overlap but their ops are not ordered";
    }
  }
}

// x -> a, x -> b on two devices at once, c = a + b, then d, e after c.
model::Graph Diamond() {
  GraphBuilder g0;
  auto x = g0.AddInput({8, 8, 4});
  auto a = g0.AddOp(OpKind::kActivation, {x}, {8, 8, 4});
  auto b = g0.AddOp(OpKind::kActivation, {x}, {8, 8, 4});
  auto c = g0.AddOp(OpKind::kAdd, {a, b}, {8, 8, 4});
  auto d = g0.AddOp(OpKind::kActivation, {c}, {8, 8, 4});
  auto e = g0.AddOp(OpKind::kActivation, {d}, {8, 8, 4});
  g0.MarkOutput(e);
  return g0.Build();
}

TEST(ArenaPlan, ConcurrentOpsKeepTheirOwnMemoryAndLaterOnesReuseIt) {
  const model::Graph g = Diamond();
  // Ops 0 (a) and 1 (b) run concurrently; everything else is ordered.
  OpOrder order(5);
  for (model::OpId first : {0, 1}) {
    for (model::OpId later : {2, 3, 4}) order.Order(first, later);
  }
  order.Order(2, 3);
  order.Order(2, 4);
  order.Order(3, 4);
  const ArenaPlan plan = PlanArena(g, order);
  ExpectOverlapsAreOrdered(g, plan, order);
  auto offset = [&](model::TensorId t) { return plan.tensors[static_cast<size_t>(t)].offset; };
  // a, b and the input x are live together; c, d and e fit into their memory.
  EXPECT_NE(offset(1), offset(2));
  EXPECT_EQ(plan.size, 3 * 272);
  const ArenaPlan unordered = PlanArena(g, OpOrder::Unordered(5));
  ExpectOverlapsAreOrdered(g, unordered, OpOrder::Unordered(5));
  EXPECT_EQ(unordered.size, 6 * 272);
  // Sequential order is what PlanArena(g) uses.
  EXPECT_EQ(PlanArena(g).size, PlanArena(g, OpOrder::Sequential(5)).size);
}

TEST(ArenaPlan, ATensorZeroedAtTheStartSharesWithNothingBefore) {
  const model::Graph g = Diamond();
  const OpOrder order = OpOrder::Sequential(5);
  // d (tensor 4) is written when the run starts: it may not reuse a, b or c's memory.
  const std::vector<model::TensorId> zeroed{4};
  const ArenaPlan plan = PlanArena(g, order, zeroed);
  for (model::TensorId t : {1, 2, 3}) {
    EXPECT_NE(plan.tensors[4].offset, plan.tensors[static_cast<size_t>(t)].offset) << t;
  }
  EXPECT_GT(plan.size, PlanArena(g, order).size);
}

// Random DAGs with concats and random partial orders: the planner never lets memory overlap
// between tensors whose ops are not ordered.
TEST(ArenaPlan, RandomGraphsAndOrdersNeverOverlapUnorderedTensors) {
  for (uint32_t seed = 0; seed < 30; ++seed) {
    std::mt19937 rng(seed);
    GraphBuilder g0;
    std::vector<model::TensorId> narrow{g0.AddInput({4, 4, 2})};  // 2 channels
    std::vector<model::TensorId> wide;                            // 4 channels
    model::TensorId last = narrow.front();
    const int num_ops = 6 + static_cast<int>(rng() % 10);
    for (int i = 0; i < num_ops; ++i) {
      if (rng() % 3 == 0 && narrow.size() > 1) {
        const size_t first = rng() % narrow.size();
        const size_t second = (first + 1 + rng() % (narrow.size() - 1)) % narrow.size();
        last = g0.AddOp(OpKind::kConcat, {narrow[first], narrow[second]}, {4, 4, 4});
        wide.push_back(last);
      } else if (rng() % 4 == 0 && !wide.empty()) {
        last = g0.AddOp(OpKind::kActivation, {wide[rng() % wide.size()]}, {4, 4, 4});
        wide.push_back(last);
      } else {
        last = g0.AddOp(OpKind::kActivation, {narrow[rng() % narrow.size()]}, {4, 4, 2});
        narrow.push_back(last);
      }
    }
    g0.MarkOutput(last);
    const model::Graph g = g0.Build();
    const int n = static_cast<int>(g.ops.size());
    // A random partial order consistent with op order: its transitive closure.
    OpOrder order(n);
    std::vector<std::vector<bool>> before(n, std::vector<bool>(n, false));
    for (int a = 0; a < n; ++a) {
      for (int b = a + 1; b < n; ++b) before[a][b] = rng() % 3 == 0;
    }
    for (int k = 0; k < n; ++k) {
      for (int a = 0; a < n; ++a) {
        for (int b = 0; b < n; ++b) before[a][b] = before[a][b] || (before[a][k] && before[k][b]);
      }
    }
    for (int a = 0; a < n; ++a) {
      for (int b = 0; b < n; ++b) {
        if (before[a][b]) order.Order(a, b);
      }
    }
    ExpectOverlapsAreOrdered(g, PlanArena(g, order), order);
    ExpectOverlapsAreOrdered(g, PlanArena(g), OpOrder::Sequential(n));
  }
}

// hrnet's residual unit at 56x56x16: blocks of 50192 floats (49 pages + 64 bytes) packed side by
// side put each op's output 64 bytes past a multiple of 4 KiB from its input, where every
// store aliases the next pixel's loads (arena_plan.cc). No op's input and output blocks may lie
// within 512 bytes of a multiple of 4 KiB apart, and the arena grows by under a page a block.
TEST(ArenaPlan, KeepsAnOpsBlocksAwayFrom4KiBAliasing) {
  GraphBuilder g0;
  const model::Shape shape{56, 56, 16};
  model::TensorId x = g0.AddInput(shape);
  for (int unit = 0; unit < 4; ++unit) {
    const model::TensorId h = g0.AddOp(OpKind::kActivation, {x}, shape);
    const model::TensorId y = g0.AddOp(OpKind::kActivation, {h}, shape);
    x = g0.AddOp(OpKind::kAdd, {y, x}, shape);
  }
  g0.MarkOutput(x);
  const model::Graph g = g0.Build();
  const ArenaPlan plan = PlanArena(g);
  ExpectOverlapsAreOrdered(g, plan, OpOrder::Sequential(static_cast<int>(g.ops.size())));
  constexpr int64_t kPage = 1024, kBand = 128;  // floats
  int pairs = 0;
  for (const model::Op& op : g.ops) {
    for (model::TensorId in : op.inputs) {
      const int64_t d = plan.tensors[static_cast<size_t>(op.output)].offset -
                        plan.tensors[static_cast<size_t>(in)].offset;
      const int64_t m = (d % kPage + kPage) % kPage;
      EXPECT_TRUE(m > kBand && m < kPage - kBand) << op.name << ": blocks " << d << " floats apart";
      ++pairs;
    }
  }
  EXPECT_EQ(pairs, 16);
  // Three blocks are live at once (x, h, y); each may be shifted by a little over a KiB.
  const int64_t block = shape.Elements() + 16;
  EXPECT_GE(plan.size, 3 * block);
  EXPECT_LT(plan.size, 3 * block + 3 * kPage);
}

}  // namespace
}  // namespace psched::executor
