// Graph inputs at import: symbolic dimensions bound by default (the batch) or by given shapes
// (ImportOptions::input_shapes, the `NAME=DIMS` text form), every wrong binding refused with
// a message naming the input and the dimension, and external data refused when an upload
// must be self-contained.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/input_shapes.h"
#include "model/onnx_import.h"
#include "model/onnx_test_builder.h"

namespace psched::model {
namespace {

using ::psched::model::testing::Iota;
using ::psched::model::testing::OnnxBuilder;
using ::testing::HasSubstr;

// Marks dim `dim` of graph input `input` symbolic: named `symbol`, or unnamed when empty.
void MakeSymbolic(OnnxBuilder& b, int input, int dim, const std::string& symbol) {
  auto* d = b.model()
                .mutable_graph()
                ->mutable_input(input)
                ->mutable_type()
                ->mutable_tensor_type()
                ->mutable_shape()
                ->mutable_dim(dim);
  d->Clear();
  if (!symbol.empty()) d->set_dim_param(symbol);
}

// x [N,3,8,8] -> conv (4x3x3x3, pad 1) -> relu -> global avg pool -> flatten -> gemm -> y [N,10],
// as exported with a dynamic batch axis. Weights inline, so it can run.
OnnxBuilder DynamicBatchNet() {
  OnnxBuilder b;
  b.Input("x", {-1, 3, 8, 8});
  b.Weight("w", {4, 3, 3, 3}, Iota(4 * 3 * 3 * 3, 0.01f)).Weight("bias", {4}, Iota(4));
  b.Weight("fc.w", {10, 4}, Iota(40, 0.1f)).Weight("fc.b", {10}, Iota(10));
  OnnxBuilder::AttrInts(b.Node("Conv", {"x", "w", "bias"}, {"c"}, "conv1"), "pads", {1, 1, 1, 1});
  b.Node("Relu", {"c"}, {"r"}, "relu1");
  b.Node("GlobalAveragePool", {"r"}, {"p"}, "gap");
  b.Node("Flatten", {"p"}, {"f"}, "flatten");
  OnnxBuilder::AttrInt(b.Node("Gemm", {"f", "fc.w", "fc.b"}, {"y"}, "fc"), "transB", 1);
  b.Output("y", {-1, 10});
  return b;
}

// image [N,3,H,W] -> relu -> out [N,3,H,W]: every spatial dim symbolic.
OnnxBuilder DynamicImageNet() {
  OnnxBuilder b;
  b.Input("image", {-1, 3, 8, 8});
  MakeSymbolic(b, 0, 2, "H");
  MakeSymbolic(b, 0, 3, "W");
  b.Node("Relu", {"image"}, {"out"}, "relu");
  b.Output("out", {-1, 3, -1, -1});
  return b;
}

ImportOptions Given(InputShapes shapes) {
  ImportOptions options;
  options.input_shapes = std::move(shapes);
  return options;
}

std::string Message(const absl::Status& s) { return std::string(s.message()); }

TEST(OnnxImportInputsTest, SymbolicBatchIsBoundToOne) {
  auto g = ImportOnnx(DynamicBatchNet().Bytes(), {});
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->inputs.size(), 1u);
  EXPECT_EQ(g->inputs[0].onnx_dims, (std::vector<int64_t>{1, 3, 8, 8}));
  ASSERT_EQ(g->outputs.size(), 1u);
  EXPECT_EQ(g->outputs[0].onnx_dims, (std::vector<int64_t>{1, 10}));
  EXPECT_TRUE(g->has_weights);
}

TEST(OnnxImportInputsTest, UnknownBatchWrittenAsZeroOrMinusOneIsBoundToOne) {
  for (int64_t unknown : {0, -1}) {
    OnnxBuilder b = DynamicBatchNet();
    MakeSymbolic(b, 0, 0, "");
    b.model()
        .mutable_graph()
        ->mutable_input(0)
        ->mutable_type()
        ->mutable_tensor_type()
        ->mutable_shape()
        ->mutable_dim(0)
        ->set_dim_value(unknown);
    auto g = ImportOnnx(b.Bytes(), {});
    ASSERT_TRUE(g.ok()) << "dim_value " << unknown << ": " << g.status();
    EXPECT_EQ(g->inputs[0].onnx_dims, (std::vector<int64_t>{1, 3, 8, 8}));
  }
}

TEST(OnnxImportInputsTest, GivenShapeBindsEverySymbolicDim) {
  auto g = ImportOnnx(DynamicImageNet().Bytes(), Given({{"image", {1, 3, 16, 24}}}));
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->inputs[0].onnx_dims, (std::vector<int64_t>{1, 3, 16, 24}));
  EXPECT_EQ(g->outputs[0].onnx_dims, (std::vector<int64_t>{1, 3, 16, 24}));
}

