// Plan bundles: a model's cached plans for one platform in one versioned JSON file, so a fleet
// of identical boards plans once (docs/api.md, "Plan bundles").
//
//   {"format": "psched-plan-bundle", "version": 2,
//    "platform": {"name": ..., "fingerprint": ...}, "model_id": ...,
//    "plans": [{"key": {"model_id", "platform_fingerprint", "predictor_version",
//                       "scheduler_config"},
//               "scheduler", "makespan_us", "planning_ms", "schedule": {plan JSON}}, ...],
//    "calibration": null | {"platform_key", "predictor_version", "params": {fitted model}},
//    "sha256": hex SHA-256 of the canonical text of {"calibration": ..., "plans": ...}}
//
// "calibration" is the exporting board's calibration when some plan was made with it, so a
// fresh board of the same platform can plan, and serve those plans, with the same predictor.
// Version 1 bundles (no calibration; the checksum covers "plans" alone) are still read.
// The canonical text is nlohmann's compact dump (object keys sorted), so a bundle reformatted
// by hand still verifies while any change to a value does not. ParseBundle checks the shape,
// the checksum and that every plan belongs to the bundle's model and platform; it does not
// check a plan against a model's graph nor the calibration against the devices (the engine
// does, as for a plan or a calibration read from its cache). Nothing in the text is trusted:
// every problem is INVALID_ARGUMENT naming where it is. Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cache/store.h"

namespace psched::daemon {

inline constexpr const char* kBundleFormat = "psched-plan-bundle";
inline constexpr int kBundleVersion = 2;
// A bundle travels in one gRPC message (64 MiB on both ends); this leaves room for the rest.
inline constexpr size_t kMaxBundleBytes = size_t{48} << 20;

struct PlanBundle {
  std::string platform_name;
  std::string platform_fingerprint;
  std::string model_id;
  // schedule_json is the plan JSON's compact dump; hits and created_unix_s are 0.
  std::vector<cache::PlanRecord> plans;
  // params_json is the fitted model's compact dump; report_json and created_unix_s are empty.
  std::optional<cache::CalibrationRecord> calibration;
};

// The bundle's text (pretty-printed, with its checksum).
// REQUIRES: every plan's schedule_json and the calibration's params_json are valid JSON.
std::string FormatBundle(const PlanBundle& bundle);

// The bundle in `text`, its checksum verified. Over kMaxBundleBytes: RESOURCE_EXHAUSTED.
absl::StatusOr<PlanBundle> ParseBundle(absl::string_view text);

}  // namespace psched::daemon
