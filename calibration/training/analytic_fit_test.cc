#include "calibration/training/analytic_fit.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "predictor/host_model/analytic_params_json.h"

namespace psched::calibration {
namespace {

using model::OpKind;
using model::Shape;

predictor::OpConfig Conv(int64_t hw, int64_t cin, int64_t cout, int k, int stride, int groups = 1) {
  predictor::OpConfig c;
  c.kind = OpKind::kConv2d;
  c.inputs = {Shape{hw * stride, hw * stride, cin}};
  c.output = Shape{hw, hw, cout};
  c.window.kernel_h = c.window.kernel_w = k;
  c.window.stride_h = c.window.stride_w = stride;
  c.groups = groups;
  predictor::ComputeCost(c);
  return c;
}

predictor::OpConfig Elementwise(OpKind kind, int64_t hw, int64_t c, int inputs) {
  predictor::OpConfig config;
  config.kind = kind;
  config.inputs.assign(static_cast<size_t>(inputs), Shape{hw, hw, c});
  config.output = Shape{hw, hw, kind == OpKind::kConcat ? c * inputs : c};
  predictor::ComputeCost(config);
  return config;
}

// A spread of configurations in both the compute- and memory-bound regimes.
std::vector<predictor::OpConfig> Configs() {
  std::vector<predictor::OpConfig> out;
  for (int64_t hw : {7, 14, 28, 56}) {
    for (int64_t c : {16, 64, 256}) {
      out.push_back(Conv(hw, c, c, 1, 1));
      out.push_back(Conv(hw, c, c / 2, 3, 1));
      out.push_back(Conv(hw, c, c, 3, 2));
      out.push_back(Conv(hw, c, c, 3, 1, static_cast<int>(c)));
      out.push_back(Elementwise(OpKind::kAdd, hw, c, 2));
      out.push_back(Elementwise(OpKind::kConcat, hw, c, 2));
      predictor::OpConfig pool = Elementwise(OpKind::kMaxPool, hw, c, 1);
      pool.window.kernel_h = pool.window.kernel_w = 3;
      predictor::ComputeCost(pool);
      out.push_back(pool);
    }
  }
  for (int64_t hw : {28, 56, 112}) out.push_back(Conv(hw, 3, 32, 3, 2));  // first layers
  for (int64_t in : {256, 1024, 4096}) {
    for (int64_t o : {10, 1000}) {
      predictor::OpConfig fc;
      fc.kind = OpKind::kFullyConnected;
      fc.inputs = {Shape{1, 1, in}};
      fc.output = Shape{1, 1, o};
      predictor::ComputeCost(fc);
      out.push_back(fc);
      out.push_back(predictor::SubtaskConfig(fc, model::SplitAxis::kInputChannels, 0, in / 2));
    }
  }
  return out;
}

predictor::AnalyticDeviceParams TruthCpu() {
  predictor::AnalyticDeviceParams p;
  p.name = "cpu.0";
  p.SetThroughput(40.0, 6.0, 15.0, 3.0);
  p.gflops[static_cast<size_t>(OpKind::kMaxPool)] = 5.0;
  p.bandwidth_gbps = 12.0;
  p.overhead_us = 3.0;
  p.half_parallelism = 300.0;
  return p;
}

predictor::AnalyticDeviceParams TruthGpu() {
  predictor::AnalyticDeviceParams p;
  p.name = "gpu";
  p.gpu = true;
  p.SetThroughput(12.0, 2.0, 4.0, 1.5);
  p.bandwidth_gbps = 6.0;
  p.overhead_us = 25.0;
  p.dispatch_us = 30.0;
  p.half_parallelism = 2000.0;
  return p;
}

// Samples of `truth` (without its dispatch, as a calibration run measures them) with
// multiplicative log-normal noise of `sigma`.
predictor::host_model::CalibrationSamples Generate(
    const std::vector<predictor::AnalyticDeviceParams>& truth, double sigma, uint64_t seed) {
  predictor::AnalyticModel model("truth", truth);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0.0, sigma);
  predictor::host_model::CalibrationSamples samples;
  samples.platform = "test";
  for (int d = 0; d < static_cast<int>(truth.size()); ++d) {
    for (const predictor::OpConfig& c : Configs()) {
      const double us = model.PredictUs(c, d) - truth[static_cast<size_t>(d)].dispatch_us;
      samples.samples.push_back(
          {truth[static_cast<size_t>(d)].name, c, us * std::exp(noise(rng)), 5, "", 1, ""});
    }
  }
  return samples;
}

const ErrorStats* Row(const std::vector<ErrorStats>& rows, const std::string& device,
                      const std::string& kind) {
  for (const ErrorStats& r : rows) {
    if (r.device == device && r.kind == kind) return &r;
  }
  return nullptr;
}

double Gflops(const predictor::AnalyticDeviceParams& p, OpKind kind) {
  return p.gflops[static_cast<size_t>(kind)];
}

TEST(FitAnalyticModelTest, RecoversKnownParametersFromNoisySamples) {
  const std::vector<predictor::AnalyticDeviceParams> truth = {TruthCpu(), TruthGpu()};
  const predictor::host_model::CalibrationSamples samples = Generate(truth, 0.03, 7);
  const std::vector<std::string> names = {"cpu.0", "gpu"};
  FitOptions options;
  predictor::AnalyticDeviceParams gpu_prior;
  gpu_prior.name = "gpu";
  gpu_prior.gpu = true;
  gpu_prior.dispatch_us = 30.0;
  options.priors = {gpu_prior};
  absl::StatusOr<FitResult> fit = FitAnalyticModel("test", names, samples, options);
  ASSERT_TRUE(fit.ok()) << fit.status();
  ASSERT_EQ(fit->params.size(), 2u);
  for (size_t d = 0; d < 2; ++d) {
    const predictor::AnalyticDeviceParams& got = fit->params[d];
    const predictor::AnalyticDeviceParams& want = truth[d];
    SCOPED_TRACE(want.name);
    EXPECT_NEAR(Gflops(got, OpKind::kConv2d), Gflops(want, OpKind::kConv2d),
                0.1 * Gflops(want, OpKind::kConv2d));
    EXPECT_NEAR(Gflops(got, OpKind::kFullyConnected), Gflops(want, OpKind::kFullyConnected),
                0.15 * Gflops(want, OpKind::kFullyConnected));
    EXPECT_NEAR(got.depthwise_gflops, want.depthwise_gflops, 0.15 * want.depthwise_gflops);
    EXPECT_NEAR(got.bandwidth_gbps, want.bandwidth_gbps, 0.1 * want.bandwidth_gbps);
    EXPECT_NEAR(got.overhead_us, want.overhead_us, 0.2 * want.overhead_us);
    EXPECT_NEAR(std::log(got.half_parallelism), std::log(want.half_parallelism), std::log(1.5));
    EXPECT_EQ(got.gpu, want.gpu);
  }
  EXPECT_DOUBLE_EQ(fit->params[1].dispatch_us, 30.0);
  // 3% noise: held-out errors stay near the noise level.
  const ErrorStats* cpu = Row(fit->report.heldout, "cpu.0", "all");
  const ErrorStats* gpu = Row(fit->report.heldout, "gpu", "all");
  ASSERT_NE(cpu, nullptr);
  ASSERT_NE(gpu, nullptr);
  EXPECT_LT(cpu->mape, 6.0);
  EXPECT_LT(gpu->mape, 6.0);
  EXPECT_GT(cpu->count, 12);
  EXPECT_EQ(fit->report.train_samples + fit->report.heldout_samples,
            static_cast<int>(samples.samples.size()));
  EXPECT_NEAR(static_cast<double>(fit->report.heldout_samples) / samples.samples.size(), 0.2, 0.03);
  EXPECT_THAT(fit->model->Version(), ::testing::HasSubstr("test+calibrated"));
}

// A device whose pointwise convs, thin-input convs and in-place concats differ from the
// plain roofline, as XNNPACK on one core does.
predictor::AnalyticDeviceParams TruthCpuV2() {
  predictor::AnalyticDeviceParams p = TruthCpu();
  p.pointwise_gflops = 15.0;
  p.half_reduction = 100.0;
  p.concat_us = 0.4;
  return p;
}

TEST(FitAnalyticModelTest, RecoversPointwiseReductionAndConcatParameters) {
  const std::vector<predictor::AnalyticDeviceParams> truth = {TruthCpuV2()};
  const std::vector<std::string> names = {"cpu.0"};
  absl::StatusOr<FitResult> fit = FitAnalyticModel("test", names, Generate(truth, 0.03, 11));
  ASSERT_TRUE(fit.ok()) << fit.status();
  const predictor::AnalyticDeviceParams& got = fit->params[0];
  EXPECT_NEAR(Gflops(got, OpKind::kConv2d), 40.0, 0.15 * 40.0);
  EXPECT_NEAR(got.pointwise_gflops, 15.0, 0.15 * 15.0);
  EXPECT_NEAR(std::log(got.half_reduction), std::log(100.0), std::log(1.3));
  EXPECT_NEAR(got.concat_us, 0.4, 0.1 * 0.4);
  EXPECT_NEAR(got.overhead_us, 3.0, 0.2 * 3.0);
  const ErrorStats* all = Row(fit->report.heldout, "cpu.0", "all");
  ASSERT_NE(all, nullptr);
  EXPECT_LT(all->mape, 6.0);
  // Pointwise convs are reported as a class of their own; the split still stratifies by op
  // kind, so every held-out sample is in exactly one row besides "all".
  ASSERT_NE(Row(fit->report.heldout, "cpu.0", "conv2d_1x1"), nullptr);
  int rows = 0;
  for (const ErrorStats& r : fit->report.heldout) rows += r.kind == "all" ? 0 : r.count;
  EXPECT_EQ(rows, all->count);
  EXPECT_EQ(static_cast<int>(fit->heldout.size()), fit->report.heldout_samples);
}

TEST(FitAnalyticModelTest, PlainRooflineDataKeepTheReductionTermNegligible) {
  // Samples from a device without the new effects: the fit must not invent them.
  const std::vector<predictor::AnalyticDeviceParams> truth = {TruthCpu()};
  const std::vector<std::string> names = {"cpu.0"};
  absl::StatusOr<FitResult> fit = FitAnalyticModel("test", names, Generate(truth, 0.0, 2));
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_LT(fit->params[0].half_reduction, 1.0);
  EXPECT_NEAR(fit->params[0].pointwise_gflops, 40.0, 0.02 * 40.0);
  EXPECT_NEAR(fit->params[0].concat_us, TruthCpu().concat_us, 0.01);
}

TEST(FitAnalyticModelTest, ExactSamplesAreFittedAlmostExactly) {
  const std::vector<predictor::AnalyticDeviceParams> truth = {TruthCpu()};
  const std::vector<std::string> names = {"cpu.0"};
  absl::StatusOr<FitResult> fit = FitAnalyticModel("test", names, Generate(truth, 0.0, 1));
  ASSERT_TRUE(fit.ok()) << fit.status();
  const ErrorStats* all = Row(fit->report.heldout, "cpu.0", "all");
  ASSERT_NE(all, nullptr);
  EXPECT_LT(all->max_ape, 2.0);
  EXPECT_NEAR(Gflops(fit->params[0], OpKind::kConv2d), 40.0, 0.4);
}

TEST(FitAnalyticModelTest, SplitAndModelAreReproducibleAndVersionFollowsParameters) {
  const std::vector<std::string> names = {"cpu.0"};
  const predictor::host_model::CalibrationSamples samples = Generate({TruthCpu()}, 0.05, 3);
  FitOptions options;
  options.seed = 11;
  absl::StatusOr<FitResult> a = FitAnalyticModel("host", names, samples, options);
  absl::StatusOr<FitResult> b = FitAnalyticModel("host", names, samples, options);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->model->Version(), b->model->Version());
  EXPECT_DOUBLE_EQ(a->report.heldout.back().mape, b->report.heldout.back().mape);

