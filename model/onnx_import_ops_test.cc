// Operator conversion: layouts (NCHW -> NHWC, OIHW -> OHWI, [out][in]), windows and shapes,
// checked on small hand-built models with traceable weights.
#include <gtest/gtest.h>

#include "model/onnx_import.h"
#include "model/onnx_test_builder.h"

namespace psched::model {
namespace {

using ::psched::model::testing::Iota;
using ::psched::model::testing::OnnxBuilder;

Graph MustImport(const OnnxBuilder& b) {
  auto g = ImportOnnx(b.Bytes(), {});
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? *std::move(g) : Graph{};
}

const Constant& ConstantOf(const Graph& g, ConstantId id) {
  return g.constants.at(static_cast<size_t>(id));
}

TEST(OnnxImportOpsTest, ConvFilterBecomesOhwi) {
  OnnxBuilder b;
  b.Input("x", {1, 3, 5, 5});
  b.Weight("w", {2, 3, 2, 2}, Iota(24));
  b.Node("Conv", {"x", "w"}, {"y"}, "conv");
  b.Output("y");
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 1u);
  EXPECT_TRUE(g.has_weights);
  EXPECT_EQ(g.output_shape(0), (Shape{4, 4, 2}));
  const auto& conv = std::get<ConvAttrs>(g.ops[0].attrs);
  EXPECT_EQ(conv.bias, kInvalidId);
  const Constant& f = ConstantOf(g, conv.filter);
  EXPECT_EQ(f.dims, (std::vector<int64_t>{2, 2, 2, 3}));
  for (int o = 0; o < 2; ++o)
    for (int y = 0; y < 2; ++y)
      for (int x = 0; x < 2; ++x)
        for (int i = 0; i < 3; ++i)
          EXPECT_EQ(f.data[static_cast<size_t>(((o * 2 + y) * 2 + x) * 3 + i)],
                    static_cast<float>(o * 12 + i * 4 + y * 2 + x));
}

TEST(OnnxImportOpsTest, DepthwiseDilatedSameUpperConv) {
  OnnxBuilder b;
  b.Input("x", {1, 4, 9, 9});
  b.Weight("w", {4, 1, 3, 3});
  auto& conv = b.Node("Conv", {"x", "w"}, {"y"}, "dw");
  OnnxBuilder::AttrInt(conv, "group", 4);
  OnnxBuilder::AttrInts(conv, "strides", {2, 2});
  OnnxBuilder::AttrInts(conv, "dilations", {2, 2});
  OnnxBuilder::AttrString(conv, "auto_pad", "SAME_UPPER");
  b.Output("y");
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 1u);
  EXPECT_EQ(g.output_shape(0), (Shape{5, 5, 4}));
  const auto& attrs = std::get<ConvAttrs>(g.ops[0].attrs);
  EXPECT_EQ(attrs.groups, 4);
  EXPECT_EQ(attrs.window.dilation_h, 2);
  // out 5 = ceil(9 / 2); extent 5; total padding 4*2 + 5 - 9 = 4, split evenly.
  EXPECT_EQ(attrs.window.pad_top, 2);
  EXPECT_EQ(attrs.window.pad_bottom, 2);
  EXPECT_EQ(ConstantOf(g, attrs.filter).dims, (std::vector<int64_t>{4, 3, 3, 1}));
}

TEST(OnnxImportOpsTest, SameLowerPutsOddPaddingFirst) {
  OnnxBuilder b;
  b.Input("x", {1, 1, 8, 8});
  b.Weight("w", {1, 1, 3, 3});
  auto& conv = b.Node("Conv", {"x", "w"}, {"y"}, "conv");
  OnnxBuilder::AttrInts(conv, "strides", {2, 2});
  OnnxBuilder::AttrString(conv, "auto_pad", "SAME_LOWER");
  b.Output("y");
  Graph g = MustImport(b);
  const auto& w = std::get<ConvAttrs>(g.ops[0].attrs).window;
  EXPECT_EQ(g.output_shape(0), (Shape{4, 4, 1}));
  EXPECT_EQ(w.pad_top, 1);
  EXPECT_EQ(w.pad_bottom, 0);
}

