#include "calibration/run_costs/run_costs.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace psched::calibration {
namespace {

using nlohmann::json;

absl::Status Bad(const std::string& field, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("run costs: '", field, "' ", why));
}

// A finite number >= `min` (> `min` when `strict`) at json[key].
absl::StatusOr<double> Number(const json& object, const std::string& key, const std::string& where,
                              double min, bool strict) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_number()) {
    return Bad(where + key, "is missing or not a number");
  }
  const double v = object[key].get<double>();
  if (!std::isfinite(v) || v < min || (strict && v == min)) {
    return Bad(where + key,
               absl::StrCat("is ", v, ", need a finite number ", strict ? ">" : ">=", " ", min));
  }
  return v;
}

// json[key], a finite number >= 0, into `out` when present (older files lack the report's
// later figures; `out` keeps its default); the error when it is anything else.
template <typename T>
absl::Status Optional(const json& object, const std::string& key, const std::string& where,
                      T& out) {
  if (!object.contains(key)) return absl::OkStatus();
  absl::StatusOr<double> v = Number(object, key, where, 0, /*strict=*/false);
  if (!v.ok()) return v.status();
  if constexpr (std::is_integral_v<T>) {
    if (*v != std::floor(*v) || *v > std::numeric_limits<T>::max()) {
      return Bad(where + key, absl::StrCat("is ", *v, ", need a count"));
    }
  }
  out = static_cast<T>(*v);
  return absl::OkStatus();
}

absl::StatusOr<std::string> Name(const json& object, const std::string& key,
                                 const std::string& where) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_string() ||
      object[key].get<std::string>().empty()) {
    return Bad(where + key, "is missing or not a device name");
  }
  return object[key].get<std::string>();
}

}  // namespace

double RunCosts::PerRunUs() const {
  double cold = 0;
  for (const InRun& r : in_run) cold = std::max(cold, r.cold_us);
  return run_overhead_us + cold;
}

json RunCostsToJson(const RunCosts& costs) {
  json in_run = json::array();
  for (const RunCosts::InRun& r : costs.in_run) {
    in_run.push_back({{"device", r.device},
                      {"measured_us", r.measured_us},
                      {"predicted_us", r.predicted_us},
                      {"factor", r.factor},
                      {"cold_us", r.cold_us},
                      {"co_run_factor", r.co_run_factor},
                      {"partial_sum_ns", r.partial_sum_ns},
                      {"combines", r.combines},
                      {"gap_us", r.gap_us},
                      {"gaps", r.gaps},
                      {"synced_gap_us", r.synced_gap_us},
                      {"synced_gaps", r.synced_gaps}});
  }
  json sync = json::array();
  for (const RunCosts::Sync& s : costs.sync) {
    json entry = {{"from", s.from}, {"to", s.to}, {"us", s.us}};
    if (s.window_us > 0) {
      entry["window_us"] = s.window_us;
      entry["spinning_us"] = s.spinning_us;
      entry["parked_us"] = s.parked_us;
      entry["spinning_waits"] = s.spinning_waits;
      entry["parked_waits"] = s.parked_waits;
    }
    sync.push_back(std::move(entry));
  }
  return {{"probes", costs.probes},
          {"runs", costs.runs},
          {"rounds", costs.rounds},
          {"slowest_kept_round", costs.slowest_kept_round},
          {"slowest_dropped_round", costs.slowest_dropped_round},
          {"run_overhead_us", costs.run_overhead_us},
          {"multi_device_measured_us", costs.multi_device_measured_us},
          {"multi_device_replay_us", costs.multi_device_replay_us},
          {"multi_device_hand_off_replay_us", costs.multi_device_hand_off_replay_us},
          {"gpu_multi_device_measured_us", costs.gpu_multi_device_measured_us},
          {"gpu_multi_device_replay_us", costs.gpu_multi_device_replay_us},
          {"gpu_multi_device_hand_off_replay_us", costs.gpu_multi_device_hand_off_replay_us},
          {"in_run", std::move(in_run)},
          {"sync", std::move(sync)}};
}