  // Twice as slow a device: other parameters, another version.
  predictor::host_model::CalibrationSamples slower = samples;
  for (predictor::host_model::CalibrationSample& s : slower.samples) s.measured_us *= 2.0;
  absl::StatusOr<FitResult> c = FitAnalyticModel("host", names, slower, options);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(a->model->Version(), c->model->Version());
  EXPECT_LT(Gflops(c->params[0], OpKind::kConv2d), 0.6 * Gflops(a->params[0], OpKind::kConv2d));
}

TEST(FitAnalyticModelTest, BiggerConvIsPredictedSlower) {
  const std::vector<std::string> names = {"cpu.0"};
  absl::StatusOr<FitResult> fit = FitAnalyticModel("host", names, Generate({TruthCpu()}, 0.05, 5));
  ASSERT_TRUE(fit.ok());
  EXPECT_LT(fit->model->PredictUs(Conv(14, 64, 64, 3, 1), 0),
            fit->model->PredictUs(Conv(28, 64, 64, 3, 1), 0));
  EXPECT_LT(fit->model->PredictUs(Conv(28, 64, 64, 1, 1), 0),
            fit->model->PredictUs(Conv(28, 64, 64, 3, 1), 0));
}

TEST(FitAnalyticModelTest, DeviceWithoutSamplesKeepsItsPrior) {
  const std::vector<std::string> names = {"cpu.0", "gpu"};
  FitOptions options;
  options.priors = {TruthGpu()};
  absl::StatusOr<FitResult> fit =
      FitAnalyticModel("host", names, Generate({TruthCpu()}, 0.02, 2), options);
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_THAT(fit->report.unfitted_devices, ::testing::ElementsAre("gpu"));
  EXPECT_DOUBLE_EQ(Gflops(fit->params[1], OpKind::kConv2d), 12.0);
  EXPECT_EQ(Row(fit->report.heldout, "gpu", "all"), nullptr);
}

