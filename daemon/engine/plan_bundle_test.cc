#include "daemon/engine/plan_bundle.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/model_hash.h"
#include "nlohmann/json.hpp"

namespace psched::daemon {
namespace {

using ::testing::HasSubstr;

PlanBundle Example() {
  PlanBundle bundle;
  bundle.platform_name = "host";
  bundle.platform_fingerprint = "fp1";
  bundle.model_id = "m1";
  cache::PlanRecord plan;
  plan.key = {"m1", "fp1", "host-v1", "heft"};
  plan.scheduler = "heft";
  plan.makespan_us = 12.5;
  plan.planning_ms = 0.25;
  // Compact with sorted keys, as the engine stores a plan JSON.
  plan.schedule_json = R"({"subtasks":[{"end_us":12.5,"op":"conv","start_us":0}]})";
  bundle.plans.push_back(plan);
  return bundle;
}

std::string ErrorOf(const std::string& text) {
  absl::StatusOr<PlanBundle> parsed = ParseBundle(text);
  EXPECT_FALSE(parsed.ok()) << text;
  if (parsed.ok()) return "";
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(parsed.status().message());
}

TEST(PlanBundleTest, RoundTrips) {
  absl::StatusOr<PlanBundle> parsed = ParseBundle(FormatBundle(Example()));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->platform_fingerprint, "fp1");
  EXPECT_EQ(parsed->platform_name, "host");
  EXPECT_EQ(parsed->model_id, "m1");
  ASSERT_EQ(parsed->plans.size(), 1u);
  EXPECT_EQ(parsed->plans[0].key, Example().plans[0].key);
  EXPECT_EQ(parsed->plans[0].schedule_json, Example().plans[0].schedule_json);
  EXPECT_EQ(parsed->plans[0].makespan_us, 12.5);
}

TEST(PlanBundleTest, TruncatedInputNamesTheByte) {
  const std::string text = FormatBundle(Example());
  for (size_t size : {size_t{1}, text.size() / 3, text.size() / 2, text.size() - 3}) {
    EXPECT_THAT(ErrorOf(text.substr(0, size)),
                HasSubstr("not valid JSON (truncated or not a bundle)"));
  }
  EXPECT_THAT(ErrorOf(text.substr(0, 40)), HasSubstr("plan bundle: byte "));
  EXPECT_THAT(ErrorOf(""), HasSubstr("empty"));
}

TEST(PlanBundleTest, GarbageIsNotABundle) {
  EXPECT_THAT(ErrorOf("\x89PNG\r\n"), HasSubstr("not valid JSON"));
  EXPECT_THAT(ErrorOf("[1, 2]"), HasSubstr("top level: not a JSON object"));
  EXPECT_THAT(ErrorOf(R"({"format": "onnx"})"),
              HasSubstr("format: must be \"psched-plan-bundle\" (not a plan bundle)"));
  EXPECT_THAT(ErrorOf(R"({"format": "psched-plan-bundle", "version": 3})"),
              HasSubstr("version: 3 is not supported; this pschedd reads 1 to 2"));
  // Valid JSON syntax whose number no double holds.
  EXPECT_THAT(ErrorOf(R"({"format": "psched-plan-bundle", "version": 1e999})"),
              HasSubstr("not a plan bundle"));
}

TEST(PlanBundleTest, OversizedInputIsRefusedBeforeParsing) {
  const std::string text(kMaxBundleBytes + 1, ' ');
  absl::StatusOr<PlanBundle> parsed = ParseBundle(text);
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(parsed.status().message(),
              HasSubstr("plan bundle: 50331649 bytes; a bundle is at most 48 MiB"));
}

TEST(PlanBundleTest, AlteredPlanFailsTheChecksum) {
  std::string text = FormatBundle(Example());
  const size_t at = text.find("12.5");
  ASSERT_NE(at, std::string::npos);
  text[at] = '9';
  EXPECT_THAT(ErrorOf(text), HasSubstr("sha256: the plans and calibration hash to "));
}

PlanBundle WithCalibration() {
  PlanBundle bundle = Example();
  bundle.plans[0].key.predictor_version = "host-v1+calibrated-ab12";
  bundle.calibration = cache::CalibrationRecord{
      "cpu.0:cpu:0", "host-v1+calibrated-ab12", R"({"families":{"conv":{"gflops":31.5}}})", "", 0};
  return bundle;
}

TEST(PlanBundleTest, CalibrationTravelsWithThePlansAndIsCoveredByTheChecksum) {
  const std::string text = FormatBundle(WithCalibration());
  absl::StatusOr<PlanBundle> parsed = ParseBundle(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_TRUE(parsed->calibration.has_value());
  EXPECT_EQ(parsed->calibration->platform_key, "cpu.0:cpu:0");
  EXPECT_EQ(parsed->calibration->predictor_version, "host-v1+calibrated-ab12");
  EXPECT_EQ(parsed->calibration->params_json, R"({"families":{"conv":{"gflops":31.5}}})");
  EXPECT_FALSE(ParseBundle(FormatBundle(Example()))->calibration.has_value());

  std::string altered = text;
  const size_t at = altered.find("31.5");
  ASSERT_NE(at, std::string::npos);
  altered[at] = '7';
  EXPECT_THAT(ErrorOf(altered), HasSubstr("sha256: the plans and calibration hash to "));
}

// `bundle` with its checksum recomputed, so what is refused is the edit itself.
std::string Resealed(nlohmann::json bundle) {
  const nlohmann::json covered =
      bundle["version"] == 1
          ? bundle["plans"]
          : nlohmann::json{{"calibration", bundle["calibration"]}, {"plans", bundle["plans"]}};
  bundle["sha256"] = model::ModelHash(covered.dump());
  return bundle.dump();
}

TEST(PlanBundleTest, MalformedCalibrationIsNamed) {
  nlohmann::json bundle = nlohmann::json::parse(FormatBundle(WithCalibration()));
  nlohmann::json no_params = bundle;
  no_params["calibration"].erase("params");
  // Edited after export: the checksum refuses it first, naming it.
  EXPECT_THAT(ErrorOf(no_params.dump()), HasSubstr("sha256"));
  EXPECT_THAT(ErrorOf(Resealed(no_params)), HasSubstr("plan bundle: calibration: 'params' is missing"));
  nlohmann::json array_params = bundle;
  array_params["calibration"]["params"] = nlohmann::json::array();
  EXPECT_THAT(ErrorOf(Resealed(array_params)),
              HasSubstr("plan bundle: calibration.params: not an object"));
  nlohmann::json no_version = bundle;
  no_version["calibration"]["predictor_version"] = "";
  EXPECT_THAT(ErrorOf(Resealed(no_version)),
              HasSubstr("plan bundle: calibration.predictor_version: is empty"));
  nlohmann::json scalar = bundle;
  scalar["calibration"] = 3;
  EXPECT_THAT(ErrorOf(Resealed(scalar)), HasSubstr("calibration: not an object or null"));
  nlohmann::json v1 = bundle;
  v1["version"] = 1;
  EXPECT_THAT(ErrorOf(v1.dump()), HasSubstr("calibration: a version 1 bundle has no calibration"));
}

TEST(PlanBundleTest, VersionOneBundlesAreStillRead) {
  nlohmann::json bundle = nlohmann::json::parse(FormatBundle(Example()));
  bundle["version"] = 1;
  bundle.erase("calibration");
  bundle["sha256"] = "0";
  EXPECT_THAT(ErrorOf(bundle.dump()), HasSubstr("sha256: the plans hash to "));
  absl::StatusOr<PlanBundle> parsed = ParseBundle(Resealed(bundle));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->plans.size(), 1u);
  EXPECT_FALSE(parsed->calibration.has_value());
}

TEST(PlanBundleTest, WrongFieldsAreNamed) {
  nlohmann::json bundle = nlohmann::json::parse(FormatBundle(Example()));
  nlohmann::json no_key = bundle;
  no_key["plans"][0].erase("key");
  // The checksum covers the plans: an edited plan is refused before its fields are read.
  EXPECT_THAT(ErrorOf(no_key.dump()), HasSubstr("sha256"));
  nlohmann::json no_platform = bundle;
  no_platform.erase("platform");
  EXPECT_THAT(ErrorOf(no_platform.dump()), HasSubstr("platform: missing or not an object"));
  nlohmann::json no_model = bundle;
  no_model["model_id"] = 7;
  EXPECT_THAT(ErrorOf(no_model.dump()), HasSubstr("plan bundle: model_id: not a string"));
}

TEST(PlanBundleTest, PlansOfAnotherModelOrPlatformAreRefused) {
  PlanBundle other_model = Example();
  other_model.plans[0].key.model_id = "m2";
  EXPECT_THAT(ErrorOf(FormatBundle(other_model)),
              HasSubstr("plans[0].key.model_id: m2 is not the bundle's model m1"));
  PlanBundle other_platform = Example();
  other_platform.plans[0].key.platform_fingerprint = "fp2";
  EXPECT_THAT(ErrorOf(FormatBundle(other_platform)),
              HasSubstr("plans[0].key.platform_fingerprint: fp2 is not the bundle's platform fp1"));
  PlanBundle negative = Example();
  negative.plans[0].makespan_us = -1;
  EXPECT_THAT(ErrorOf(FormatBundle(negative)),
              HasSubstr("plans[0].makespan_us: must be a finite number >= 0"));
}

}  // namespace
}  // namespace psched::daemon
