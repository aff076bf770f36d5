#include "model/concat_in_place.h"

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"
#include "model/onnx_import.h"

namespace psched::model {
namespace {

std::string SharedDir() {
  const char* dir = std::getenv("PSCHED_SHARED_DIR");
  return dir != nullptr ? dir : "/work/shared";
}

// x -> conv a (6 ch), conv b (2 ch) -> inner concat (8 ch); x -> conv c (3 ch), read by the outer
// concat and by an add; outer concat (inner, c, x) -> 15 channels.
struct Nested {
  Graph graph;
  TensorId x, a, b, inner, c, sum, outer;
  OpId conv_a = 0, conv_b = 1, inner_concat = 2, conv_c = 3, add = 4, outer_concat = 5;
};

Nested NestedConcats() {
  Nested n;
  Graph& g = n.graph;
  auto tensor = [&](const char* name, Shape shape, OpId producer) {
    g.tensors.push_back({name, shape, 4, producer, kInvalidId});
    return static_cast<TensorId>(g.tensors.size() - 1);
  };
  auto op = [&](const char* name, OpKind kind, std::vector<TensorId> inputs, TensorId out,
                OpAttrs attrs = {}) {
    g.ops.push_back({name, kind, inputs, out, {}, attrs});
  };
  ConvAttrs conv;
  conv.window = Window2d{1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
  n.x = tensor("x", {8, 8, 4}, kInvalidId);
  g.inputs.push_back({n.x, "x", {1, 4, 8, 8}});
  n.a = tensor("a", {8, 8, 6}, n.conv_a);
  op("conv_a", OpKind::kConv2d, {n.x}, n.a, conv);
  n.b = tensor("b", {8, 8, 2}, n.conv_b);
  op("conv_b", OpKind::kConv2d, {n.x}, n.b, conv);
  n.inner = tensor("inner", {8, 8, 8}, n.inner_concat);
  op("inner", OpKind::kConcat, {n.a, n.b}, n.inner);
  n.c = tensor("c", {8, 8, 3}, n.conv_c);
  op("conv_c", OpKind::kConv2d, {n.x}, n.c, conv);
  n.sum = tensor("sum", {8, 8, 3}, n.add);
  op("add", OpKind::kAdd, {n.c, n.c}, n.sum);
  n.outer = tensor("outer", {8, 8, 15}, n.outer_concat);
  op("outer", OpKind::kConcat, {n.inner, n.c, n.x}, n.outer);
  g.outputs.push_back({n.outer, "outer", {1, 15, 8, 8}});
  g.outputs.push_back({n.sum, "sum", {1, 3, 8, 8}});
  return n;
}

TEST(ConcatInPlace, NestedConcatsChainAndTheRulesKeepTheRestOut) {
  const Nested n = NestedConcats();
  const ConcatAliasing a = AliasConcatInputs(n.graph);
  auto root = [&](TensorId t) { return a.root[static_cast<size_t>(t)]; };
  auto offset = [&](TensorId t) { return a.channel_offset[static_cast<size_t>(t)]; };
  // The inner concat's output goes into the outer one, and its inputs with it.
  EXPECT_EQ(root(n.inner), n.outer);
  EXPECT_EQ(offset(n.inner), 0);
  EXPECT_EQ(root(n.a), n.outer);
  EXPECT_EQ(offset(n.a), 0);
  EXPECT_EQ(root(n.b), n.outer);
  EXPECT_EQ(offset(n.b), 6);
  // c is also read by an add, whose kernels need a dense input; x is a graph input.
  EXPECT_EQ(root(n.c), n.c);
  EXPECT_EQ(root(n.x), n.x);
  EXPECT_EQ(a.in_place_inputs, 3);

  EXPECT_EQ(OutputPixelStride(n.graph, a, n.conv_a), 15);
  EXPECT_EQ(OutputPixelStride(n.graph, a, n.conv_b), 15);
  EXPECT_EQ(OutputPixelStride(n.graph, a, n.inner_concat), 15);
  EXPECT_EQ(OutputPixelStride(n.graph, a, n.conv_c), 0);
  EXPECT_EQ(OutputPixelStride(n.graph, a, n.add), 0);
  EXPECT_EQ(OutputPixelStride(n.graph, a, n.outer_concat), 0);
}

TEST(ConcatInPlace, StridedViewsByKind) {
  EXPECT_TRUE(SupportsStridedOutput(OpKind::kConv2d));
  EXPECT_TRUE(SupportsStridedInput(OpKind::kConv2d));
  EXPECT_TRUE(SupportsStridedInput(OpKind::kFlatten));
  EXPECT_FALSE(SupportsStridedOutput(OpKind::kFlatten));
  for (OpKind k : {OpKind::kAdd, OpKind::kMul, OpKind::kSub}) {
    EXPECT_FALSE(SupportsStridedInput(k));
    EXPECT_FALSE(SupportsStridedOutput(k));
  }
}

// squeezenet_v1_1's fire modules: both expand convs of each write into its concat.
TEST(ConcatInPlace, SqueezenetExpandConvsWriteIntoTheirFireModulesConcat) {
  absl::StatusOr<Graph> g =
      ImportOnnxFile(SharedDir() + "/models/graph-only/squeezenet_v1_1.onnx", ImportOptions{});
  ASSERT_TRUE(g.ok()) << g.status();
  const ConcatAliasing a = AliasConcatInputs(*g);
  int concats = 0, strided_convs = 0;
  for (OpId id = 0; id < static_cast<OpId>(g->ops.size()); ++id) {
    const Op& op = g->op(id);
    if (op.kind == OpKind::kConcat) {
      ++concats;
      for (TensorId t : op.inputs) {
        EXPECT_EQ(a.root[static_cast<size_t>(t)], op.output) << g->tensor(t).name;
        EXPECT_EQ(OutputPixelStride(*g, a, g->tensor(t).producer), g->tensor(op.output).shape.c);
      }
    }
    if (op.kind == OpKind::kConv2d && OutputPixelStride(*g, a, id) != 0) ++strided_convs;
  }
  EXPECT_EQ(concats, 8);
  EXPECT_EQ(strided_convs, 16);
  EXPECT_EQ(a.in_place_inputs, 16);
}

}  // namespace
}  // namespace psched::model