TEST(FitAnalyticModelTest, RejectsBadInput) {
  const predictor::host_model::CalibrationSamples samples = Generate({TruthCpu()}, 0.0, 1);
  const std::vector<std::string> names = {"cpu.0"};
  const std::vector<std::string> none;
  EXPECT_EQ(FitAnalyticModel("h", none, samples).status().code(),
            absl::StatusCode::kInvalidArgument);
  const std::vector<std::string> twice = {"cpu.0", "cpu.0"};
  EXPECT_THAT(std::string(FitAnalyticModel("h", twice, samples).status().message()),
              ::testing::HasSubstr("listed twice"));
  const std::vector<std::string> other = {"gpu"};
  EXPECT_THAT(std::string(FitAnalyticModel("h", other, samples).status().message()),
              ::testing::HasSubstr("device 'cpu.0', which is not one of gpu"));
  FitOptions bad_fraction;
  bad_fraction.holdout_fraction = 1.5;
  EXPECT_THAT(std::string(FitAnalyticModel("h", names, samples, bad_fraction).status().message()),
              ::testing::HasSubstr("holdout_fraction"));
  predictor::host_model::CalibrationSamples negative = samples;
  negative.samples[4].measured_us = -1.0;
  EXPECT_THAT(std::string(FitAnalyticModel("h", names, negative).status().message()),
              ::testing::HasSubstr("sample 4"));
}

