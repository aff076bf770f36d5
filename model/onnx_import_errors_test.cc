// Bad input: every case gives a clear error (what, where, why), never a crash or hang.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "model/onnx_import.h"
#include "model/op_validation.h"
#include "model/onnx_test_builder.h"

namespace psched::model {
namespace {

using ::testing::HasSubstr;
using ::psched::model::testing::OnnxBuilder;

std::string SharedDir() {
  const char* dir = std::getenv("PSCHED_SHARED_DIR");
  return dir != nullptr ? dir : "/work/shared";
}

std::string ReadBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// input [1,3,8,8] -> conv (4x3x3x3, pad 1) -> relu -> global avg pool -> flatten -> gemm -> [1,10]
OnnxBuilder TinyNet() {
  OnnxBuilder b;
  b.Input("x", {1, 3, 8, 8});
  b.Weight("w", {4, 3, 3, 3}).Weight("bias", {4}).Weight("fc.w", {10, 4}).Weight("fc.b", {10});
  auto& conv = b.Node("Conv", {"x", "w", "bias"}, {"c"}, "conv1");
  OnnxBuilder::AttrInts(conv, "pads", {1, 1, 1, 1});
  b.Node("Relu", {"c"}, {"r"}, "relu1");
  b.Node("GlobalAveragePool", {"r"}, {"p"}, "gap");
  b.Node("Flatten", {"p"}, {"f"}, "flatten");
  auto& gemm = b.Node("Gemm", {"f", "fc.w", "fc.b"}, {"y"}, "fc");
  OnnxBuilder::AttrInt(gemm, "transB", 1);
  b.Output("y", {1, 10});
  return b;
}

absl::Status Import(const std::string& bytes, const ImportOptions& options = {}) {
  return ImportOnnx(bytes, options).status();
}

TEST(OnnxImportErrorsTest, TinyNetItselfImports) {
  auto g = ImportOnnx(TinyNet().Bytes(), {});
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->ops.size(), 3u);  // conv+relu, global avg pool, fc (flatten of 1x1 vanishes)
}

TEST(OnnxImportErrorsTest, EmptyBytes) {
  absl::Status s = Import("");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("empty"));
}

TEST(OnnxImportErrorsTest, TruncatedFile) {
  const std::string bytes = ReadBytes(SharedDir() + "/models/graph-only/squeezenet_v1_1.onnx");
  ASSERT_GT(bytes.size(), 1000u);
  absl::Status s = Import(bytes.substr(0, bytes.size() / 2));
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("protobuf parsing failed"));
}

TEST(OnnxImportErrorsTest, RandomBytes) {
  std::mt19937 rng(42);
  std::string bytes(4096, '\0');
  for (char& c : bytes) c = static_cast<char>(rng() & 0xff);
  absl::Status s = Import(bytes);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
}

TEST(OnnxImportErrorsTest, NoGraph) {
  onnx::ModelProto m;
  m.set_ir_version(7);
  absl::Status s = Import(m.SerializeAsString());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("no graph"));
}

TEST(OnnxImportErrorsTest, UnsupportedOpset) {
  OnnxBuilder b = TinyNet();
  b.model().mutable_opset_import(0)->set_version(5);
  absl::Status s = Import(b.Bytes());
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(s.message()), HasSubstr("opset 5"));
}

TEST(OnnxImportErrorsTest, Cycle) {
  OnnxBuilder b;
  b.Input("x", {1, 3, 8, 8});
  b.Node("Add", {"x", "b"}, {"a"}, "add_a");
  b.Node("Relu", {"a"}, {"b"}, "relu_b");
  b.Output("b", {1, 3, 8, 8});
  absl::Status s = Import(b.Bytes());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("cycle"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("add_a"));
}

TEST(OnnxImportErrorsTest, UnknownOpNamesNodeAndType) {
  OnnxBuilder b;
  b.Input("x", {1, 3, 8, 8});
  b.Node("FancyOp", {"x"}, {"y"}, "my_fancy_node");
  b.Output("y");
  absl::Status s = Import(b.Bytes());
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(s.message()), HasSubstr("my_fancy_node"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("FancyOp"));
}