absl::StatusOr<RunCosts> RunCostsFromJson(const json& stored) {
  if (!stored.is_object()) return Bad("run_costs", "is not an object");
  RunCosts costs;
  for (const char* key : {"in_run", "sync"}) {
    if (!stored.contains(key) || !stored[key].is_array())
      return Bad(key, "is missing or not a list");
  }
  for (size_t i = 0; i < stored["in_run"].size(); ++i) {
    const json& r = stored["in_run"][i];
    const std::string where = absl::StrCat("in_run[", i, "].");
    RunCosts::InRun in_run;
    absl::StatusOr<std::string> device = Name(r, "device", where);
    if (!device.ok()) return device.status();
    in_run.device = *device;
    absl::StatusOr<double> factor = Number(r, "factor", where, 0, /*strict=*/true);
    if (!factor.ok()) return factor.status();
    in_run.factor = *factor;
    if (absl::Status st = Optional(r, "cold_us", where, in_run.cold_us); !st.ok()) return st;
    if (r.contains("co_run_factor")) {
      absl::StatusOr<double> co_run = Number(r, "co_run_factor", where, 0, /*strict=*/true);
      if (!co_run.ok()) return co_run.status();
      in_run.co_run_factor = *co_run;
    }
    // A measured cost and, beside it only, how many times it was seen.
    for (const auto& [key, count, value, n] :
         {std::tuple{"partial_sum_ns", "combines", &in_run.partial_sum_ns, &in_run.combines},
          std::tuple{"gap_us", "gaps", &in_run.gap_us, &in_run.gaps},
          std::tuple{"synced_gap_us", "synced_gaps", &in_run.synced_gap_us, &in_run.synced_gaps}}) {
      if (!r.contains(key)) continue;
      absl::StatusOr<double> cost = Number(r, key, where, 0, /*strict=*/false);
      if (!cost.ok()) return cost.status();
      *value = *cost;
      if (absl::Status st = Optional(r, count, where, *n); !st.ok()) return st;
    }
    for (const auto& [key, value] : {std::pair{"measured_us", &in_run.measured_us},
                                     std::pair{"predicted_us", &in_run.predicted_us}}) {
      if (absl::Status st = Optional(r, key, where, *value); !st.ok()) return st;
    }
    costs.in_run.push_back(std::move(in_run));
  }
  for (size_t i = 0; i < stored["sync"].size(); ++i) {
    const json& s = stored["sync"][i];
    const std::string where = absl::StrCat("sync[", i, "].");
    RunCosts::Sync sync;
    absl::StatusOr<std::string> from = Name(s, "from", where);
    if (!from.ok()) return from.status();
    absl::StatusOr<std::string> to = Name(s, "to", where);
    if (!to.ok()) return to.status();
    if (*from == *to) return Bad(where + "to", "names the same device as 'from'");
    absl::StatusOr<double> us = Number(s, "us", where, 0, /*strict=*/false);
    if (!us.ok()) return us.status();
    sync.from = *from;
    sync.to = *to;
    sync.us = *us;
    if (s.contains("window_us")) {
      const std::pair<const char*, double*> fields[] = {{"window_us", &sync.window_us},
                                                        {"spinning_us", &sync.spinning_us},
                                                        {"parked_us", &sync.parked_us}};
      for (const auto& [key, value] : fields) {
        absl::StatusOr<double> v = Number(s, key, where, 0, /*strict=*/false);
        if (!v.ok()) return v.status();
        *value = *v;
      }
      for (const auto& [key, value] : {std::pair{"spinning_waits", &sync.spinning_waits},
                                       std::pair{"parked_waits", &sync.parked_waits}}) {
        if (absl::Status st = Optional(s, key, where, *value); !st.ok()) return st;
      }
    }
    costs.sync.push_back(std::move(sync));
  }
  for (const auto& [key, value] :
       {std::pair{"probes", &costs.probes}, std::pair{"runs", &costs.runs},
        std::pair{"rounds", &costs.rounds}}) {
    if (absl::Status st = Optional(stored, key, "", *value); !st.ok()) return st;
  }
  const std::pair<const char*, double*> figures[] = {
      {"slowest_kept_round", &costs.slowest_kept_round},
      {"slowest_dropped_round", &costs.slowest_dropped_round},
      {"run_overhead_us", &costs.run_overhead_us},
      {"multi_device_measured_us", &costs.multi_device_measured_us},
      {"multi_device_replay_us", &costs.multi_device_replay_us},
      {"multi_device_hand_off_replay_us", &costs.multi_device_hand_off_replay_us},
      {"gpu_multi_device_measured_us", &costs.gpu_multi_device_measured_us},
      {"gpu_multi_device_replay_us", &costs.gpu_multi_device_replay_us},
      {"gpu_multi_device_hand_off_replay_us", &costs.gpu_multi_device_hand_off_replay_us}};
  for (const auto& [key, value] : figures) {
    if (absl::Status st = Optional(stored, key, "", *value); !st.ok()) return st;
  }
  return costs;
}