TEST(OnnxImportInputsTest, GivenShapeThatRepeatsTheFixedDimsIsAccepted) {
  auto g = ImportOnnx(DynamicBatchNet().Bytes(), Given({{"x", {1, 3, 8, 8}}}));
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->inputs[0].onnx_dims, (std::vector<int64_t>{1, 3, 8, 8}));
}

TEST(OnnxImportInputsTest, GivenShapeForAnInputWithoutDeclaredShape) {
  OnnxBuilder b = DynamicImageNet();
  b.model().mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  auto g = ImportOnnx(b.Bytes(), Given({{"image", {1, 3, 4, 4}}}));
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->inputs[0].onnx_dims, (std::vector<int64_t>{1, 3, 4, 4}));
}

TEST(OnnxImportInputsTest, UnboundSymbolicDimNamesInputDimAndBinding) {
  absl::Status s = ImportOnnx(DynamicImageNet().Bytes(), {}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(s), HasSubstr("graph input 'image' dimension 2 'H'"));
  EXPECT_THAT(Message(s), HasSubstr("[N,3,H,W]"));
  EXPECT_THAT(Message(s), HasSubstr("dynamic (symbolic)"));
  EXPECT_THAT(Message(s), HasSubstr("--input-shape image=1x3x<H>x<W>"));
  EXPECT_THAT(Message(s), HasSubstr("input_shapes={\"image\": (1, 3, <H>, <W>)}"));
}

TEST(OnnxImportInputsTest, UnboundUnnamedDimIsNamedByPosition) {
  OnnxBuilder b = DynamicImageNet();
  MakeSymbolic(b, 0, 2, "");
  absl::Status s = ImportOnnx(b.Bytes(), {}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(s), HasSubstr("dimension 2 (unnamed)"));
  EXPECT_THAT(Message(s), HasSubstr("image=1x3x<dim2>x<W>"));
}

TEST(OnnxImportInputsTest, ShapeGivenForOneInputLeavesTheOtherToItsDefault) {
  OnnxBuilder b;
  b.Input("a", {-1, 3, 8, 8}).Input("b", {-1, 3, 8, 8});
  MakeSymbolic(b, 1, 3, "W");
  b.Node("Add", {"a", "b"}, {"y"}, "add");
  b.Output("y");
  absl::Status s = ImportOnnx(b.Bytes(), Given({{"a", {1, 3, 8, 8}}})).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(s), HasSubstr("graph input 'b' dimension 3 'W'"));
  auto g = ImportOnnx(b.Bytes(), Given({{"b", {1, 3, 8, 8}}}));
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->inputs[0].onnx_dims, (std::vector<int64_t>{1, 3, 8, 8}));
  EXPECT_EQ(g->inputs[1].onnx_dims, (std::vector<int64_t>{1, 3, 8, 8}));
}

TEST(OnnxImportInputsTest, GivenShapeContradictingAFixedDimIsRefused) {
  absl::Status s = ImportOnnx(DynamicBatchNet().Bytes(), Given({{"x", {1, 3, 16, 8}}})).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(s), HasSubstr("input shape given for 'x' [1,3,16,8] sets dim 2 to 16"));
  EXPECT_THAT(Message(s), HasSubstr("graph input 'x' [N,3,8,8] fixes it at 8"));
}

TEST(OnnxImportInputsTest, GivenShapeOfTheWrongRankIsRefused) {
  absl::Status s = ImportOnnx(DynamicBatchNet().Bytes(), Given({{"x", {1, 3, 8}}})).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(s), HasSubstr("input shape given for 'x' [1,3,8] has rank 3"));
  EXPECT_THAT(Message(s), HasSubstr("graph input 'x' has rank 4 [N,3,8,8]"));
}

TEST(OnnxImportInputsTest, GivenShapeForAnUnknownInputIsRefusedListingTheInputs) {
  absl::Status s =
      ImportOnnx(DynamicBatchNet().Bytes(), Given({{"images", {1, 3, 8, 8}}})).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(s), HasSubstr("input shape given for 'images'"));
  EXPECT_THAT(Message(s), HasSubstr("no graph input of that name (its inputs: x)"));
}

