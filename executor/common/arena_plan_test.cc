#include "executor/common/arena_plan.h"

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

}  // namespace
}  // namespace psched::executor