TEST(OnnxImportOpsTest, GemmWithoutTransBTransposesAndScales) {
  OnnxBuilder b;
  b.Input("x", {1, 3});
  b.Weight("B", {3, 2}, Iota(6));  // [in][out]
  b.Weight("C", {2}, {1.0f, 2.0f});
  auto& gemm = b.Node("Gemm", {"x", "B", "C"}, {"y"}, "gemm");
  OnnxBuilder::AttrFloat(gemm, "alpha", 2.0f);
  OnnxBuilder::AttrFloat(gemm, "beta", 0.5f);
  b.Output("y");
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 1u);
  EXPECT_EQ(g.ops[0].kind, OpKind::kFullyConnected);
  EXPECT_EQ(g.output_shape(0), (Shape{1, 1, 2}));
  const auto& fc = std::get<FullyConnectedAttrs>(g.ops[0].attrs);
  const Constant& w = ConstantOf(g, fc.weight);
  EXPECT_EQ(w.dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(w.data, (std::vector<float>{0, 4, 8, 2, 6, 10}));  // 2 * B^T
  EXPECT_EQ(ConstantOf(g, fc.bias).data, (std::vector<float>{0.5f, 1.0f}));
}

TEST(OnnxImportOpsTest, MatMulWeightIsTransposed) {
  OnnxBuilder b;
  b.Input("x", {1, 2});
  b.Weight("W", {2, 3}, Iota(6));
  b.Node("MatMul", {"x", "W"}, {"y"}, "matmul");
  b.Output("y");
  Graph g = MustImport(b);
  const auto& fc = std::get<FullyConnectedAttrs>(g.ops[0].attrs);
  EXPECT_EQ(ConstantOf(g, fc.weight).data, (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(g.output_shape(0), (Shape{1, 1, 3}));
}

TEST(OnnxImportOpsTest, ElementwiseConstantsBroadcastInNhwc) {
  OnnxBuilder b;
  b.Input("x", {1, 2, 2, 3});
  b.Weight("per_channel", {2, 1, 1}, {10.0f, 20.0f});
  b.Weight("full", {1, 2, 2, 3}, Iota(12));
  b.ConstFloats("scalar", {}, {0.5f});
  b.Node("Add", {"x", "per_channel"}, {"a"}, "add");
  b.Node("Sub", {"full", "a"}, {"s"}, "sub");  // constant first: full - a
  b.Node("Mul", {"s", "scalar"}, {"y"}, "mul");
  b.Output("y");
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 3u);
  // add: constant operand {1,1,C}
  const Tensor& pc = g.tensor(g.ops[0].inputs[1]);
  EXPECT_EQ(pc.shape, (Shape{1, 1, 2}));
  EXPECT_EQ(ConstantOf(g, pc.constant).dims, (std::vector<int64_t>{1, 1, 2}));
  EXPECT_EQ(ConstantOf(g, pc.constant).data, (std::vector<float>{10, 20}));
  // sub: the constant stays the first operand, transposed to HWC.
  EXPECT_EQ(g.ops[1].kind, OpKind::kSub);
  const Tensor& full = g.tensor(g.ops[1].inputs[0]);
  EXPECT_NE(full.constant, kInvalidId);
  EXPECT_EQ(full.shape, (Shape{2, 3, 2}));
  EXPECT_EQ(ConstantOf(g, full.constant).data,
            (std::vector<float>{0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11}));
  const Tensor& scalar = g.tensor(g.ops[2].inputs[1]);
  EXPECT_EQ(scalar.shape, (Shape{1, 1, 1}));
  EXPECT_EQ(ConstantOf(g, scalar.constant).data, (std::vector<float>{0.5f}));
  EXPECT_EQ(g.ActivationInputs(1).size(), 1u);
}

TEST(OnnxImportOpsTest, TensorPlusTensorBroadcast) {
  OnnxBuilder b;
  b.Input("x", {1, 4, 6, 6});
  b.Node("GlobalAveragePool", {"x"}, {"p"}, "gap");
  b.Node("Sigmoid", {"p"}, {"s"}, "gate");
  b.Node("Mul", {"x", "s"}, {"y"}, "scale");
  b.Output("y");
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 3u);
  EXPECT_EQ(g.ops[2].kind, OpKind::kMul);
  EXPECT_EQ(g.output_shape(2), (Shape{6, 6, 4}));
  EXPECT_EQ(g.ActivationInputs(2).size(), 2u);
}

