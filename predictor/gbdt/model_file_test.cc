#include "predictor/gbdt/model_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "predictor/gbdt/gbdt_latency_model.h"

namespace psched::predictor::gbdt {
namespace {

using ::testing::HasSubstr;

// A GPU model with a conv family (a split on out_c) and a concat family that every other
// classic family falls back to; like a file written before the transformer families, it has
// nothing for them.
DeviceModel SmallGpuModel() {
  DeviceModel m;
  m.device = "phone/gpu";
  m.gpu = true;
  m.dispatch = "tflite-gpu";
  m.comments = "a test model\nsecond line";
  const int conv_width = static_cast<int>(FeatureNames(OpFamily::kConv, true).size());
  FamilyModel conv;
  conv.baseline = Baseline{0.01, 2.0, 5.0};
  conv.trees = TreeEnsemble(
      0.125, conv_width,
      {{{5, 64.5f, 1, 2, true}, {-1, -0.25f, -1, -1, true}, {-1, 0.375f, -1, -1, true}}});
  m.families[static_cast<size_t>(OpFamily::kConv)] = conv;
  FamilyModel concat;
  concat.baseline = Baseline{0, 1.5, 20.0};
  concat.trees =
      TreeEnsemble(0, static_cast<int>(FeatureNames(OpFamily::kConcat, true).size()), {});
  m.families[static_cast<size_t>(OpFamily::kConcat)] = concat;
  for (OpFamily f : kAllFamilies) {
    if (IsClassicFamily(f) && !m.families[static_cast<size_t>(f)].has_value())
      m.fallback[static_cast<size_t>(f)] = OpFamily::kConcat;
  }
  m.fallback[static_cast<size_t>(OpFamily::kGroupedConv)] = OpFamily::kConv;
  return m;
}

TEST(ModelFileTest, FormatParseFormatIsByteIdentical) {
  const std::string text = FormatModelFile(SmallGpuModel());
  absl::StatusOr<DeviceModel> parsed = ParseModelFile(text, "small.gbdt");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->device, "phone/gpu");
  EXPECT_TRUE(parsed->gpu);
  EXPECT_EQ(parsed->comments, "a test model\nsecond line");
  EXPECT_EQ(FormatModelFile(*parsed), text);
  EXPECT_EQ(parsed->For(OpFamily::kGroupedConv), &*parsed->families[0]);
  EXPECT_EQ(parsed->For(OpFamily::kElementwise),
            &*parsed->families[static_cast<size_t>(OpFamily::kConcat)]);
}

// Replaces the first occurrence of `from` and expects the parse to fail with `message` at
// `line`.
void ExpectBad(const std::string& text, const std::string& from, const std::string& to,
               const std::string& message, int line, const ModelExpectation& expect = {}) {
  std::string edited = text;
  const size_t at = edited.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  edited.replace(at, from.size(), to);
  absl::StatusOr<DeviceModel> parsed = ParseModelFile(edited, "bad.gbdt", expect);
  ASSERT_FALSE(parsed.ok()) << "accepted after replacing '" << from << "'";
  EXPECT_THAT(std::string(parsed.status().message()),
              HasSubstr(absl::StrCat("bad.gbdt:", line, ": ")))
      << parsed.status();
  EXPECT_THAT(std::string(parsed.status().message()), HasSubstr(message));
}

TEST(ModelFileTest, MalformedFilesNameFileAndLine) {
  const std::string text = FormatModelFile(SmallGpuModel());
  // Lines: 1 magic, 2 device, 3 kind, 4 dispatch, 5-6 comments, 7 family conv, 8 features,
  // 9 baseline, 10 base_score, 11 trees, 12 tree, 13-15 nodes, 16 end-family.
  ExpectBad(text, "psched-gbdt 1", "psched-gbdt 9", "format version 9 is not supported", 1);
  ExpectBad(text, "psched-gbdt 1", "PK\x03\x04", "expected 'psched-gbdt'", 1);
  ExpectBad(text, "kind gpu", "kind npu", "device kind 'npu'", 3);
  ExpectBad(text, "baseline 0.01", "baseline abc",
            "baseline coefficient 'abc' is not a finite number", 9);
  ExpectBad(text, "baseline 0.01", "baseline -0.01", "is negative", 9);
  ExpectBad(text, "s 5 64.5", "s 5 sixty", "threshold 'sixty'", 13);
  ExpectBad(text, "s 5 64.5 1 2", "s 99 64.5 1 2", "feature index '99'", 13);
  ExpectBad(text, "s 5 64.5 1 2", "s 5 64.5 1 1", "two parents", 13);
  ExpectBad(text, "s 5 64.5 1 2 L", "s 5 64.5 1 2 X", "missing-value side 'X'", 13);
  ExpectBad(text, "l -0.25", "x -0.25", "expected 's'", 14);
  ExpectBad(text, "features in_h", "features in_x", "this build's GPU layout", 8);
  ExpectBad(text, "family conv", "family convolution", "unknown op family 'convolution'", 7);
  ExpectBad(text, "fallback grouped_conv conv", "fallback grouped_conv pool",
            "not a family modelled earlier", 23);
  ExpectBad(text, "fallback elementwise concat\n", "",
            "no model or fallback for family elementwise", 28);
}

TEST(ModelFileTest, TruncatedFilesAreReportedAsTruncated) {
  const std::string text = FormatModelFile(SmallGpuModel());
  for (size_t cut :
       {text.find("tree 3"), text.find("l 0.375"), text.find("end-family"), text.rfind("end")}) {
    ASSERT_NE(cut, std::string::npos);
    absl::StatusOr<DeviceModel> parsed = ParseModelFile(text.substr(0, cut), "cut.gbdt");
    ASSERT_FALSE(parsed.ok()) << "accepted a file cut at byte " << cut;
    EXPECT_THAT(std::string(parsed.status().message()), HasSubstr("truncated")) << parsed.status();
    EXPECT_THAT(std::string(parsed.status().message()), HasSubstr("cut.gbdt:"));
  }
}

TEST(ModelFileTest, AFileTrainedForAnotherDeviceIsRefused) {
  const std::string text = FormatModelFile(SmallGpuModel());
  ModelExpectation other_device;
  other_device.device = "pixel4/gpu";
  other_device.for_what = "platform 'p' device 'gpu'";
  ExpectBad(text, "", "",
            "model trained for device 'phone/gpu', but platform 'p' device 'gpu' "
            "needs one trained for 'pixel4/gpu'",
            2, other_device);
  ModelExpectation cpu;
  cpu.gpu = false;
  cpu.for_what = "device 'cpu.l'";
  ExpectBad(text, "", "", "a GPU model cannot predict device 'cpu.l', a CPU", 3, cpu);
  ModelExpectation schemes;
  schemes.known_scheme = [](absl::string_view name) { return name == "psched-opencl"; };
  ExpectBad(text, "", "", "unknown dispatch scheme 'tflite-gpu'", 4, schemes);
}

TEST(GbdtLatencyModelTest, PredictsBaselineTimesExpOfTheTreesPlusExtra) {
  GbdtLatencyModel::DeviceSource gpu{"gpu",       "small.gbdt", FormatModelFile(SmallGpuModel()),
                                     "phone/gpu", true,         10.0};
  absl::StatusOr<std::unique_ptr<GbdtLatencyModel>> model = GbdtLatencyModel::Create("p", {gpu});
  ASSERT_TRUE(model.ok()) << model.status();
  OpConfig conv;
  conv.kind = model::OpKind::kConv2d;
  conv.inputs = {model::Shape{16, 16, 32}};
  conv.output = model::Shape{16, 16, 128};
  conv.window.kernel_h = conv.window.kernel_w = 3;
  conv.window.pad_top = conv.window.pad_bottom = conv.window.pad_left = conv.window.pad_right = 1;
  ComputeCost(conv);
  const double base = 0.01 * conv.flops / 1e6 + 2.0 * conv.bytes / 1e6 + 5.0;
  // out_c = 128 >= 64.5: the right leaf.
  EXPECT_NEAR((*model)->PredictUs(conv, 0), base * std::exp(0.125 + 0.375) + 10.0, 1e-9);
  OpConfig add;
  add.kind = model::OpKind::kAdd;
  add.inputs = {model::Shape{8, 8, 4}, model::Shape{8, 8, 4}};
  add.output = model::Shape{8, 8, 4};
  ComputeCost(add);
  EXPECT_NEAR((*model)->PredictUs(add, 0), 1.5 * add.bytes / 1e6 + 20.0 + 10.0, 1e-9);
}

TEST(ModelFileTest, TransformerFamiliesMayBeAbsentOrFallBack) {
  DeviceModel m = SmallGpuModel();
  absl::StatusOr<DeviceModel> parsed = ParseModelFile(FormatModelFile(m), "old.gbdt");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->For(OpFamily::kMatMul), nullptr);
  EXPECT_EQ(parsed->For(OpFamily::kDataMovement), nullptr);
  EXPECT_EQ(parsed->For(OpFamily::kNormalization), nullptr);
  // A file may also name a fallback for them, and it round-trips.
  m.fallback[static_cast<size_t>(OpFamily::kMatMul)] = OpFamily::kConv;
  const std::string text = FormatModelFile(m);
  EXPECT_THAT(text, HasSubstr("fallback matmul conv\n"));
  parsed = ParseModelFile(text, "new.gbdt");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->For(OpFamily::kMatMul), &*parsed->families[0]);
  EXPECT_EQ(FormatModelFile(*parsed), text);
}

