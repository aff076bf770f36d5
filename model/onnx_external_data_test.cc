// External data inlined from files beside a model (what `pschedctl model add` sends), and
// every location outside the model's folder refused naming it.
#include "model/onnx_external_data.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "model/onnx_import.h"
#include "model/onnx_test_builder.h"

namespace psched::model {
namespace {

namespace fs = std::filesystem;
using ::psched::model::testing::Iota;
using ::psched::model::testing::OnnxBuilder;
using ::testing::HasSubstr;

class OnnxExternalDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "psched_external_XXXXXX").string();
    root_ = mkdtemp(pattern.data());
    dir_ = root_ / "model";
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(root_); }

  // x [1,4] -> Gemm with w [3,4] (external, `location`, at `offset`) + b [3] (inline) -> y [1,3].
  void WriteModel(const std::string& location, int64_t offset = 0, bool with_length = true) {
    OnnxBuilder b;
    b.Input("x", {1, 4});
    b.Weight("w", {3, 4}).Weight("b", {3}, {0.5f, -0.5f, 1.0f});
    onnx::TensorProto* w = b.model().mutable_graph()->mutable_initializer(0);
    w->clear_external_data();
    auto add = [&](const std::string& key, const std::string& value) {
      auto* entry = w->add_external_data();
      entry->set_key(key);
      entry->set_value(value);
    };
    add("location", location);
    add("offset", std::to_string(offset));
    if (with_length) add("length", std::to_string(weights_.size() * sizeof(float)));
    OnnxBuilder::AttrInt(b.Node("Gemm", {"x", "w", "b"}, {"y"}, "fc"), "transB", 1);
    b.Output("y", {1, 3});
    std::ofstream(model_path(), std::ios::binary) << b.Bytes();
  }
  // The weights at `offset` in `path`, after `offset` bytes of padding.
  void WriteData(const fs::path& path, int64_t offset = 0) {
    std::string bytes(static_cast<size_t>(offset), '\x7f');
    bytes.append(reinterpret_cast<const char*>(weights_.data()), weights_.size() * sizeof(float));
    std::ofstream(path, std::ios::binary) << bytes;
  }
  std::string model_path() const { return (dir_ / "net.onnx").string(); }

  fs::path root_, dir_;
  const std::vector<float> weights_ = Iota(12, 0.25f);
};

TEST_F(OnnxExternalDataTest, InlinesDataAtItsOffsetAndTheModelImportsWithWeights) {
  WriteModel("net.onnx.data", 64);
  WriteData(dir_ / "net.onnx.data", 64);
  auto inlined = ReadModelInliningExternalData(model_path());
  ASSERT_TRUE(inlined.ok()) << inlined.status();
  EXPECT_EQ(inlined->tensors_inlined, 1);
  EXPECT_EQ(inlined->external_bytes, 48);

  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(inlined->bytes));
  const onnx::TensorProto& w = model.graph().initializer(0);
  EXPECT_FALSE(w.has_data_location());
  EXPECT_EQ(w.external_data_size(), 0);
  ASSERT_EQ(w.raw_data().size(), 48u);
  EXPECT_EQ(std::memcmp(w.raw_data().data(), weights_.data(), 48), 0);

  ImportOptions options;
  options.refuse_external_data = true;
  auto graph = ImportOnnx(inlined->bytes, options);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_TRUE(graph->has_weights);
}

TEST_F(OnnxExternalDataTest, DataInASubfolderWithoutLengthReadsToTheEnd) {
  fs::create_directories(dir_ / "weights");
  WriteModel("weights/w.bin", 0, /*with_length=*/false);
  WriteData(dir_ / "weights" / "w.bin");
  auto inlined = ReadModelInliningExternalData(model_path());
  ASSERT_TRUE(inlined.ok()) << inlined.status();
  EXPECT_EQ(inlined->external_bytes, 48);
}

TEST_F(OnnxExternalDataTest, SelfContainedModelIsSentAsItsOwnBytes) {
  OnnxBuilder b;
  b.Input("x", {1, 4});
  b.Node("Relu", {"x"}, {"y"}, "relu");
  b.Output("y", {1, 4});
  const std::string bytes = b.Bytes();
  std::ofstream(model_path(), std::ios::binary) << bytes;
  auto inlined = ReadModelInliningExternalData(model_path());
  ASSERT_TRUE(inlined.ok()) << inlined.status();
  EXPECT_EQ(inlined->bytes, bytes);
  EXPECT_EQ(inlined->tensors_inlined, 0);
}

