// The data-backed platforms as tools load them: built-in model files, their versions, and
// model files read from a folder (ProfileOptions::model_dir), bad ones included.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "predictor/gbdt/embedded_models.h"
#include "predictor/profiles.h"

namespace psched::predictor {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

OpConfig Conv(int64_t hw, int64_t cin, int64_t cout, int k) {
  OpConfig c;
  c.kind = model::OpKind::kConv2d;
  c.inputs = {model::Shape{hw, hw, cin}};
  c.output = model::Shape{hw, hw, cout};
  c.window.kernel_h = c.window.kernel_w = k;
  c.window.pad_top = c.window.pad_bottom = c.window.pad_left = c.window.pad_right = k / 2;
  ComputeCost(c);
  return c;
}

TEST(MeasuredProfilesTest, EveryMeasuredPlatformLoadsFromTheBuiltInFiles) {
  for (const MeasuredPlatform& m : MeasuredPlatforms()) {
    absl::StatusOr<Profile> p = LoadProfile(m.name);
    ASSERT_TRUE(p.ok()) << p.status();
    ASSERT_EQ(p->platform.num_devices(), 3);
    EXPECT_EQ(p->platform.devices[0].name, "gpu");
    EXPECT_EQ(p->platform.devices[0].kind, platform::DeviceKind::kGpu);
    EXPECT_THAT(p->model->Version(), StartsWith("gbdt-v2/" + m.name + "/"));
    // A 56x56 3x3 conv of 128 -> 128 channels (0.92 GFLOP): the GPU beats both CPU clusters,
    // as on every phone of the data, and every device needs well over 1 ms.
    const OpConfig conv = Conv(56, 128, 128, 3);
    const double gpu = p->model->PredictUs(conv, 0);
    EXPECT_LT(gpu, p->model->PredictUs(conv, 1)) << m.name;
    EXPECT_LT(gpu, p->model->PredictUs(conv, 2)) << m.name;
    EXPECT_GT(gpu, 1000.0) << m.name;
  }
}

// The phone files predate the transformer families: the roofline of each file's conv
// baseline predicts them, finite and growing with the work.
TEST(MeasuredProfilesTest, TransformerOpsArePredictedByTheRooflineFallback) {
  OpConfig small;
  small.kind = model::OpKind::kMatMul;
  small.inputs = {model::Shape{4 * 49, 1, 32}, model::Shape{4 * 32, 1, 49}};
  small.output = model::Shape{4 * 49, 1, 49};
  small.matmul = MatMulDims{4, 49, 49, 32, 4, 4};
  ComputeCost(small);
  OpConfig big = small;
  big.inputs = {model::Shape{12 * 197, 1, 64}, model::Shape{12 * 64, 1, 197}};
  big.output = model::Shape{12 * 197, 1, 197};
  big.matmul = MatMulDims{12, 197, 197, 64, 12, 12};
  ComputeCost(big);
  OpConfig transpose;
  transpose.kind = model::OpKind::kTranspose;
  transpose.inputs = {model::Shape{197, 1, 768}};
  transpose.output = model::Shape{12 * 197, 1, 64};
  ComputeCost(transpose);
  for (const MeasuredPlatform& m : MeasuredPlatforms()) {
    absl::StatusOr<Profile> p = LoadProfile(m.name);
    ASSERT_TRUE(p.ok()) << p.status();
    for (int d = 0; d < 3; ++d) {
      const double s = p->model->PredictUs(small, d), b = p->model->PredictUs(big, d);
      const double t = p->model->PredictUs(transpose, d);
      EXPECT_TRUE(std::isfinite(s) && std::isfinite(b) && std::isfinite(t)) << m.name << d;
      EXPECT_GT(s, 0) << m.name << d;
      EXPECT_GT(t, 0) << m.name << d;
      EXPECT_GT(b, 5 * s) << m.name << d;  // 47x the flops
      EXPECT_TRUE(p->model->PredictsWithFallback(big, d));
      EXPECT_FALSE(p->model->PredictsWithFallback(Conv(14, 64, 64, 1), d));
    }
    // On the big core the 59.6 MFLOP product takes 0.3-20 ms (3-200 GFLOP/s).
    EXPECT_GT(p->model->PredictUs(big, 1), 300.0) << m.name;
    EXPECT_LT(p->model->PredictUs(big, 1), 20000.0) << m.name;
  }
}

TEST(MeasuredProfilesTest, GpuDispatchOverheadIsAddedAndChangesTheVersion) {
  absl::StatusOr<Profile> ten = LoadProfile("pixel4-measured");
  ProfileOptions options;
  options.gpu_dispatch_us = 30.0;
  absl::StatusOr<Profile> thirty = LoadProfile("pixel4-measured", options);
  ASSERT_TRUE(ten.ok() && thirty.ok());
  const OpConfig conv = Conv(14, 64, 64, 1);
  EXPECT_NEAR(thirty->model->PredictUs(conv, 0) - ten->model->PredictUs(conv, 0), 20.0, 1e-9);
  EXPECT_NEAR(thirty->model->PredictUs(conv, 1), ten->model->PredictUs(conv, 1), 1e-12);
  EXPECT_NE(thirty->model->Version(), ten->model->Version());
}

class ModelDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        fs::temp_directory_path() /
        ("psched_model_dir_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "pixel4-measured");
    for (const char* device : {"gpu", "cpu.l", "cpu.m"}) {
      Write(device, std::string(*gbdt::EmbeddedModelFile(std::string("pixel4-measured/") + device +
                                                         ".gbdt")));
    }
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& device, const std::string& text) {
    std::ofstream(dir_ / "pixel4-measured" / (device + ".gbdt"), std::ios::binary) << text;
  }
  absl::StatusOr<Profile> Load() {
    ProfileOptions options;
    options.model_dir = dir_.string();
    return LoadProfile("pixel4-measured", options);
  }
  fs::path dir_;
};