TEST(OnnxImportErrorsTest, CustomDomain) {
  OnnxBuilder b = TinyNet();
  b.model().mutable_graph()->mutable_node(1)->set_domain("com.example");
  absl::Status s = Import(b.Bytes());
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(s.message()), HasSubstr("com.example"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("relu1"));
}

TEST(OnnxImportErrorsTest, DynamicDimension) {
  OnnxBuilder b = TinyNet();
  b.model().mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()
      ->mutable_shape()->mutable_dim(2)->set_dim_param("height");
  absl::Status s = Import(b.Bytes());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("graph input 'x'"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("dynamic"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("height"));
}

TEST(OnnxImportErrorsTest, UnknownDimension) {
  OnnxBuilder b = TinyNet();
  b.model().mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()
      ->mutable_shape()->mutable_dim(3)->clear_dim_value();
  absl::Status s = Import(b.Bytes());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("dimension 3"));
}

TEST(OnnxImportErrorsTest, BatchNotOne) {
  OnnxBuilder b;
  b.Input("x", {2, 3, 8, 8});
  b.Node("Relu", {"x"}, {"y"}, "relu");
  b.Output("y");
  absl::Status s = Import(b.Bytes());
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(s.message()), HasSubstr("batch size 2"));
}

TEST(OnnxImportErrorsTest, AbsurdInputSize) {
  OnnxBuilder b;
  b.Input("x", {1, 3, 100000, 100000});
  b.Node("Relu", {"x"}, {"y"}, "relu");
  b.Output("y");
  absl::Status s = Import(b.Bytes());
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(s.message()), HasSubstr("max_tensor_elements"));
}

TEST(OnnxImportErrorsTest, AbsurdDimension) {
  OnnxBuilder b;
  b.Input("x", {1, 1, 1, int64_t{1} << 40});
  b.Node("Relu", {"x"}, {"y"}, "relu");
  b.Output("y");
  absl::Status s = Import(b.Bytes());
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(s.message()), HasSubstr("max_dim"));
}

TEST(OnnxImportErrorsTest, AbsurdInitializer) {
  OnnxBuilder b = TinyNet();
  auto* w = b.model().mutable_graph()->mutable_initializer(0);
  w->set_dims(0, int64_t{1} << 40);
  absl::Status s = Import(b.Bytes());
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(s.message()), HasSubstr("'w'"));
}

TEST(OnnxImportErrorsTest, AbsurdResizeOutput) {
  OnnxBuilder b;
  b.Input("x", {1, 8, 64, 64});
  b.ConstFloats("scales", {4}, {1, 1, 4096, 4096});
  b.Node("Resize", {"x", "", "scales"}, {"y"}, "huge_resize");
  b.Output("y");
  absl::Status s = Import(b.Bytes());
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(s.message()), HasSubstr("huge_resize"));
}

TEST(OnnxImportErrorsTest, TooManyOps) {
  ImportOptions options;
  options.max_ops = 3;
  absl::Status s = Import(TinyNet().Bytes(), options);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(s.message()), HasSubstr("max_ops (3)"));
}

TEST(OnnxImportErrorsTest, ModelTooLarge) {
  ImportOptions options;
  options.max_model_bytes = 16;
  absl::Status s = Import(TinyNet().Bytes(), options);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(s.message()), HasSubstr("max_model_bytes"));
}

