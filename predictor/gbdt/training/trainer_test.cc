// Training on the fixture (an excerpt of the phone data), the trained trees against
// XGBoost's own predict, determinism, and the shipped models against the full data.
#include "predictor/gbdt/training/trainer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "predictor/gbdt/embedded_models.h"
#include "predictor/gbdt/training/mobile_benchmark.h"
#include "predictor/gbdt/training/xgboost_booster.h"
#include "predictor/profiles.h"
#include "source_dir.h"

namespace psched::predictor::gbdt::training {
namespace {

using ::testing::HasSubstr;

const std::string kTestdata = std::string(PSCHED_SOURCE_DIR) + "/predictor/gbdt/training/testdata/";

std::string SharedDir() {
  const char* dir = std::getenv("PSCHED_SHARED_DIR");
  return dir != nullptr ? dir : "/work/shared";
}

TrainingSpec GpuSpec() {
  TrainingSpec spec;
  spec.device = "pixel4/gpu";
  spec.gpu = true;
  spec.dispatch = "tflite-gpu";
  spec.per_op.rounds = 40;
  spec.folds = 2;
  return spec;
}

class TrainerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<OpTable> ops = ReadOpCsv(kTestdata + "ops.csv");
    ASSERT_TRUE(ops.ok()) << ops.status();
    ops_ = new OpTable(*std::move(ops));
    absl::StatusOr<TotalsTable> totals = ReadTotalsCsv(kTestdata + "totals.csv");
    ASSERT_TRUE(totals.ok()) << totals.status();
    totals_ = new TotalsTable(*std::move(totals));
  }
  static void TearDownTestSuite() {
    delete ops_;
    delete totals_;
  }
  static const OpTable* ops_;
  static const TotalsTable* totals_;
};
const OpTable* TrainerTest::ops_ = nullptr;
const TotalsTable* TrainerTest::totals_ = nullptr;

TEST_F(TrainerTest, NativeTreesAgreeWithXgboostPredict) {
  // Conv rows of the fixture with their GPU features; log latency as the label.
  std::vector<float> x, labels;
  size_t rows = 0;
  const size_t width = FeatureNames(OpFamily::kConv, true).size();
  for (const OpRow& row : ops_->rows) {
    if (FamilyOf(row.config) != OpFamily::kConv) continue;
    x.resize(x.size() + width);
    const DispatchFeatures d = TfliteGpuDispatch(row.config);
    ExtractFeatures(row.config, OpFamily::kConv, &d,
                    std::span<float>(x.data() + rows * width, width));
    labels.push_back(static_cast<float>(std::log(row.measured.at("pixel4/gpu").us)));
    ++rows;
  }
  ASSERT_GT(rows, 200u);
  absl::StatusOr<XgbMatrix> m = XgbMatrix::Create(x, rows, width);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_TRUE(m->SetLabels(labels).ok());
  absl::StatusOr<XgbBooster> booster = XgbBooster::Create(*m, {{"max_depth", "6"},
                                                               {"eta", "0.3"},
                                                               {"nthread", "1"},
                                                               {"base_score", "4.5"},
                                                               {"tree_method", "exact"},
                                                               {"subsample", "0.7"},
                                                               {"seed", "3"}});
  ASSERT_TRUE(booster.ok()) << booster.status();
  for (int i = 0; i < 30; ++i) ASSERT_TRUE(booster->UpdateOneIter(i, *m).ok());
  absl::StatusOr<std::vector<float>> xgb = booster->PredictMargins(*m);
  ASSERT_TRUE(xgb.ok()) << xgb.status();
  absl::StatusOr<TreeEnsemble> native = booster->ToEnsemble(static_cast<int>(width));
  ASSERT_TRUE(native.ok()) << native.status();
  EXPECT_EQ(native->num_trees(), 30);
  std::vector<double> batch(rows);
  native->PredictBatch(x, width, batch);
  double worst = 0;
  for (size_t r = 0; r < rows; ++r) {
    const double one = native->Predict(std::span<const float>(x.data() + r * width, width));
    worst = std::max(worst, std::abs(one - (*xgb)[r]));
    EXPECT_NEAR(batch[r], one, 1e-9);
  }
  // XGBoost sums leaves in float, psched in double.
  EXPECT_LT(worst, 1e-5);
  // Through a model file and back, the trees are the same.
  DeviceModel model;
  model.device = "pixel4/gpu";
  model.gpu = true;
  model.dispatch = "tflite-gpu";
  model.families[0] = FamilyModel{Baseline{0, 0, 1.0}, *native};
  for (OpFamily f : kAllFamilies) {
    if (f != OpFamily::kConv) model.fallback[static_cast<size_t>(f)] = OpFamily::kConv;
  }
  absl::StatusOr<DeviceModel> parsed = ParseModelFile(FormatModelFile(model), "agree.gbdt");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  for (size_t r = 0; r < rows; ++r) {
    EXPECT_EQ(
        parsed->families[0]->trees.Predict(std::span<const float>(x.data() + r * width, width)),
        native->Predict(std::span<const float>(x.data() + r * width, width)));
  }
}