TEST(FitAnalyticModelTest, ErrorTableListsEveryRow) {
  std::vector<ErrorStats> rows = {{"cpu.0", "conv2d", 12, 10.5, 8.25, 30.0},
                                  {"cpu.0", "all", 20, 9.0, 7.0, 30.0}};
  const std::string table = FormatErrorTable(rows);
  EXPECT_THAT(table, ::testing::HasSubstr("MAPE"));
  EXPECT_THAT(table, ::testing::HasSubstr("conv2d"));
  EXPECT_THAT(table, ::testing::HasSubstr("10.5"));
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 3);
}

TEST(AnalyticParamsJsonTest, RoundTripKeepsParametersAndVersion) {
  predictor::host_model::AnalyticParams params{"host", {TruthCpu(), TruthGpu()}};
  const nlohmann::json json = predictor::host_model::AnalyticParamsToJson(params);
  absl::StatusOr<predictor::host_model::AnalyticParams> back =
      predictor::host_model::AnalyticParamsFromJson(nlohmann::json::parse(json.dump()));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->platform, "host");
  ASSERT_EQ(back->devices.size(), 2u);
  EXPECT_EQ(back->MakeModel()->Version(), params.MakeModel()->Version());
  EXPECT_EQ(json["model_version"], params.MakeModel()->Version());
  EXPECT_TRUE(back->devices[1].gpu);
  EXPECT_DOUBLE_EQ(back->devices[1].dispatch_us, 30.0);
  EXPECT_DOUBLE_EQ(Gflops(back->devices[0], OpKind::kMaxPool), 5.0);
  predictor::OpConfig conv = Conv(28, 64, 64, 3, 1);
  EXPECT_DOUBLE_EQ(back->MakeModel()->PredictUs(conv, 1), params.MakeModel()->PredictUs(conv, 1));
}