TEST(OnnxImportErrorsTest, MissingInitializer) {
  OnnxBuilder b = TinyNet();
  b.model().mutable_graph()->mutable_initializer()->DeleteSubrange(0, 1);  // "w"
  absl::Status s = Import(b.Bytes());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("conv1"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("'w'"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("missing initializer"));
}

TEST(OnnxImportErrorsTest, InitializerDataSizeMismatch) {
  OnnxBuilder b = TinyNet();
  auto* bias = b.model().mutable_graph()->mutable_initializer(1);
  bias->clear_data_location();
  bias->clear_external_data();
  bias->add_float_data(1.0f);  // 1 value for dims [4]
  absl::Status s = Import(b.Bytes());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("'bias'"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("holds 1 values, expected 4"));
}

TEST(OnnxImportErrorsTest, InconsistentChannelsAtConv) {
  OnnxBuilder b = TinyNet();
  b.model().mutable_graph()->mutable_initializer(0)->set_dims(1, 5);  // w: [4,5,3,3] on 3 channels
  absl::Status s = Import(b.Bytes());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("conv1"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("do not agree"));
}

TEST(OnnxImportErrorsTest, InconsistentShapesAtAdd) {
  OnnxBuilder b;
  b.Input("x", {1, 3, 8, 8});
  b.Weight("w1", {4, 3, 1, 1}).Weight("w2", {5, 3, 1, 1});
  b.Node("Conv", {"x", "w1"}, {"a"}, "conv_a");
  b.Node("Conv", {"x", "w2"}, {"b"}, "conv_b");
  b.Node("Add", {"a", "b"}, {"y"}, "bad_add");
  b.Output("y");
  absl::Status s = Import(b.Bytes());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("bad_add"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("[1,4,8,8] and [1,5,8,8]"));
}

TEST(OnnxImportErrorsTest, InconsistentDeclaredOutput) {
  OnnxBuilder b = TinyNet();
  b.model().mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()
      ->mutable_shape()->mutable_dim(1)->set_dim_value(7);
  absl::Status s = Import(b.Bytes());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("inconsistent shapes"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("'y'"));
}

TEST(OnnxImportErrorsTest, InconsistentValueInfo) {
  OnnxBuilder b = TinyNet();
  auto* info = b.model().mutable_graph()->add_value_info();
  info->set_name("c");
  auto* tt = info->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {1, 4, 6, 6}) tt->mutable_shape()->add_dim()->set_dim_value(d);
  absl::Status s = Import(b.Bytes());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("inconsistent shapes"));
}

TEST(OnnxImportErrorsTest, WrongInputDtype) {
  OnnxBuilder b;
  b.Input("x", {1, 3, 8, 8}, onnx::TensorProto::INT32);
  b.Node("Relu", {"x"}, {"y"}, "relu");
  b.Output("y");
  absl::Status s = Import(b.Bytes());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("graph input 'x'"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("element type INT32 (6)"));
}

TEST(OnnxImportErrorsTest, WrongWeightDtype) {
  OnnxBuilder b = TinyNet();
  auto* w = b.model().mutable_graph()->mutable_initializer(0);
  w->set_data_type(onnx::TensorProto::FLOAT16);
  absl::Status s = Import(b.Bytes());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("conv1"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("float32"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("FLOAT16 (10)"));
}

TEST(OnnxImportErrorsTest, NegativePads) {
  OnnxBuilder b = TinyNet();
  auto* pads = b.model().mutable_graph()->mutable_node(0)->mutable_attribute(0);
  pads->set_ints(0, -1);
  absl::Status s = Import(b.Bytes());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("conv1"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("pads"));
}

TEST(OnnxImportErrorsTest, ZeroStride) {
  OnnxBuilder b = TinyNet();
  OnnxBuilder::AttrInts(*b.model().mutable_graph()->mutable_node(0), "strides", {0, 1});
  absl::Status s = Import(b.Bytes());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("stride"));
}

TEST(OnnxImportErrorsTest, WrongAttributeType) {
  OnnxBuilder b = TinyNet();
  OnnxBuilder::AttrFloat(*b.model().mutable_graph()->mutable_node(0), "group", 1.0f);
  absl::Status s = Import(b.Bytes());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("'group' must be an int"));
}

TEST(OnnxImportErrorsTest, KernelLargerThanInput) {
  OnnxBuilder b;
  b.Input("x", {1, 3, 4, 4});
  b.Weight("w", {4, 3, 7, 7});
  b.Node("Conv", {"x", "w"}, {"y"}, "big_kernel");
  b.Output("y");
  absl::Status s = Import(b.Bytes());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("big_kernel"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("larger than the padded input"));
}