TEST(OnnxImportOpsTest, FlattenOfSpatialTensorIsAnOp) {
  OnnxBuilder b;
  b.Input("x", {1, 2, 2, 2});
  b.Node("Flatten", {"x"}, {"f"}, "flatten");
  b.Output("f", {1, 8});
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 1u);
  EXPECT_EQ(g.ops[0].kind, OpKind::kFlatten);
  EXPECT_EQ(g.output_shape(0), (Shape{1, 1, 8}));
  EXPECT_EQ(g.tensor(g.ops[0].output).onnx_rank, 2);
}

TEST(OnnxImportOpsTest, ReshapeOfPooledTensorVanishes) {
  OnnxBuilder b;
  b.Input("x", {1, 8, 4, 4});
  b.Node("GlobalAveragePool", {"x"}, {"p"}, "gap");
  b.Ints("shape", {1, -1});
  b.Node("Reshape", {"p", "shape"}, {"y"}, "reshape");
  b.Output("y", {1, 8});
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 1u);
  EXPECT_EQ(g.ops[0].kind, OpKind::kGlobalAvgPool);
  EXPECT_EQ(g.outputs[0].tensor, g.ops[0].output);
  EXPECT_EQ(g.outputs[0].onnx_dims, (std::vector<int64_t>{1, 8}));
}

TEST(OnnxImportOpsTest, ShapeSubgraphIsFolded) {
  OnnxBuilder b;
  b.Input("x", {1, 4, 2, 2});
  b.Node("Shape", {"x"}, {"shape"}, "shape");
  b.ConstScalar("zero", 0);
  b.Node("Gather", {"shape", "zero"}, {"batch"}, "gather");
  b.ConstInts("axes", {0});
  b.Node("Unsqueeze", {"batch", "axes"}, {"batch1"}, "unsqueeze");
  b.ConstInts("minus_one", {-1});
  b.Node("Concat", {"batch1", "minus_one"}, {"target"}, "concat_shape");
  b.Node("Reshape", {"x", "target"}, {"y"}, "reshape");
  b.Output("y", {1, 16});
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 1u);
  EXPECT_EQ(g.ops[0].kind, OpKind::kFlatten);
  EXPECT_EQ(g.output_shape(0), (Shape{1, 1, 16}));
}

// PyTorch's F.pad export: pads computed by ConstantOfShape, Reshape, Slice (step -1),
// Transpose and Cast on constants, all folded before the Pad is converted.
TEST(OnnxImportOpsTest, TorchPadSubgraphIsFolded) {
  OnnxBuilder b;
  b.Input("x", {1, 2, 3, 3});
  b.ConstInts("four", {4});
  auto& zeros = b.Node("ConstantOfShape", {"four"}, {"zeros"}, "zeros");
  auto* value = zeros.add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::INT64);
  value->mutable_t()->add_dims(1);
  value->mutable_t()->add_int64_data(0);
  b.ConstInts("torch_pads", {1, 2, 3, 4});  // (left, right, top, bottom) of W then H
  auto& cat = b.Node("Concat", {"torch_pads", "zeros"}, {"all"}, "cat");
  OnnxBuilder::AttrInt(cat, "axis", 0);
  b.ConstInts("pairs", {-1, 2});
  b.Node("Reshape", {"all", "pairs"}, {"paired"}, "pair");
  b.ConstInts("start", {-1});
  b.ConstInts("end", {-9223372036854775807});
  b.ConstInts("axis0", {0});
  b.ConstInts("step", {-1});
  b.Node("Slice", {"paired", "start", "end", "axis0", "step"}, {"reversed"}, "reverse");
  auto& t = b.Node("Transpose", {"reversed"}, {"transposed"}, "transpose");
  OnnxBuilder::AttrInts(t, "perm", {1, 0});
  b.ConstInts("flat", {-1});
  b.Node("Reshape", {"transposed", "flat"}, {"onnx_pads"}, "flatten_pads");
  auto& cast = b.Node("Cast", {"onnx_pads"}, {"pads"}, "cast");
  OnnxBuilder::AttrInt(cast, "to", onnx::TensorProto::INT64);
  b.Node("Pad", {"x", "pads"}, {"y"}, "pad");
  b.Output("y");
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 1u);
  const auto& pad = std::get<PadAttrs>(g.ops[0].attrs);
  EXPECT_EQ(pad.top, 3);
  EXPECT_EQ(pad.bottom, 4);
  EXPECT_EQ(pad.left, 1);
  EXPECT_EQ(pad.right, 2);
  EXPECT_EQ(g.output_shape(0), (Shape{10, 6, 2}));
}