TEST(AnalyticParamsJsonTest, RoundTripKeepsTheNewFields) {
  predictor::host_model::AnalyticParams params{"host", {TruthCpuV2()}};
  absl::StatusOr<predictor::host_model::AnalyticParams> back =
      predictor::host_model::AnalyticParamsFromJson(
          nlohmann::json::parse(predictor::host_model::AnalyticParamsToJson(params).dump()));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_DOUBLE_EQ(back->devices[0].pointwise_gflops, 15.0);
  EXPECT_DOUBLE_EQ(back->devices[0].half_reduction, 100.0);
  EXPECT_DOUBLE_EQ(back->devices[0].concat_us, 0.4);
  EXPECT_EQ(back->MakeModel()->Version(), params.MakeModel()->Version());
}

TEST(AnalyticParamsJsonTest, FilesWithoutTheNewFieldsLoadWithTheirOldPredictions) {
  // A device as written by the first calibration version (docs/calibration.md).
  const nlohmann::json old = nlohmann::json::parse(R"({"platform": "host",
      "model_version": "analytic-v1/host+calibrated/69b8c67d5ea00f10",
      "devices": [{"name": "cpu.0", "gpu": false, "depthwise_gflops": 3.0,
                   "bandwidth_gbps": 34.6, "overhead_us": 4.5, "dispatch_us": 0.0,
                   "half_parallelism": 120.0, "gflops": {}}]})");
  nlohmann::json file = old;
  for (int k = 0; k < model::kNumOpKinds; ++k) {
    file["devices"][0]["gflops"][std::string(model::OpKindName(static_cast<OpKind>(k)))] =
        k == static_cast<int>(OpKind::kConv2d) ? 45.8 : 8.0;
  }
  absl::StatusOr<predictor::host_model::AnalyticParams> loaded =
      predictor::host_model::AnalyticParamsFromJson(file);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const predictor::AnalyticDeviceParams& d = loaded->devices[0];
  EXPECT_DOUBLE_EQ(d.pointwise_gflops, 45.8);
  EXPECT_DOUBLE_EQ(d.half_reduction, 0.0);
  EXPECT_DOUBLE_EQ(d.concat_us, 4.5);
  // The plain roofline of the old model, for 1x1 and 3x3 convs alike.
  const std::shared_ptr<const predictor::AnalyticModel> model = loaded->MakeModel();
  for (const predictor::OpConfig& conv : {Conv(56, 16, 64, 1, 1), Conv(28, 64, 64, 3, 1)}) {
    const double parallel = static_cast<double>(conv.output.Elements());
    const double compute = conv.flops / (45.8e3 * parallel / (parallel + 120.0));
    EXPECT_NEAR(model->PredictUs(conv, 0), std::max(compute, conv.bytes / 34.6e3) + 4.5, 1e-9);
  }
}