TEST(OnnxImportErrorsTest, SoftmaxOverAMiddleAxisNamesTheNode) {
  OnnxBuilder b;
  b.Input("x", {1, 4, 2, 2});
  b.Ints("shape", {1, 2, 8});
  b.Node("Reshape", {"x", "shape"}, {"r"}, "reshape");
  OnnxBuilder::AttrInt(b.Node("Softmax", {"r"}, {"y"}, "middle_softmax"), "axis", 1);
  b.Output("y");
  absl::Status s = Import(b.Bytes());
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(s.message()), HasSubstr("middle_softmax"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("last axis"));
}

TEST(OnnxImportErrorsTest, ReshapeElementCountMismatch) {
  OnnxBuilder b;
  b.Input("x", {1, 4, 2, 2});
  b.Ints("shape", {1, 15});
  b.Node("Reshape", {"x", "shape"}, {"y"}, "bad_reshape");
  b.Output("y");
  absl::Status s = Import(b.Bytes());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("bad_reshape"));
}

TEST(OnnxImportErrorsTest, ShapeInputWithoutData) {
  OnnxBuilder b;
  b.Input("x", {1, 4, 2, 2});
  b.Weight("shape", {2});  // external, absent: the shape cannot be known
  b.Node("Reshape", {"x", "shape"}, {"y"}, "reshape");
  b.Output("y");
  absl::Status s = Import(b.Bytes());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("data is absent"));
}

TEST(OnnxImportErrorsTest, DuplicateOutputName) {
  OnnxBuilder b;
  b.Input("x", {1, 3, 8, 8});
  b.Node("Relu", {"x"}, {"y"}, "first");
  b.Node("Sigmoid", {"x"}, {"y"}, "second");
  b.Output("y");
  absl::Status s = Import(b.Bytes());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("second"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("already defined"));
}

TEST(OnnxImportErrorsTest, OutputNotProduced) {
  OnnxBuilder b;
  b.Input("x", {1, 3, 8, 8});
  b.Node("Relu", {"x"}, {"y"}, "relu");
  b.Output("z");
  absl::Status s = Import(b.Bytes());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("graph output 'z'"));
}

TEST(OnnxImportErrorsTest, NoInput) {
  OnnxBuilder b;
  b.ConstFloats("c", {1}, {1.0f});
  b.Output("c");
  absl::Status s = Import(b.Bytes());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("no (non-initializer) input"));
}

TEST(OnnxImportErrorsTest, UsedMaxPoolIndices) {
  OnnxBuilder b;
  b.Input("x", {1, 3, 8, 8});
  auto& pool = b.Node("MaxPool", {"x"}, {"y", "idx"}, "pool_with_indices");
  OnnxBuilder::AttrInts(pool, "kernel_shape", {2, 2});
  b.Node("Relu", {"idx"}, {"z"}, "use_indices");
  b.Output("y");
  b.Output("z");
  absl::Status s = Import(b.Bytes());
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(s.message()), HasSubstr("pool_with_indices"));
}

TEST(OnnxImportErrorsTest, GatherIndexOutOfRange) {
  OnnxBuilder b;
  b.Input("x", {1, 4, 2, 2});
  b.Node("Shape", {"x"}, {"s"}, "shape");
  b.ConstInts("i", {7});
  b.Node("Gather", {"s", "i"}, {"g"}, "gather_oob");
  b.Node("Relu", {"x"}, {"y"}, "relu");
  b.Output("y");
  absl::Status s = Import(b.Bytes());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("gather_oob"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("out of range"));
}

TEST(OnnxImportErrorsTest, MissingFile) {
  auto g = ImportOnnxFile("/nonexistent/model.onnx", {});
  EXPECT_EQ(g.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(g.status().message()), HasSubstr("/nonexistent/model.onnx"));
}