TEST(OnnxImportOpsTest, MaxPoolCeilModeExtendsPadding) {
  OnnxBuilder b;
  b.Input("x", {1, 2, 6, 6});
  auto& pool = b.Node("MaxPool", {"x"}, {"y"}, "pool");
  OnnxBuilder::AttrInts(pool, "kernel_shape", {3, 3});
  OnnxBuilder::AttrInts(pool, "strides", {2, 2});
  OnnxBuilder::AttrInt(pool, "ceil_mode", 1);
  b.Output("y");
  Graph g = MustImport(b);
  EXPECT_EQ(g.output_shape(0), (Shape{3, 3, 2}));
  const auto& attrs = std::get<PoolAttrs>(g.ops[0].attrs);
  EXPECT_EQ(attrs.window.pad_bottom, 1);
  EXPECT_EQ(attrs.window.pad_right, 1);
  EXPECT_EQ(attrs.declared_pad_bottom, 0);
}

TEST(OnnxImportOpsTest, AveragePoolCountIncludePad) {
  OnnxBuilder b;
  b.Input("x", {1, 2, 5, 5});
  auto& pool = b.Node("AveragePool", {"x"}, {"y"}, "pool");
  OnnxBuilder::AttrInts(pool, "kernel_shape", {3, 3});
  OnnxBuilder::AttrInts(pool, "pads", {1, 1, 1, 1});
  OnnxBuilder::AttrInt(pool, "count_include_pad", 1);
  b.Output("y");
  Graph g = MustImport(b);
  EXPECT_EQ(g.output_shape(0), (Shape{5, 5, 2}));
  const auto& attrs = std::get<PoolAttrs>(g.ops[0].attrs);
  EXPECT_TRUE(attrs.count_include_pad);
  EXPECT_EQ(attrs.declared_pad_bottom, 1);
}

TEST(OnnxImportOpsTest, ConstantPad) {
  OnnxBuilder b;
  b.Input("x", {1, 2, 3, 3});
  b.Ints("pads", {0, 0, 1, 2, 0, 1, 3, 4});
  b.ConstFloats("value", {}, {0.5f});
  b.Node("Pad", {"x", "pads", "value"}, {"y"}, "pad");
  b.Output("y");
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 1u);
  EXPECT_EQ(g.output_shape(0), (Shape{7, 9, 3}));
  const auto& pad = std::get<PadAttrs>(g.ops[0].attrs);
  EXPECT_EQ(pad.top, 1);
  EXPECT_EQ(pad.left, 2);
  EXPECT_EQ(pad.bottom, 3);
  EXPECT_EQ(pad.right, 4);
  EXPECT_EQ(pad.channels_after, 1);
  EXPECT_EQ(pad.value, 0.5f);
}