TEST_F(TrainerTest, PerOpTrainingLoadsAndPredictsHeldOutModels) {
  TrainingReport report;
  absl::StatusOr<DeviceModel> model = TrainPerOp(*ops_, GpuSpec(), &report);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(report.kernel_rows, report.kernel_rule_matches);
  EXPECT_GT(report.kernel_rows, 300);
  ASSERT_FALSE(report.families.empty());
  EXPECT_EQ(report.families.back().family, "all");
  EXPECT_EQ(report.families.back().rows, 389);
  // Two folds of four CNNs each: every model predicted by trees that never saw it.
  EXPECT_EQ(report.groups.size(), 8u);
  // With four CNNs to learn from, the trees already generalise: held-out conv error is well
  // below that of the linear baseline alone (one near-zero round).
  TrainingSpec baseline_only = GpuSpec();
  baseline_only.per_op.rounds = 1;
  baseline_only.per_op.eta = 1e-6;
  TrainingReport baseline_report;
  ASSERT_TRUE(TrainPerOp(*ops_, baseline_only, &baseline_report).ok());
  auto conv_mape = [](const TrainingReport& r) {
    for (const FamilyError& e : r.families) {
      if (e.family == "conv") return e.mape;
    }
    return -1.0;
  };
  EXPECT_GT(conv_mape(report), 0.0);
  EXPECT_LT(conv_mape(report), 0.8 * conv_mape(baseline_report)) << report.Markdown();
  // Elementwise ops were never measured: they fall back to the concat model.
  EXPECT_EQ(model->fallback[static_cast<size_t>(OpFamily::kElementwise)], OpFamily::kConcat);
  GbdtLatencyModel::DeviceSource source{"gpu",        "trained.gbdt", FormatModelFile(*model),
                                        "pixel4/gpu", true,           0.0};
  absl::StatusOr<std::unique_ptr<GbdtLatencyModel>> loaded =
      GbdtLatencyModel::Create("p", {source});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  double sum_ape = 0;
  int n = 0;
  for (const OpRow& row : ops_->rows) {
    const double measured = row.measured.at("pixel4/gpu").us;
    sum_ape += std::abs((*loaded)->PredictUs(row.config, 0) - measured) / measured;
    ++n;
  }
  EXPECT_LT(100.0 * sum_ape / n, 10.0) << "in-sample MAPE";
}

TEST_F(TrainerTest, TrainingIsDeterministic) {
  TrainingSpec spec = GpuSpec();
  spec.folds = 0;
  absl::StatusOr<DeviceModel> a = TrainPerOp(*ops_, spec, nullptr);
  absl::StatusOr<DeviceModel> b = TrainPerOp(*ops_, spec, nullptr);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(FormatModelFile(*a), FormatModelFile(*b));
  spec.seed = 2;
  absl::StatusOr<DeviceModel> c = TrainPerOp(*ops_, spec, nullptr);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(FormatModelFile(*a), FormatModelFile(*c)) << "the seed drives row subsampling";
}

TEST_F(TrainerTest, TotalsTrainingMatchesWholeModelSums) {
  TrainingSpec spec;
  spec.device = "pixel4/1large";
  spec.folds = 0;
  TrainingReport report;
  absl::StatusOr<DeviceModel> model = TrainFromTotals(*ops_, *totals_, spec, &report);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_FALSE(model->gpu);
  GbdtLatencyModel::DeviceSource source{"cpu.l",         "cpu.gbdt", FormatModelFile(*model),
                                        "pixel4/1large", false,      0.0};
  absl::StatusOr<std::unique_ptr<GbdtLatencyModel>> loaded =
      GbdtLatencyModel::Create("p", {source});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  std::map<std::string, double> sums;
  for (const OpRow& row : ops_->rows) sums[row.group] += (*loaded)->PredictUs(row.config, 0);
  ASSERT_EQ(sums.size(), 8u);
  for (const auto& [group, predicted] : sums) {
    const double measured = totals_->totals.at(group).at("pixel4/1large");
    EXPECT_NEAR(predicted / measured, 1.0, 0.15) << group;
  }
}

TEST_F(TrainerTest, UnknownDeviceOrSchemeIsRefused) {
  TrainingSpec spec = GpuSpec();
  spec.device = "pixel9/gpu";
  EXPECT_THAT(std::string(TrainPerOp(*ops_, spec, nullptr).status().message()),
              HasSubstr("no row measures device 'pixel9/gpu'"));
  spec = GpuSpec();
  spec.dispatch = "cuda";
  EXPECT_THAT(std::string(TrainPerOp(*ops_, spec, nullptr).status().message()),
              HasSubstr("unknown dispatch scheme 'cuda'"));
  spec.gpu = false;
  spec.device = "pixel9/1large";
  EXPECT_THAT(std::string(TrainFromTotals(*ops_, *totals_, spec, nullptr).status().message()),
              HasSubstr("no group of"));
}

// The models built into psched against the full phone data they were trained on: the
// shipped files are these data's models (in-sample error well under the held-out one).
TEST(ShippedModelsTest, PixelFourGpuModelFitsTheMeasuredOps) {
  absl::StatusOr<MobileBenchmarkData> data =
      ImportMobileBenchmark(SharedDir() + "/data/mobile-ml-benchmark");
  ASSERT_TRUE(data.ok()) << data.status();
  ProfileOptions options;
  options.gpu_dispatch_us = 0.0;
  absl::StatusOr<Profile> profile = LoadProfile("pixel4-measured", options);
  ASSERT_TRUE(profile.ok()) << profile.status();
  double conv_ape = 0;
  int convs = 0;
  for (const OpRow& row : data->ops.rows) {
    if (row.config.kind != model::OpKind::kConv2d) continue;
    const double measured = row.measured.at("pixel4/gpu").us;
    conv_ape += std::abs(profile->model->PredictUs(row.config, 0) - measured) / measured;
    ++convs;
  }
  EXPECT_EQ(convs, 4740);
  EXPECT_LT(100.0 * conv_ape / convs, 5.0);
}

}  // namespace
}  // namespace psched::predictor::gbdt::training