TEST(OnnxImportInputsTest, GivenShapeForAWeightIsRefused) {
  absl::Status s = ImportOnnx(DynamicBatchNet().Bytes(), Given({{"fc.w", {10, 4}}})).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(s), HasSubstr("'fc.w', but the model has no graph input of that name"));
}

TEST(OnnxImportInputsTest, GivenDimBelowOneIsRefused) {
  for (int64_t bad : {0, -3}) {
    absl::Status s =
        ImportOnnx(DynamicImageNet().Bytes(), Given({{"image", {1, 3, bad, 8}}})).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(Message(s), HasSubstr("has dim 2 = " + std::to_string(bad))) << bad;
  }
}

TEST(OnnxImportInputsTest, GivenShapeStillMeetsTheImportLimits) {
  absl::Status s =
      ImportOnnx(DynamicImageNet().Bytes(), Given({{"image", {1, 3, int64_t{1} << 30, 8}}}))
          .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_THAT(Message(s), HasSubstr("graph input 'image'"));
}

TEST(OnnxImportInputsTest, ExternalDataIsRefusedWhenUploadsMustBeSelfContained) {
  OnnxBuilder b = DynamicBatchNet();
  auto* w = b.model().mutable_graph()->mutable_initializer(0);
  w->clear_float_data();
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* location = w->add_external_data();
  location->set_key("location");
  location->set_value("net.onnx.data");
  ImportOptions options;
  options.refuse_external_data = true;
  absl::Status s = ImportOnnx(b.Bytes(), options).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(s), HasSubstr("tensor 'w'"));
  EXPECT_THAT(Message(s), HasSubstr("'net.onnx.data'"));
  EXPECT_THAT(
      Message(s),
      HasSubstr("inline the external data (pschedctl model add / psched.Client.add_model do it)"));

  // The same model imported graph-only: the absent weight leaves the graph without weights.
  auto g = ImportOnnx(b.Bytes(), {});
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_FALSE(g->has_weights);
}

TEST(OnnxImportInputsTest, SelfContainedModelImportsWhenExternalDataIsRefused) {
  ImportOptions options;
  options.refuse_external_data = true;
  auto g = ImportOnnx(DynamicBatchNet().Bytes(), options);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_TRUE(g->has_weights);
}

TEST(InputShapeTextTest, ParsesNameAndDims) {
  auto parsed = ParseInputShape("x=1x3x224x224");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->first, "x");
  EXPECT_EQ(parsed->second, (std::vector<int64_t>{1, 3, 224, 224}));
  EXPECT_EQ(InputDimsText(parsed->second), "1x3x224x224");

  auto scalar_like = ParseInputShape("tokens=128");
  ASSERT_TRUE(scalar_like.ok());
  EXPECT_EQ(scalar_like->second, (std::vector<int64_t>{128}));

  // The name is everything before the last '='.
  auto odd_name = ParseInputShape("input=a=1x2");
  ASSERT_TRUE(odd_name.ok());
  EXPECT_EQ(odd_name->first, "input=a");
  EXPECT_EQ(odd_name->second, (std::vector<int64_t>{1, 2}));
}

TEST(InputShapeTextTest, MalformedTextIsRefusedSayingWhy) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"x", "no '='"},
      {"=1x3", "the input name is empty"},
      {"x=", "no dims after '='"},
      {"x=1xx3", "dim 1 is empty"},
      {"x=1x3x", "dim 2 is empty"},
      {"x=1x-3", "dim 1 ('-3') is not a decimal number"},
      {"x=1x3.5", "dim 1 ('3.5') is not a decimal number"},
      {"x=1, 3", "dim 0 ('1, 3') is not a decimal number"},
      {"x=1x0", "dim 1 is 0"},
      {"x=99999999999999999999", "dim 0 is larger than"},
  };
  for (const auto& [text, why] : cases) {
    auto parsed = ParseInputShape(text);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(Message(parsed.status()), HasSubstr("input shape '" + text + "'")) << text;
    EXPECT_THAT(Message(parsed.status()), HasSubstr(why)) << text;
    EXPECT_THAT(Message(parsed.status()), HasSubstr("expected NAME=DIMS such as x=1x3x224x224"));
  }
}

}  // namespace
}  // namespace psched::model