TEST(GbdtLatencyModelTest, AFamilyTheFileLacksIsPredictedByTheBaselineRoofline) {
  GbdtLatencyModel::DeviceSource gpu{"gpu",       "small.gbdt", FormatModelFile(SmallGpuModel()),
                                     "phone/gpu", true,         10.0};
  absl::StatusOr<std::unique_ptr<GbdtLatencyModel>> model = GbdtLatencyModel::Create("p", {gpu});
  ASSERT_TRUE(model.ok()) << model.status();
  // [12, 197, 64] x [12, 64, 197]: 59.6 MFLOP, 2.47 MB.
  OpConfig matmul;
  matmul.kind = model::OpKind::kMatMul;
  matmul.inputs = {model::Shape{12 * 197, 1, 64}, model::Shape{12 * 64, 1, 197}};
  matmul.output = model::Shape{12 * 197, 1, 197};
  matmul.matmul = MatMulDims{12, 197, 197, 64, 12, 12};
  ComputeCost(matmul);
  // The conv baseline: 0.01 us/MFLOP is 100 TFLOP/s, 2 us/MB is 500 GB/s, 5 us per op; the
  // memory term dominates.
  const double expected = std::max(matmul.flops / 100e6, matmul.bytes / 500e3) + 5.0 + 10.0;
  EXPECT_NEAR((*model)->PredictUs(matmul, 0), expected, 1e-9);
  EXPECT_TRUE((*model)->PredictsWithFallback(matmul, 0));
  OpConfig ln;
  ln.kind = model::OpKind::kLayerNorm;
  ln.inputs = {model::Shape{197, 1, 768}};
  ln.output = model::Shape{197, 1, 768};
  ComputeCost(ln);
  const double ln_us = (*model)->PredictUs(ln, 0);
  EXPECT_TRUE(std::isfinite(ln_us));
  EXPECT_GT(ln_us, 15.0);
  OpConfig add;
  add.kind = model::OpKind::kAdd;
  add.inputs = {model::Shape{8, 8, 4}, model::Shape{8, 8, 4}};
  add.output = model::Shape{8, 8, 4};
  ComputeCost(add);
  EXPECT_FALSE((*model)->PredictsWithFallback(add, 0));
  // A batch mixing families gives what one prediction at a time gives.
  const std::vector<OpConfig> batch = {add, matmul, ln, add};
  std::vector<double> out(batch.size());
  (*model)->PredictBatch(batch, 0, out);
  for (size_t i = 0; i < batch.size(); ++i) {
    EXPECT_DOUBLE_EQ(out[i], (*model)->PredictUs(batch[i], 0)) << i;
  }
}

TEST(GbdtLatencyModelTest, VersionIsTheContentHash) {
  const std::string text = FormatModelFile(SmallGpuModel());
  auto version = [](const std::string& t, double extra) {
    GbdtLatencyModel::DeviceSource d{"gpu", "v.gbdt", t, "", true, extra};
    absl::StatusOr<std::unique_ptr<GbdtLatencyModel>> m = GbdtLatencyModel::Create("p", {d});
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? (*m)->Version() : std::string();
  };
  const std::string v = version(text, 10);
  EXPECT_THAT(v, ::testing::MatchesRegex("gbdt-v2/p/[0-9a-f]{16}"));
  EXPECT_EQ(version(text, 10), v);
  EXPECT_NE(version(absl::StrReplaceAll(text, {{"l 0.375", "l 0.376"}}), 10), v);
  EXPECT_NE(version(absl::StrReplaceAll(text, {{"a test model", "a test modeL"}}), 10), v);
  EXPECT_NE(version(text, 11), v);
}

}  // namespace
}  // namespace psched::predictor::gbdt