TEST_F(ModelDirTest, FilesFromAFolderGiveTheSameModel) {
  absl::StatusOr<Profile> from_dir = Load();
  absl::StatusOr<Profile> built_in = LoadProfile("pixel4-measured");
  ASSERT_TRUE(from_dir.ok()) << from_dir.status();
  EXPECT_EQ(from_dir->model->Version(), built_in->model->Version());
}

TEST_F(ModelDirTest, TruncatedFileIsNamedWithItsLine) {
  const std::string gpu(*gbdt::EmbeddedModelFile("pixel4-measured/gpu.gbdt"));
  Write("gpu", gpu.substr(0, gpu.size() / 2));
  absl::StatusOr<Profile> p = Load();
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(std::string(p.status().message()),
              HasSubstr((dir_ / "pixel4-measured/gpu.gbdt:").string()));
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("truncated"));
}

TEST_F(ModelDirTest, ModelOfAnotherDeviceIsRefused) {
  Write("gpu", std::string(*gbdt::EmbeddedModelFile("s10-measured/gpu.gbdt")));
  absl::StatusOr<Profile> p = Load();
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(std::string(p.status().message()),
              HasSubstr("pixel4-measured/gpu.gbdt:2: model trained for "
                        "device 's10/gpu'"));
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("'pixel4/gpu'"));
  Write("gpu", std::string(*gbdt::EmbeddedModelFile("pixel4-measured/cpu.l.gbdt")));
  p = Load();
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("trained for device 'pixel4/1large'"));
}

TEST_F(ModelDirTest, MissingFileIsNamed) {
  fs::remove(dir_ / "pixel4-measured" / "cpu.m.gbdt");
  absl::StatusOr<Profile> p = Load();
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("pixel4-measured/cpu.m.gbdt"));
}

}  // namespace
}  // namespace psched::predictor