// 200 seeded mutations and truncations of a real model: each must import or fail cleanly.
TEST(OnnxImportErrorsTest, MutatedModelsNeverCrash) {
  const std::string original =
      ReadBytes(SharedDir() + "/models/graph-only/squeezenet_v1_1.onnx");
  ASSERT_FALSE(original.empty());
  std::mt19937_64 rng(20240601);
  int failed = 0;
  for (int i = 0; i < 200; ++i) {
    std::string bytes = original;
    switch (i % 4) {
      case 0:  // truncation
        bytes.resize(rng() % bytes.size());
        break;
      case 1:  // a few random byte flips
        for (int k = 0, n = 1 + static_cast<int>(rng() % 8); k < n; ++k) {
          bytes[rng() % bytes.size()] = static_cast<char>(rng() & 0xff);
        }
        break;
      case 2:  // small integers overwritten: hits dims, attributes and lengths
        for (int k = 0, n = 1 + static_cast<int>(rng() % 4); k < n; ++k) {
          bytes[rng() % bytes.size()] = static_cast<char>(rng() % 16);
        }
        break;
      default: {  // a chunk deleted or duplicated
        const size_t at = rng() % bytes.size();
        const size_t len = 1 + rng() % 64;
        if (rng() % 2 == 0) {
          bytes.erase(at, len);
        } else {
          bytes.insert(at, bytes.substr(at, len));
        }
      }
    }
    auto g = ImportOnnx(bytes, {});
    if (!g.ok()) {
      ++failed;
      EXPECT_FALSE(g.status().message().empty());
    }
  }
  // Most mutations break the model; the point is that none crashed.
  EXPECT_GT(failed, 50);
}

// input [1,2,4,4] -> ConvTranspose "up" with weight w [2,3,3,3].
OnnxBuilder ConvTransposeNet(const std::vector<int64_t>& input = {1, 2, 4, 4},
                             const std::vector<int64_t>& weight = {2, 3, 3, 3}) {
  OnnxBuilder b;
  b.Input("x", input);
  int64_t elements = 1;
  for (int64_t d : weight) elements *= d;
  b.Weight("w", weight, std::vector<float>(static_cast<size_t>(elements), 0.5f));
  b.Node("ConvTranspose", {"x", "w"}, {"y"}, "up");
  b.Output("y");
  return b;
}

TEST(OnnxImportErrorsTest, ConvTransposeNetItselfImports) {
  auto g = ImportOnnx(ConvTransposeNet().Bytes(), {});
  ASSERT_TRUE(g.ok()) << g.status();
}

TEST(OnnxImportErrorsTest, ConvTransposeComputedWeights) {
  OnnxBuilder b;
  b.Input("x", {1, 1, 4, 4}).Input("w_in", {1, 3, 3, 3});
  b.Node("Relu", {"w_in"}, {"w"}, "w_relu");
  b.Node("ConvTranspose", {"x", "w"}, {"y"}, "up");
  b.Output("y");
  absl::Status s = Import(b.Bytes());
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(s.message()), HasSubstr("'up'"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("must be a constant"));
}

TEST(OnnxImportErrorsTest, ConvTransposeOneAndThreeDimensional) {
  for (const auto& [input, weight] :
       {std::pair<std::vector<int64_t>, std::vector<int64_t>>{{1, 2, 8}, {2, 3, 3}},
        {{1, 2, 4, 4, 4}, {2, 3, 3, 3, 3}}}) {
    absl::Status s = Import(ConvTransposeNet(input, weight).Bytes());
    EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr("'up'"));
    EXPECT_THAT(std::string(s.message()), HasSubstr("only 2-D ConvTranspose on [1,C,H,W]"));
  }
}

TEST(OnnxImportErrorsTest, ConvTransposeBatchTwo) {
  OnnxBuilder b;
  b.Input("x", {1, 4, 4, 4});
  b.Ints("shape", {2, 2, 4, 4}).Weight("w", {2, 3, 3, 3});
  b.Node("Reshape", {"x", "shape"}, {"x2"}, "to_batch2");
  b.Node("ConvTranspose", {"x2", "w"}, {"y"}, "up");
  b.Output("y");
  absl::Status s = Import(b.Bytes());
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("'up'"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("batch 2"));
}