TEST(OnnxImportOpsTest, ZeroPadVanishes) {
  OnnxBuilder b;
  b.Input("x", {1, 2, 3, 3});
  b.Ints("pads", {0, 0, 0, 0, 0, 0, 0, 0});
  b.Node("Pad", {"x", "pads"}, {"p"}, "pad");
  b.Node("Relu", {"p"}, {"y"}, "relu");
  b.Output("y");
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 1u);
  EXPECT_EQ(g.ops[0].kind, OpKind::kActivation);
}

TEST(OnnxImportOpsTest, ResizeWithScales) {
  OnnxBuilder b;
  b.Input("x", {1, 3, 4, 5});
  b.ConstFloats("scales", {4}, {1, 1, 2, 3});
  auto& resize = b.Node("Resize", {"x", "", "scales"}, {"y"}, "resize");
  OnnxBuilder::AttrString(resize, "mode", "nearest");
  OnnxBuilder::AttrString(resize, "coordinate_transformation_mode", "asymmetric");
  OnnxBuilder::AttrString(resize, "nearest_mode", "floor");
  b.Output("y");
  Graph g = MustImport(b);
  EXPECT_EQ(g.output_shape(0), (Shape{8, 15, 3}));
  const auto& r = std::get<ResizeAttrs>(g.ops[0].attrs);
  EXPECT_EQ(r.mode, ResizeMode::kNearest);
  EXPECT_EQ(r.transform, CoordinateTransform::kAsymmetric);
  EXPECT_EQ(r.rounding, NearestRounding::kFloor);
  EXPECT_EQ(r.scale_w, 3.0f);
}

TEST(OnnxImportOpsTest, ResizeWithSizesIsLinearHalfPixelByDefault) {
  OnnxBuilder b;
  b.Input("x", {1, 3, 4, 4});
  b.Ints("sizes", {1, 3, 6, 10});
  auto& resize = b.Node("Resize", {"x", "", "", "sizes"}, {"y"}, "resize");
  OnnxBuilder::AttrString(resize, "mode", "linear");
  b.Output("y");
  Graph g = MustImport(b);
  EXPECT_EQ(g.output_shape(0), (Shape{6, 10, 3}));
  const auto& r = std::get<ResizeAttrs>(g.ops[0].attrs);
  EXPECT_EQ(r.mode, ResizeMode::kLinear);
  EXPECT_EQ(r.transform, CoordinateTransform::kHalfPixel);
  EXPECT_FLOAT_EQ(r.scale_h, 1.5f);
  EXPECT_FLOAT_EQ(r.scale_w, 2.5f);
}

TEST(OnnxImportOpsTest, UpsampleOpset9) {
  OnnxBuilder b(9);
  b.Input("x", {1, 2, 3, 3});
  b.Weight("scales", {4}, {1, 1, 2, 2});
  b.Node("Upsample", {"x", "scales"}, {"y"}, "up");
  b.Output("y");
  Graph g = MustImport(b);
  EXPECT_EQ(g.output_shape(0), (Shape{6, 6, 2}));
  EXPECT_EQ(std::get<ResizeAttrs>(g.ops[0].attrs).transform, CoordinateTransform::kAsymmetric);
}

TEST(OnnxImportOpsTest, ClipFromInputsFusesAsRelu6) {
  OnnxBuilder b;
  b.Input("x", {1, 3, 4, 4});
  b.Weight("w", {8, 3, 1, 1});
  b.Node("Conv", {"x", "w"}, {"c"}, "conv");
  b.ConstFloats("lo", {}, {0.0f});
  b.ConstFloats("hi", {}, {6.0f});
  b.Node("Clip", {"c", "lo", "hi"}, {"y"}, "relu6");
  b.Output("y");
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 1u);
  EXPECT_EQ(g.ops[0].activation.kind, ActivationKind::kClip);
  EXPECT_EQ(g.ops[0].activation.min, 0.0f);
  EXPECT_EQ(g.ops[0].activation.max, 6.0f);
}