TEST_F(OnnxExternalDataTest, MissingFileIsNotFoundUnlessAllowed) {
  WriteModel("net.onnx.data");
  auto missing = ReadModelInliningExternalData(model_path());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr("external data file 'net.onnx.data' of tensor 'w' is not in"));
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("--graph-only"));

  auto allowed = ReadModelInliningExternalData(model_path(), {.allow_missing_files = true});
  ASSERT_TRUE(allowed.ok()) << allowed.status();
  EXPECT_EQ(allowed->tensors_missing, 1);
  std::ifstream file(model_path(), std::ios::binary);
  EXPECT_EQ(allowed->bytes, std::string(std::istreambuf_iterator<char>(file), {}));
}

TEST_F(OnnxExternalDataTest, LocationsOutsideTheFolderAreRefusedNamingThem) {
  WriteData(root_ / "secret.bin");
  struct Case {
    std::string location, why;
  };
  const std::vector<Case> cases = {
      {"../secret.bin", "climbs out with '..'"},
      {"sub/../../secret.bin", "climbs out with '..'"},
      {(root_ / "secret.bin").string(), "is an absolute path"},
      {"link.bin", "leads out of the folder through a symlink"},
      {"linked_dir/secret.bin", "leads out of the folder through a symlink"},
  };
  fs::create_symlink(root_ / "secret.bin", dir_ / "link.bin");
  fs::create_directory_symlink(root_, dir_ / "linked_dir");
  for (const Case& c : cases) {
    WriteModel(c.location);
    auto refused = ReadModelInliningExternalData(model_path());
    ASSERT_FALSE(refused.ok()) << c.location;
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << c.location;
    const std::string message(refused.status().message());
    EXPECT_THAT(message, HasSubstr("external data location '" + c.location + "' of tensor 'w'"));
    EXPECT_THAT(message, HasSubstr(c.why));
    EXPECT_THAT(message, HasSubstr("only from files inside the model's folder"));
  }
}

TEST_F(OnnxExternalDataTest, ASymlinkInsideTheFolderIsFollowed) {
  fs::create_directories(dir_ / "store");
  WriteData(dir_ / "store" / "w.bin");
  fs::create_symlink(dir_ / "store" / "w.bin", dir_ / "w.bin");
  WriteModel("w.bin");
  auto inlined = ReadModelInliningExternalData(model_path());
  ASSERT_TRUE(inlined.ok()) << inlined.status();
  EXPECT_EQ(inlined->tensors_inlined, 1);
}

TEST_F(OnnxExternalDataTest, BadEntriesAndRangesAreRefused) {
  WriteData(dir_ / "w.bin");
  WriteModel("w.bin", 40);  // 48 bytes asked from offset 40 of a 48-byte file
  auto beyond = ReadModelInliningExternalData(model_path());
  EXPECT_EQ(beyond.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(beyond.status().message()),
              HasSubstr("tensor 'w' reads bytes [40, 88) of 'w.bin', which has 48 bytes"));

  WriteModel("w.bin", -1);
  auto negative = ReadModelInliningExternalData(model_path());
  EXPECT_EQ(negative.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(negative.status().message()),
              HasSubstr("external_data offset '-1' is not a byte count"));

  WriteModel("");
  auto unnamed = ReadModelInliningExternalData(model_path());
  EXPECT_EQ(unnamed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(unnamed.status().message()), HasSubstr("names no location"));

  fs::create_directories(dir_ / "a_folder");
  WriteModel("a_folder");
  auto folder = ReadModelInliningExternalData(model_path());
  EXPECT_EQ(folder.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(folder.status().message()), HasSubstr("is not a regular file"));
}

TEST_F(OnnxExternalDataTest, NotOnnxAndMissingModelAreClearErrors) {
  std::ofstream(model_path(), std::ios::binary) << std::string(100, '\x07');
  auto garbage = ReadModelInliningExternalData(model_path());
  EXPECT_EQ(garbage.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(garbage.status().message()), HasSubstr("not a valid ONNX model"));
  auto missing = ReadModelInliningExternalData((dir_ / "absent.onnx").string());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace psched::model