std::string FormatRunCosts(const RunCosts& costs) {
  // The rounds the probes ran, and the quietest of them the costs hold (the same without a
  // selection).
  std::string runs = absl::StrFormat("%d timed runs each", std::max(costs.rounds, costs.runs));
  if (costs.rounds > costs.runs) {
    absl::StrAppendFormat(&runs,
                          ", fitted to the %d quietest (slowest kept %.3fx the probes' medians, "
                          "slowest dropped %.3fx)",
                          costs.runs, costs.slowest_kept_round, costs.slowest_dropped_round);
  }
  std::string out = absl::StrFormat(
      "run costs (%d plans, %s; a run's own overhead %.0f us, added to predicted latencies):\n",
      costs.probes, runs, costs.run_overhead_us);
  for (const RunCosts::InRun& r : costs.in_run) {
    absl::StrAppendFormat(&out,
                          "%-8s in-run factor %.3f, cold start %.0f us, beside other devices "
                          "x%.3f, partial sums %.2f ns per element (%d combines), %.1f us "
                          "between subtasks (%d), %.1f with a sync kernel between (%d)  "
                          "(subtasks %.0f us measured, %.0f predicted)\n",
                          r.device, r.factor, r.cold_us, r.co_run_factor, r.partial_sum_ns,
                          r.combines, r.gap_us, r.gaps, r.synced_gap_us, r.synced_gaps,
                          r.measured_us, r.predicted_us);
  }
  if (costs.multi_device_measured_us > 0) {
    absl::StrAppendFormat(&out,
                          "multi-device plans: %.0f us measured, %.0f us predicted without sync, "
                          "%.0f with hand-offs by wait\n",
                          costs.multi_device_measured_us, costs.multi_device_replay_us,
                          costs.multi_device_hand_off_replay_us);
  }
  if (costs.gpu_multi_device_measured_us > 0) {
    absl::StrAppendFormat(&out,
                          "plans with the GPU: %.0f us measured, %.0f us predicted without sync, "
                          "%.0f with hand-offs by wait\n",
                          costs.gpu_multi_device_measured_us, costs.gpu_multi_device_replay_us,
                          costs.gpu_multi_device_hand_off_replay_us);
  }
  for (const RunCosts::Sync& s : costs.sync) {
    absl::StrAppendFormat(&out, "sync %s -> %s %.1f us per edge", s.from, s.to, s.us);
    if (s.window_us > 0) {
      absl::StrAppendFormat(&out,
                            "; hand-off after a wait under %.0f us %.1f us (%d waits), after a "
                            "longer one %.1f us (%d)",
                            s.window_us, s.spinning_us, s.spinning_waits, s.parked_us,
                            s.parked_waits);
    }
    out += '\n';
  }
  return out;
}

}  // namespace psched::calibration
