#include "predictor/device_subset_model.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/onnx_import.h"
#include "predictor/profiles.h"
#include "source_dir.h"

namespace psched::predictor {
namespace {

using ::testing::HasSubstr;

TEST(DeviceSubsetModelTest, DeviceIIsTheBasesChosenDevice) {
  absl::StatusOr<model::Graph> graph = model::ImportOnnxFile(
      std::string(PSCHED_SOURCE_DIR) + "/tests/daemon/data/tiny_cnn.onnx", {});
  ASSERT_TRUE(graph.ok()) << graph.status();
  // The synthetic phone profile's devices differ in speed: gpu, cpu.l, cpu.m.
  std::shared_ptr<const LatencyModel> base = LoadProfile("oneplus11")->model;
  ASSERT_EQ(base->num_devices(), 3);
  auto subset = DeviceSubsetModel::Create(base, {2, 0});
  ASSERT_TRUE(subset.ok()) << subset.status();
  EXPECT_EQ((*subset)->num_devices(), 2);
  std::vector<OpConfig> configs;
  for (model::OpId id = 0; id < static_cast<model::OpId>(graph->ops.size()); ++id) {
    configs.push_back(WholeOpConfig(*graph, id));
  }
  for (int d = 0; d < 2; ++d) {
    const int base_device = d == 0 ? 2 : 0;
    std::vector<double> batch(configs.size()), base_batch(configs.size());
    (*subset)->PredictBatch(configs, d, batch);
    base->PredictBatch(configs, base_device, base_batch);
    for (size_t i = 0; i < configs.size(); ++i) {
      EXPECT_DOUBLE_EQ((*subset)->PredictUs(configs[i], d),
                       base->PredictUs(configs[i], base_device));
      EXPECT_DOUBLE_EQ(batch[i], base_batch[i]);
    }
  }
  EXPECT_NE((*subset)->PredictUs(configs[0], 0), (*subset)->PredictUs(configs[0], 1));
  EXPECT_EQ((*subset)->Version(), base->Version() + ";devices=2,0");
}

// A model whose sync cost from device a to device b is 10 * a + b, a run costs 75 us, and device
// d's co-run factor is 1 + d / 10 and partial sums cost d + 0.5 ns per element.
class PairModel final : public LatencyModel {
 public:
  int num_devices() const override { return 3; }
  double PredictUs(const OpConfig&, int) const override { return 1; }
  double SyncUs(int from, int to) const override { return 10.0 * from + to; }
  double CoRunFactor(int device) const override { return 1 + device / 10.0; }
  double PartialSumNs(int device) const override { return device + 0.5; }
  double RunOverheadUs() const override { return 75; }
  std::string Version() const override { return "pairs"; }
};

TEST(DeviceSubsetModelTest, SyncCostsRunCostsAndRunOverheadAreTheBases) {
  auto subset = DeviceSubsetModel::Create(std::make_shared<PairModel>(), {2, 0});
  ASSERT_TRUE(subset.ok()) << subset.status();
  EXPECT_EQ((*subset)->SyncUs(0, 1), 20);
  EXPECT_EQ((*subset)->SyncUs(1, 0), 2);
  EXPECT_DOUBLE_EQ((*subset)->CoRunFactor(0), 1.2);
  EXPECT_DOUBLE_EQ((*subset)->CoRunFactor(1), 1.0);
  EXPECT_EQ((*subset)->PartialSumNs(0), 2.5);
  EXPECT_EQ((*subset)->PartialSumNs(1), 0.5);
  EXPECT_EQ((*subset)->RunOverheadUs(), 75);
}

TEST(DeviceSubsetModelTest, RejectsEmptyAndOutOfRangeSubsets) {
  std::shared_ptr<const LatencyModel> base = LoadProfile("oneplus11")->model;
  EXPECT_EQ(DeviceSubsetModel::Create(base, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto outside = DeviceSubsetModel::Create(base, {0, 3});
  EXPECT_EQ(outside.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(outside.status().message()), HasSubstr("device index 3"));
  EXPECT_EQ(DeviceSubsetModel::Create(base, {-1}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace psched::predictor
