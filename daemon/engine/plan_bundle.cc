#include "daemon/engine/plan_bundle.h"

#include <array>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "model/model_hash.h"
#include "nlohmann/json.hpp"

namespace psched::daemon {
namespace {

using nlohmann::json;

// `where` is a path into the bundle ("plans[2].key"); empty: the top level.
absl::Status Bad(absl::string_view where, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("plan bundle: ", where.empty() ? "top level" : where, ": ", why));
}

std::string Member(const std::string& where, const char* name) {
  return where.empty() ? name : absl::StrCat(where, ".", name);
}

std::string Hex(const std::array<uint8_t, 32>& digest) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (uint8_t byte : digest) {
    out.push_back(kDigits[byte >> 4]);
    out.push_back(kDigits[byte & 0xf]);
  }
  return out;
}

// Version 1 covers the plans alone; version 2 the plans and the calibration.
std::string Checksum(int version, const json& plans, const json& calibration) {
  if (version == 1) return Hex(model::Sha256(plans.dump()));
  return Hex(model::Sha256(json{{"calibration", calibration}, {"plans", plans}}.dump()));
}

// The string member `name` of `object`, or an error naming `where`.
absl::StatusOr<std::string> StringAt(const json& object, const char* name, const std::string& where,
                                     bool allow_empty = false) {
  auto it = object.find(name);
  if (it == object.end()) return Bad(where, absl::StrCat("'", name, "' is missing"));
  if (!it->is_string()) return Bad(Member(where, name), "not a string");
  std::string value = it->get<std::string>();
  if (value.empty() && !allow_empty) return Bad(Member(where, name), "is empty");
  return value;
}

absl::StatusOr<double> NumberAt(const json& object, const char* name, const std::string& where) {
  auto it = object.find(name);
  if (it == object.end()) return Bad(where, absl::StrCat("'", name, "' is missing"));
  if (!it->is_number()) return Bad(Member(where, name), "not a number");
  const double value = it->get<double>();
  if (!std::isfinite(value) || value < 0) {
    return Bad(Member(where, name), "must be a finite number >= 0");
  }
  return value;
}

absl::StatusOr<cache::PlanRecord> PlanFromJson(const json& plan, const std::string& where) {
  if (!plan.is_object()) return Bad(where, "not an object");
  cache::PlanRecord record;
  auto key = plan.find("key");
  if (key == plan.end()) return Bad(where, "'key' is missing");
  if (!key->is_object()) return Bad(where + ".key", "not an object");
  const std::string key_where = where + ".key";
  absl::StatusOr<std::string> model_id = StringAt(*key, "model_id", key_where);
  if (!model_id.ok()) return model_id.status();
  absl::StatusOr<std::string> fingerprint = StringAt(*key, "platform_fingerprint", key_where);
  if (!fingerprint.ok()) return fingerprint.status();
  absl::StatusOr<std::string> predictor = StringAt(*key, "predictor_version", key_where);
  if (!predictor.ok()) return predictor.status();
  absl::StatusOr<std::string> config = StringAt(*key, "scheduler_config", key_where);
  if (!config.ok()) return config.status();
  record.key = {*model_id, *fingerprint, *predictor, *config};
  absl::StatusOr<std::string> scheduler = StringAt(plan, "scheduler", where);
  if (!scheduler.ok()) return scheduler.status();
  record.scheduler = *scheduler;
  absl::StatusOr<double> makespan = NumberAt(plan, "makespan_us", where);
  if (!makespan.ok()) return makespan.status();
  record.makespan_us = *makespan;
  absl::StatusOr<double> planning = NumberAt(plan, "planning_ms", where);
  if (!planning.ok()) return planning.status();
  record.planning_ms = *planning;
  auto schedule = plan.find("schedule");
  if (schedule == plan.end()) return Bad(where, "'schedule' is missing");
  if (!schedule->is_object()) return Bad(where + ".schedule", "not an object");
  record.schedule_json = schedule->dump();
  return record;
}

absl::StatusOr<cache::CalibrationRecord> CalibrationFromJson(const json& calibration) {
  const std::string where = "calibration";
  if (!calibration.is_object()) return Bad(where, "not an object or null");
  cache::CalibrationRecord record;
  absl::StatusOr<std::string> key = StringAt(calibration, "platform_key", where);
  if (!key.ok()) return key.status();
  record.platform_key = *key;
  absl::StatusOr<std::string> version = StringAt(calibration, "predictor_version", where);
  if (!version.ok()) return version.status();
  record.predictor_version = *version;
  auto params = calibration.find("params");
  if (params == calibration.end()) return Bad(where, "'params' is missing");
  if (!params->is_object()) return Bad(where + ".params", "not an object");
  record.params_json = params->dump();
  return record;
}

}  // namespace