TEST(AnalyticParamsJsonTest, FilesWithoutTheTensorKindsLoadWithStandIns) {
  nlohmann::json file = predictor::host_model::AnalyticParamsToJson(
      predictor::host_model::AnalyticParams{"host", {TruthCpu()}});
  nlohmann::json& gflops = file["devices"][0]["gflops"];
  gflops["fully_connected"] = 12.0;
  gflops["add"] = 3.0;
  for (const char* kind :
       {"transpose", "reshape", "matmul", "layer_norm", "reduce", "div", "slice"}) {
    gflops.erase(kind);
  }
  absl::StatusOr<predictor::host_model::AnalyticParams> loaded =
      predictor::host_model::AnalyticParamsFromJson(file);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_DOUBLE_EQ(Gflops(loaded->devices[0], OpKind::kMatMul), 12.0);
  EXPECT_DOUBLE_EQ(Gflops(loaded->devices[0], OpKind::kLayerNorm), 3.0);
  EXPECT_DOUBLE_EQ(Gflops(loaded->devices[0], OpKind::kTranspose), 3.0);
  predictor::OpConfig matmul;
  matmul.kind = OpKind::kMatMul;
  matmul.inputs = {Shape{197, 1, 64}, Shape{64, 1, 197}};
  matmul.output = Shape{197, 1, 197};
  predictor::ComputeCost(matmul);
  const double us = loaded->MakeModel()->PredictUs(matmul, 0);
  EXPECT_TRUE(std::isfinite(us));
  EXPECT_GT(us, 0);
}

TEST(AnalyticParamsJsonTest, RejectsBadInput) {
  const nlohmann::json good = predictor::host_model::AnalyticParamsToJson(
      predictor::host_model::AnalyticParams{"host", {TruthCpu()}});
  EXPECT_FALSE(predictor::host_model::AnalyticParamsFromJson(nlohmann::json::array()).ok());
  nlohmann::json no_devices = good;
  no_devices["devices"] = nlohmann::json::array();
  EXPECT_THAT(
      std::string(predictor::host_model::AnalyticParamsFromJson(no_devices).status().message()),
      ::testing::HasSubstr("'devices' missing or empty"));
  nlohmann::json zero_bw = good;
  zero_bw["devices"][0]["bandwidth_gbps"] = 0.0;
  EXPECT_THAT(
      std::string(predictor::host_model::AnalyticParamsFromJson(zero_bw).status().message()),
      ::testing::HasSubstr("device 0: 'bandwidth_gbps' must be a finite number > 0"));
  nlohmann::json unknown_kind = good;
  unknown_kind["devices"][0]["gflops"]["lstm"] = 1.0;
  EXPECT_THAT(
      std::string(predictor::host_model::AnalyticParamsFromJson(unknown_kind).status().message()),
      ::testing::HasSubstr("unknown op kind 'lstm'"));
  nlohmann::json missing_kind = good;
  missing_kind["devices"][0]["gflops"].erase("softmax");
  EXPECT_THAT(
      std::string(predictor::host_model::AnalyticParamsFromJson(missing_kind).status().message()),
      ::testing::HasSubstr("lacks op kind 'softmax'"));
  nlohmann::json negative_overhead = good;
  negative_overhead["devices"][0]["overhead_us"] = -2.0;
  EXPECT_FALSE(predictor::host_model::AnalyticParamsFromJson(negative_overhead).ok());
  nlohmann::json negative_reduction = good;
  negative_reduction["devices"][0]["half_reduction"] = -1.0;
  EXPECT_THAT(
      std::string(
          predictor::host_model::AnalyticParamsFromJson(negative_reduction).status().message()),
      ::testing::HasSubstr("device 0: 'half_reduction' must be a finite number >= 0"));
  nlohmann::json text_pointwise = good;
  text_pointwise["devices"][0]["pointwise_gflops"] = "fast";
  EXPECT_THAT(
      std::string(predictor::host_model::AnalyticParamsFromJson(text_pointwise).status().message()),
      ::testing::HasSubstr("'pointwise_gflops' must be a finite number > 0"));
  nlohmann::json negative_concat = good;
  negative_concat["devices"][0]["concat_us"] = -0.5;
  EXPECT_THAT(
      std::string(
          predictor::host_model::AnalyticParamsFromJson(negative_concat).status().message()),
      ::testing::HasSubstr("'concat_us' must be a finite number >= 0"));
}

}  // namespace
}  // namespace psched::calibration
