// The general tensor graph's import paths on small hand-built models: sub-graphs of constants
// evaluated at import (masks, Swin's window arithmetic, constant MatMul), Einsum, 1-D
// convolution, Where with a constant mask, and the refusals that name the node.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "model/onnx_import.h"
#include "model/onnx_test_builder.h"

namespace psched::model {
namespace {

using ::psched::model::testing::OnnxBuilder;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Adds x[dims] + `folded` as the graph's output, imports it, and returns the data of the
// constant operand the add got: the value the importer folded.
std::vector<float> FoldedOperand(OnnxBuilder& b, const std::string& folded,
                                 const std::vector<int64_t>& dims) {
  b.Input("x", dims);
  b.Node("Add", {"x", folded}, {"y"}, "add");
  b.Output("y");
  auto g = ImportOnnx(b.Bytes(), {});
  EXPECT_TRUE(g.ok()) << g.status();
  if (!g.ok()) return {};
  for (const Op& op : g->ops) {
    if (op.kind != OpKind::kAdd) continue;
    for (TensorId t : op.inputs) {
      if (g->tensor(t).constant != kInvalidId) {
        return g->constants[static_cast<size_t>(g->tensor(t).constant)].data;
      }
    }
  }
  ADD_FAILURE() << "no add with a constant operand";
  return {};
}

absl::Status ImportStatus(const OnnxBuilder& b) { return ImportOnnx(b.Bytes(), {}).status(); }

TEST(OnnxTensorGraphTest, EqualAndWhereBuildAMask) {
  OnnxBuilder b;
  b.ConstInts("a", {0, 1, 2, 1});
  b.ConstInts("one", {1});
  b.Node("Equal", {"a", "one"}, {"m"});
  b.ConstFloats("fill", {1}, {-5});
  b.ConstFloats("pos", {4}, {1, 2, 3, 4});
  b.Node("Where", {"m", "fill", "pos"}, {"f"});
  EXPECT_THAT(FoldedOperand(b, "f", {4}), ElementsAre(1, -5, 3, -5));
}

TEST(OnnxTensorGraphTest, ModTakesTheDivisorsSignUnlessFmod) {
  for (int fmod : {0, 1}) {
    OnnxBuilder b;
    b.ConstInts("x", {-7, 7, -7, 7});
    b.ConstInts("y", {3, 3, -3, -3});
    auto& mod = b.Node("Mod", {"x", "y"}, {"r"});
    OnnxBuilder::AttrInt(mod, "fmod", fmod);
    auto& cast = b.Node("Cast", {"r"}, {"f"});
    OnnxBuilder::AttrInt(cast, "to", onnx::TensorProto::FLOAT);
    b.Input("in", {4});
    b.Node("Add", {"in", "f"}, {"out"}, "add");
    b.Output("out");
    auto g = ImportOnnx(b.Bytes(), {});
    ASSERT_TRUE(g.ok()) << g.status();
    const Op& add = g->ops.back();
    const auto& data = g->constants[static_cast<size_t>(g->tensor(add.inputs[1]).constant)].data;
    if (fmod == 0) {
      EXPECT_THAT(data, ElementsAre(2, 1, -1, -2));
    } else {
      EXPECT_THAT(data, ElementsAre(-1, 1, -1, 1));
    }
  }
}

TEST(OnnxTensorGraphTest, RangeFolds) {
  OnnxBuilder b;
  b.ConstScalar("start", 0);
  b.ConstScalar("limit", 8);
  b.ConstScalar("delta", 3);
  b.Node("Range", {"start", "limit", "delta"}, {"r"});
  auto& cast = b.Node("Cast", {"r"}, {"f"});
  OnnxBuilder::AttrInt(cast, "to", onnx::TensorProto::FLOAT);
  EXPECT_THAT(FoldedOperand(b, "f", {3}), ElementsAre(0, 3, 6));
}

TEST(OnnxTensorGraphTest, ScatterNDWritesRows) {
  OnnxBuilder b;
  b.ConstFloats("data", {4}, {0, 0, 0, 0});
  b.ConstInts("flat", {1, 3});
  b.ConstInts("shape", {2, 1});
  b.Node("Reshape", {"flat", "shape"}, {"idx"});
  b.ConstFloats("upd", {2}, {7, 9});
  b.Node("ScatterND", {"data", "idx", "upd"}, {"f"});
  EXPECT_THAT(FoldedOperand(b, "f", {4}), ElementsAre(0, 7, 0, 9));
}

TEST(OnnxTensorGraphTest, ConstantMatMulFoldsAndKeepsAllRows) {
  OnnxBuilder b;
  b.ConstFloats("a", {2, 3}, {1, 2, 3, 4, 5, 6});
  b.ConstFloats("w", {3, 2}, {1, 0, 0, 1, 1, 1});
  b.Node("MatMul", {"a", "w"}, {"f"});
  // [[1+3, 2+3], [4+6, 5+6]]; an [N,K] operand with N > 1 stays a full row-major constant.
  EXPECT_THAT(FoldedOperand(b, "f", {2, 2}), ElementsAre(4, 5, 10, 11));
}

TEST(OnnxTensorGraphTest, EinsumBecomesTransposeAndMatMul) {
  OnnxBuilder b(17);
  b.Input("q", {2, 3, 4});
  b.Input("k", {2, 5, 4});
  auto& e = b.Node("Einsum", {"q", "k"}, {"s"}, "scores");
  OnnxBuilder::AttrString(e, "equation", "bik,bjk->bij");
  b.Output("s");
  auto g = ImportOnnx(b.Bytes(), {});
  ASSERT_TRUE(g.ok()) << g.status();
  std::vector<OpKind> kinds;
  for (const Op& op : g->ops) kinds.push_back(op.kind);
  EXPECT_THAT(kinds, ElementsAre(OpKind::kTranspose, OpKind::kMatMul));
  EXPECT_EQ(g->tensor(g->outputs[0].tensor).dims, (std::vector<int64_t>{2, 3, 5}));
}

TEST(OnnxTensorGraphTest, Conv1dIsAHeightOneConv2d) {
  OnnxBuilder b;
  b.Input("x", {1, 4, 10});
  b.Weight("w", {6, 4, 3}, std::vector<float>(72, 0.5f));
  auto& conv = b.Node("Conv", {"x", "w"}, {"y"}, "conv1d");
  OnnxBuilder::AttrInts(conv, "strides", {2});
  OnnxBuilder::AttrInts(conv, "pads", {1, 1});
  b.Output("y");
  auto g = ImportOnnx(b.Bytes(), {});
  ASSERT_TRUE(g.ok()) << g.status();
  auto conv_op = std::find_if(g->ops.begin(), g->ops.end(),
                              [](const Op& op) { return op.kind == OpKind::kConv2d; });
  ASSERT_NE(conv_op, g->ops.end());
  const Window2d& w = std::get<ConvAttrs>(conv_op->attrs).window;
  EXPECT_EQ(w.kernel_h, 1);
  EXPECT_EQ(w.kernel_w, 3);
  EXPECT_EQ(w.stride_w, 2);
  EXPECT_EQ(w.pad_left, 1);
  EXPECT_EQ(w.pad_top, 0);
  EXPECT_EQ(g->outputs[0].onnx_dims, (std::vector<int64_t>{1, 6, 5}));
}

TEST(OnnxTensorGraphTest, Pool1dIsRefusedAsPooling) {
  OnnxBuilder b;
  b.Input("x", {1, 4, 10});
  auto& pool = b.Node("MaxPool", {"x"}, {"y"}, "pool1d");
  OnnxBuilder::AttrInts(pool, "kernel_shape", {2});
  b.Output("y");
  absl::Status s = ImportStatus(b);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(s.message()), HasSubstr("pool1d"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("only 2-D pooling"));
}

TEST(OnnxTensorGraphTest, WhereWithAConstantMaskIsArithmetic) {
  OnnxBuilder b;
  b.Input("s", {4});
  b.ConstInts("a", {0, 1, 1, 0});
  b.ConstInts("zero", {0});
  b.Node("Equal", {"a", "zero"}, {"m"});
  b.ConstFloats("fill", {1}, {-100});
  b.Node("Where", {"m", "fill", "s"}, {"y"}, "masked_fill");
  b.Output("y");
  auto g = ImportOnnx(b.Bytes(), {});
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->ops.size(), 2u);
  EXPECT_EQ(g->ops[0].kind, OpKind::kMul);
  EXPECT_EQ(g->ops[1].kind, OpKind::kAdd);
  auto data = [&](const Op& op) {
    return g->constants[static_cast<size_t>(g->tensor(op.inputs[1]).constant)].data;
  };
  EXPECT_THAT(data(g->ops[0]), ElementsAre(0, 1, 1, 0));        // keep s where the mask is false
  EXPECT_THAT(data(g->ops[1]), ElementsAre(-100, 0, 0, -100));  // the fill where it is true
}

TEST(OnnxTensorGraphTest, EinsumWithEllipsisIsRefusedNamingTheNode) {
  OnnxBuilder b(17);
  b.Input("q", {2, 3, 4});
  b.Input("k", {2, 5, 4});
  auto& e = b.Node("Einsum", {"q", "k"}, {"s"}, "ellipsis_einsum");
  OnnxBuilder::AttrString(e, "equation", "...ik,...jk->...ij");
  b.Output("s");
  absl::Status s = ImportStatus(b);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(s.message()), HasSubstr("ellipsis_einsum"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("ellipsis"));
}

TEST(OnnxTensorGraphTest, WhereWithAComputedConditionIsRefused) {
  OnnxBuilder b;
  b.Input("c", {4});
  b.Input("s", {4});
  b.ConstFloats("fill", {1}, {0});
  b.Node("Where", {"c", "fill", "s"}, {"y"}, "computed_where");
  b.Output("y");
  absl::Status s = ImportStatus(b);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(s.message()), HasSubstr("computed_where"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("constant condition"));
}

TEST(OnnxTensorGraphTest, IntegerModByZeroNamesTheNode) {
  OnnxBuilder b;
  b.ConstInts("x", {5});
  b.ConstInts("y", {0});
  b.Node("Mod", {"x", "y"}, {"r"}, "mod_by_zero");
  b.Input("in", {1});
  b.Node("Relu", {"in"}, {"out"});
  b.Output("out");
  absl::Status s = ImportStatus(b);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("mod_by_zero"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("by zero"));
}

TEST(OnnxTensorGraphTest, ScatterNDIndexOutOfRangeNamesTheNode) {
  OnnxBuilder b;
  b.ConstFloats("data", {4}, {0, 0, 0, 0});
  b.ConstInts("flat", {9});
  b.ConstInts("shape", {1, 1});
  b.Node("Reshape", {"flat", "shape"}, {"idx"});
  b.ConstFloats("upd", {1}, {1});
  b.Node("ScatterND", {"data", "idx", "upd"}, {"f"}, "scatter_oob");
  b.Input("x", {4});
  b.Node("Add", {"x", "f"}, {"y"});
  b.Output("y");
  absl::Status s = ImportStatus(b);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("scatter_oob"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("out of range"));
}

TEST(OnnxTensorGraphTest, HugeConstantRangeIsRefused) {
  OnnxBuilder b;
  b.ConstScalar("start", 0);
  b.ConstScalar("limit", int64_t{1} << 60);
  b.ConstScalar("delta", 1);
  b.Node("Range", {"start", "limit", "delta"}, {"r"}, "huge_range");
  b.Input("x", {1});
  b.Node("Relu", {"x"}, {"y"});
  b.Output("y");
  absl::Status s = ImportStatus(b);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(s.message()), HasSubstr("huge_range"));
}

}  // namespace
}  // namespace psched::model