std::string FormatBundle(const PlanBundle& bundle) {
  json plans = json::array();
  for (const cache::PlanRecord& record : bundle.plans) {
    plans.push_back({{"key",
                      {{"model_id", record.key.model_id},
                       {"platform_fingerprint", record.key.platform_fingerprint},
                       {"predictor_version", record.key.predictor_version},
                       {"scheduler_config", record.key.scheduler_config}}},
                     {"scheduler", record.scheduler},
                     {"makespan_us", record.makespan_us},
                     {"planning_ms", record.planning_ms},
                     {"schedule", json::parse(record.schedule_json)}});
  }
  json calibration = nullptr;
  if (bundle.calibration.has_value()) {
    calibration = {{"platform_key", bundle.calibration->platform_key},
                   {"predictor_version", bundle.calibration->predictor_version},
                   {"params", json::parse(bundle.calibration->params_json)}};
  }
  json out = {
      {"format", kBundleFormat},
      {"version", kBundleVersion},
      {"platform", {{"name", bundle.platform_name}, {"fingerprint", bundle.platform_fingerprint}}},
      {"model_id", bundle.model_id},
      {"sha256", Checksum(kBundleVersion, plans, calibration)},
      {"plans", std::move(plans)},
      {"calibration", std::move(calibration)}};
  return out.dump(1) + "\n";
}

absl::StatusOr<PlanBundle> ParseBundle(absl::string_view text) {
  if (text.empty()) return Bad("input", "empty (no bundle)");
  if (text.size() > kMaxBundleBytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("plan bundle: ", text.size(), " bytes; a bundle is at most ",
                     kMaxBundleBytes >> 20, " MiB"));
  }
  json root;
  try {
    root = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    return Bad(absl::StrCat("byte ", e.byte),
               absl::StrCat("not valid JSON (truncated or not a bundle): ", e.what()));
  } catch (const json::exception& e) {
    // A number beyond double's range, say: valid JSON syntax, not a bundle.
    return Bad("input", absl::StrCat("not a plan bundle: ", e.what()));
  }
  if (!root.is_object()) return Bad("top level", "not a JSON object");
  auto format = root.find("format");
  if (format == root.end() || !format->is_string() || *format != kBundleFormat) {
    return Bad("format", absl::StrCat("must be \"", kBundleFormat, "\" (not a plan bundle)"));
  }
  auto version = root.find("version");
  if (version == root.end() || !version->is_number_integer()) {
    return Bad("version", "missing or not an integer");
  }
  if (*version != 1 && *version != kBundleVersion) {
    return Bad("version", absl::StrCat(version->dump(), " is not supported; this pschedd reads 1 to ",
                                       kBundleVersion));
  }
  const int format_version = version->get<int>();
  PlanBundle bundle;
  auto platform = root.find("platform");
  if (platform == root.end() || !platform->is_object()) {
    return Bad("platform", "missing or not an object");
  }
  absl::StatusOr<std::string> name = StringAt(*platform, "name", "platform", true);
  if (!name.ok()) return name.status();
  bundle.platform_name = *name;
  absl::StatusOr<std::string> fingerprint = StringAt(*platform, "fingerprint", "platform");
  if (!fingerprint.ok()) return fingerprint.status();
  bundle.platform_fingerprint = *fingerprint;
  absl::StatusOr<std::string> model_id = StringAt(root, "model_id", "");
  if (!model_id.ok()) return model_id.status();
  bundle.model_id = *model_id;
  absl::StatusOr<std::string> sha256 = StringAt(root, "sha256", "");
  if (!sha256.ok()) return sha256.status();
  auto plans = root.find("plans");
  if (plans == root.end() || !plans->is_array()) return Bad("plans", "missing or not an array");
  json calibration = nullptr;
  if (auto it = root.find("calibration"); it != root.end()) {
    if (format_version == 1) return Bad("calibration", "a version 1 bundle has no calibration");
    calibration = *it;
  }
  const std::string actual = Checksum(format_version, *plans, calibration);
  if (actual != *sha256) {
    return Bad("sha256",
               absl::StrCat(format_version == 1 ? "the plans hash to " : "the plans and calibration hash to ",
                            actual, ", the bundle says ", *sha256, " (changed after export)"));
  }
  if (!calibration.is_null()) {
    absl::StatusOr<cache::CalibrationRecord> record = CalibrationFromJson(calibration);
    if (!record.ok()) return record.status();
    bundle.calibration = *std::move(record);
  }
  for (size_t i = 0; i < plans->size(); ++i) {
    const std::string where = absl::StrCat("plans[", i, "]");
    absl::StatusOr<cache::PlanRecord> record = PlanFromJson((*plans)[i], where);
    if (!record.ok()) return record.status();
    if (record->key.model_id != bundle.model_id) {
      return Bad(
          where + ".key.model_id",
          absl::StrCat(record->key.model_id, " is not the bundle's model ", bundle.model_id));
    }
    if (record->key.platform_fingerprint != bundle.platform_fingerprint) {
      return Bad(where + ".key.platform_fingerprint",
                 absl::StrCat(record->key.platform_fingerprint, " is not the bundle's platform ",
                              bundle.platform_fingerprint));
    }
    bundle.plans.push_back(*std::move(record));
  }
  return bundle;
}

}  // namespace psched::daemon