TEST(OnnxImportOpsTest, ClipFromAttributesInOldOpsets) {
  OnnxBuilder b(9);
  b.Input("x", {1, 3, 4, 4});
  auto& clip = b.Node("Clip", {"x"}, {"y"}, "clip");
  OnnxBuilder::AttrFloat(clip, "min", -1.0f);
  OnnxBuilder::AttrFloat(clip, "max", 1.0f);
  b.Output("y");
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 1u);
  EXPECT_EQ(g.ops[0].kind, OpKind::kActivation);
  EXPECT_EQ(g.ops[0].activation.min, -1.0f);
  EXPECT_EQ(g.ops[0].activation.max, 1.0f);
}

TEST(OnnxImportOpsTest, HardActivationsAndSoftmax) {
  OnnxBuilder b(14);
  b.Input("x", {1, 4});
  b.Weight("w1", {4, 4});
  b.Weight("w2", {4, 4});
  b.Node("MatMul", {"x", "w1"}, {"a"}, "fc1");
  auto& hs = b.Node("HardSigmoid", {"a"}, {"b"}, "hsig");
  OnnxBuilder::AttrFloat(hs, "alpha", 0.25f);
  b.Node("MatMul", {"b", "w2"}, {"c"}, "fc2");
  b.Node("HardSwish", {"c"}, {"d"}, "hswish");
  b.Node("Softmax", {"d"}, {"y"}, "softmax");
  b.Output("y");
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 3u);
  EXPECT_EQ(g.ops[0].activation.kind, ActivationKind::kHardSigmoid);
  EXPECT_EQ(g.ops[0].activation.alpha, 0.25f);
  EXPECT_EQ(g.ops[0].activation.beta, 0.5f);
  EXPECT_EQ(g.ops[1].activation.kind, ActivationKind::kHardSwish);
  EXPECT_EQ(g.ops[2].kind, OpKind::kSoftmax);
}

TEST(OnnxImportOpsTest, ConcatAlongChannels) {
  OnnxBuilder b;
  b.Input("x", {1, 3, 4, 4});
  b.Weight("w1", {5, 3, 1, 1});
  b.Weight("w2", {7, 3, 3, 3});
  b.Node("Conv", {"x", "w1"}, {"a"}, "conv_a");
  auto& c = b.Node("Conv", {"x", "w2"}, {"b"}, "conv_b");
  OnnxBuilder::AttrInts(c, "pads", {1, 1, 1, 1});
  auto& cat = b.Node("Concat", {"a", "b", "x"}, {"y"}, "concat");
  OnnxBuilder::AttrInt(cat, "axis", 1);
  b.Output("y");
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 3u);
  EXPECT_EQ(g.output_shape(2), (Shape{4, 4, 15}));
  EXPECT_EQ(g.ops[2].inputs.size(), 3u);
}

TEST(OnnxImportOpsTest, IdentityAndDropoutDisappear) {
  OnnxBuilder b;
  b.Input("x", {1, 3, 4, 4});
  b.Node("Identity", {"x"}, {"a"}, "identity");
  b.Node("Dropout", {"a"}, {"d"}, "dropout");
  b.Node("Relu", {"d"}, {"y"}, "relu");
  b.Output("y");
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 1u);
  EXPECT_EQ(g.ops[0].inputs[0], g.inputs[0].tensor);
}

TEST(OnnxImportOpsTest, GraphNameFromOptionsOrModel) {
  OnnxBuilder b;
  b.Input("x", {1, 3, 4, 4});
  b.Node("Relu", {"x"}, {"y"}, "relu");
  b.Output("y");
  EXPECT_EQ(MustImport(b).name, "test_graph");
  ImportOptions options;
  options.name = "renamed";
  auto g = ImportOnnx(b.Bytes(), options);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->name, "renamed");
}

TEST(OnnxImportOpsTest, UnsortedNodesAreOrdered) {
  OnnxBuilder b;
  b.Input("x", {1, 3, 4, 4});
  b.Node("Sigmoid", {"r"}, {"y"}, "second");
  b.Node("Relu", {"x"}, {"r"}, "first");
  b.Output("y");
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 2u);
  EXPECT_EQ(g.ops[0].name, "first");
  EXPECT_EQ(g.ops[1].name, "second");
}

}  // namespace
}  // namespace psched::model