TEST(OnnxImportErrorsTest, ConvTransposeBadAttributes) {
  struct Case {
    std::function<void(onnx::NodeProto&)> set;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {[](onnx::NodeProto& n) { OnnxBuilder::AttrInts(n, "output_padding", {1}); },
       "2 output_padding values"},
      {[](onnx::NodeProto& n) { OnnxBuilder::AttrInts(n, "strides", {0, 1}); },
       "kernel, stride and dilation must be in"},
      {[](onnx::NodeProto& n) { OnnxBuilder::AttrInts(n, "pads", {-1, 0, 0, 0}); },
       "pads, output_padding and output_shape must be in"},
      {[](onnx::NodeProto& n) { OnnxBuilder::AttrInts(n, "pads", {3, 0, 3, 0}); },
       "crop the whole"},
      {[](onnx::NodeProto& n) { OnnxBuilder::AttrString(n, "auto_pad", "SAME"); },
       "unknown auto_pad 'SAME'"},
      {[](onnx::NodeProto& n) { OnnxBuilder::AttrInt(n, "group", 3); }, "do not agree"},
      {[](onnx::NodeProto& n) { OnnxBuilder::AttrInts(n, "kernel_shape", {2, 2}); },
       "disagrees with weight"},
      {[](onnx::NodeProto& n) { OnnxBuilder::AttrInts(n, "output_shape", {1, 2, 3}); },
       "output_shape must have 2 (or 4) values"},
      {[](onnx::NodeProto& n) { OnnxBuilder::AttrInts(n, "output_shape", {12, 12}); },
       "exceeds the transposed output"},
  };
  for (const Case& c : cases) {
    OnnxBuilder b = ConvTransposeNet();
    c.set(*b.model().mutable_graph()->mutable_node(0));
    absl::Status s = Import(b.Bytes());
    EXPECT_FALSE(s.ok()) << c.expected;
    EXPECT_THAT(std::string(s.message()), HasSubstr("'up'")) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.expected)) << s;
  }
}

// Every combination of extreme ConvTranspose attributes is an error or a graph whose ops
// validate: the importer's arithmetic neither overflows nor builds a malformed op.
TEST(OnnxImportErrorsTest, ConvTransposeRandomAttributesNeverCrashOrMisbuild) {
  std::mt19937_64 rng(20240917);
  const std::vector<int64_t> values = {-3, -1, 0, 1, 2, 3, 7, 1 << 20, int64_t{1} << 40,
                                       std::numeric_limits<int64_t>::max()};
  auto pick = [&] { return values[rng() % values.size()]; };
  const std::vector<std::string> modes = {"NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER", ""};
  int imported = 0;
  for (int i = 0; i < 400; ++i) {
    OnnxBuilder b = ConvTransposeNet();
    onnx::NodeProto& node = *b.model().mutable_graph()->mutable_node(0);
    auto small = [&] { return rng() % 2 == 0 ? pick() : static_cast<int64_t>(rng() % 4); };
    if (rng() % 2) OnnxBuilder::AttrInts(node, "strides", {small(), small()});
    if (rng() % 2) OnnxBuilder::AttrInts(node, "dilations", {small(), small()});
    if (rng() % 2) OnnxBuilder::AttrInts(node, "pads", {small(), small(), small(), small()});
    if (rng() % 2) OnnxBuilder::AttrInts(node, "output_padding", {small(), small()});
    if (rng() % 3 == 0) OnnxBuilder::AttrInts(node, "output_shape", {small(), small()});
    if (rng() % 3 == 0) OnnxBuilder::AttrInt(node, "group", small());
    if (rng() % 3 == 0) OnnxBuilder::AttrString(node, "auto_pad", modes[rng() % modes.size()]);
    auto g = ImportOnnx(b.Bytes(), {});
    if (!g.ok()) {
      EXPECT_FALSE(g.status().message().empty());
      continue;
    }
    ++imported;
    for (OpId id = 0; id < static_cast<OpId>(g->ops.size()); ++id) {
      EXPECT_TRUE(ValidateOp(*g, id).ok()) << ValidateOp(*g, id);
    }
  }
  EXPECT_GT(imported, 0);
}

}  // namespace
}  // namespace psched::model
