#include "calibration/training/host_training.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "calibration/training/analytic_fit.h"
#include "calibration/training/opencl_dispatch.h"
#include "predictor/gbdt/features.h"
#include "predictor/gbdt/gbdt_latency_model.h"
#include "predictor/gbdt/model_file.h"
#include "predictor/gbdt/training/trainer.h"
#include "predictor/host_model/analytic_params_json.h"

namespace psched::calibration {
namespace {

namespace gbdt = predictor::gbdt;
using nlohmann::json;
using predictor::host_model::CalibrationSample;
using predictor::host_model::CalibrationSamples;

// The model a sample's op came from: its source up to the first '/'.
std::string GroupOf(const CalibrationSample& s) {
  const size_t slash = s.source.find('/');
  return slash == std::string::npos ? s.source : s.source.substr(0, slash);
}

// The measured-device id a host model file is trained for, e.g. "host/cpu".
std::string DeviceId(absl::string_view platform, absl::string_view name) {
  return absl::StrCat(platform, "/", name);
}

gbdt::DispatchSchemes HostSchemes() {
  return {{kOpenClDispatchScheme, &OpenClDispatch}};
}

std::string ModelSource(absl::string_view name) {
  return absl::StrCat("calibration:", name, ".gbdt");
}

absl::StatusOr<std::shared_ptr<const gbdt::GbdtLatencyModel>> LoadDeviceModel(
    absl::string_view platform, const predictor::AnalyticDeviceParams& device, std::string text) {
  gbdt::GbdtLatencyModel::DeviceSource source;
  source.name = device.name;
  source.source = ModelSource(device.name);
  source.text = std::move(text);
  source.expected_device = DeviceId(platform, device.name);
  source.gpu = device.gpu;
  source.extra_us = device.gpu ? device.dispatch_us : 0.0;
  absl::StatusOr<std::unique_ptr<gbdt::GbdtLatencyModel>> model =
      gbdt::GbdtLatencyModel::Create(std::string(platform), {std::move(source)}, HostSchemes());
  if (!model.ok()) return model.status();
  return std::shared_ptr<const gbdt::GbdtLatencyModel>(std::move(*model));
}

// One device's part of the training.
struct DeviceTraining {
  std::string file;  // empty: no GBDT model
  std::array<bool, gbdt::kNumFamilies> use_gbdt{};
  std::vector<FamilyComparison> rows;
};

absl::StatusOr<DeviceTraining> TrainDevice(absl::string_view platform,
                                           const predictor::AnalyticDeviceParams& prior,
                                           const std::vector<CalibrationSample>& solo,
                                           const HostTrainingOptions& options) {
  DeviceTraining out;
  std::array<int, gbdt::kNumFamilies> counts{};
  for (const CalibrationSample& s : solo) ++counts[static_cast<size_t>(gbdt::FamilyOf(s.config))];
  if (static_cast<int>(solo.size()) < options.min_family_samples) return out;

  const std::string id = DeviceId(platform, prior.name);
  predictor::gbdt::training::OpTable table;
  table.source = absl::StrCat("calibration samples of ", prior.name);
  table.devices = {id};
  std::vector<std::string> groups;
  for (size_t i = 0; i < solo.size(); ++i) {
    predictor::gbdt::training::OpRow row;
    row.group = GroupOf(solo[i]);
    row.config = solo[i].config;
    row.measured[id] = {solo[i].measured_us, solo[i].kernel};
    row.line = static_cast<int>(i) + 1;
    groups.push_back(row.group);
    table.rows.push_back(std::move(row));
  }
  predictor::gbdt::training::TrainingSpec spec;
  spec.device = id;
  spec.gpu = prior.gpu;
  if (prior.gpu) {
    spec.dispatch = kOpenClDispatchScheme;
    spec.schemes = HostSchemes();
  }
  spec.folds = options.folds;
  spec.seed = options.seed;
  spec.source = absl::StrCat("psched calibration on this machine (", solo.size(), " samples)");
  predictor::gbdt::training::TrainingReport report;
  absl::StatusOr<gbdt::DeviceModel> model =
      predictor::gbdt::training::TrainPerOp(table, spec, &report);
  if (!model.ok()) return model.status();
  out.file = gbdt::FormatModelFile(*model);

  // The analytic fit on the same folds (AssignFolds over the same groups and seed).
  const std::map<std::string, int> fold =
      predictor::gbdt::training::AssignFolds(groups, options.folds, options.seed);
  std::array<std::vector<double>, gbdt::kNumFamilies> apes;
  std::vector<double> conv_apes, all_apes;
  const std::vector<std::string> names = {prior.name};
  for (int k = 0; k < options.folds; ++k) {
    CalibrationSamples train;
    std::vector<const CalibrationSample*> test;
    for (const CalibrationSample& s : solo) {
      if (fold.at(GroupOf(s)) == k) {
        test.push_back(&s);
      } else {
        train.samples.push_back(s);
      }
    }
    if (train.samples.empty() || test.empty()) continue;
    calibration::FitOptions fit_options;
    fit_options.seed = options.seed;
    fit_options.holdout_fraction = 0;
    fit_options.priors = {prior};
    absl::StatusOr<calibration::FitResult> fit =
        calibration::FitAnalyticModel(std::string(platform), names, train, fit_options);
    if (!fit.ok()) return fit.status();
    for (const CalibrationSample* s : test) {
      // Samples do not contain the GPU's synchronisation kernel (as in EvaluateErrors).
      const double predicted = fit->model->PredictUs(s->config, 0) - fit->params[0].dispatch_us;
      const double ape = 100.0 * std::abs(predicted - s->measured_us) / s->measured_us;
      const gbdt::OpFamily f = gbdt::FamilyOf(s->config);
      apes[static_cast<size_t>(f)].push_back(ape);
      if (f == gbdt::OpFamily::kConv || f == gbdt::OpFamily::kGroupedConv ||
          f == gbdt::OpFamily::kDepthwiseConv) {
        conv_apes.push_back(ape);
      }
      all_apes.push_back(ape);
    }
  }
  for (gbdt::OpFamily f : gbdt::kAllFamilies) {
    out.use_gbdt[static_cast<size_t>(f)] =
        counts[static_cast<size_t>(f)] >= options.min_family_samples;
  }
  for (const predictor::gbdt::training::FamilyError& e : report.families) {
    FamilyComparison row;
    row.device = prior.name;
    row.family = e.family;
    row.samples = e.rows;
    row.gbdt = {e.rows, e.mape, e.median_ape, e.p90_ape, 0};
    if (const std::optional<gbdt::OpFamily> f = gbdt::FamilyFromName(e.family); f.has_value()) {
      row.analytic = predictor::SummarizeErrors(apes[static_cast<size_t>(*f)]);
      // Where both were held out on the same ops, the one with the lower MAPE predicts: noisy
      // samples (another process preempting a timed run) can pull a GBDT leaf far off where
      // the fit's few shared parameters hold.
      bool& use = out.use_gbdt[static_cast<size_t>(*f)];
      if (row.analytic.count > 0) use = use && row.gbdt.mape <= row.analytic.mape;
      row.used = use ? "gbdt" : "analytic";
    } else {
      row.analytic = predictor::SummarizeErrors(e.family == "all" ? all_apes : conv_apes);
    }
    out.rows.push_back(std::move(row));
  }
  return out;
}

ContentionStats Contention(const std::string& device, const std::vector<CalibrationSample>& solo,
                           const std::vector<CalibrationSample>& co_run,
                           const HostTrainingOptions& options) {
  std::map<std::string, double> alone;
  for (const CalibrationSample& s : solo) alone.emplace(s.source, s.measured_us);
  std::vector<double> ratios;
  for (const CalibrationSample& s : co_run) {
    const auto it = alone.find(s.source);
    if (it != alone.end()) ratios.push_back(s.measured_us / it->second);
  }
  ContentionStats stats;
  stats.device = device;
  stats.pairs = static_cast<int>(ratios.size());
  if (ratios.empty()) return stats;
  std::sort(ratios.begin(), ratios.end());
  const size_t mid = ratios.size() / 2;
  stats.median = ratios.size() % 2 == 1 ? ratios[mid] : 0.5 * (ratios[mid - 1] + ratios[mid]);
  stats.min = ratios.front();
  stats.max = ratios.back();
  if (options.apply_contention && stats.pairs >= options.min_co_run_pairs) {
    stats.factor = stats.median;
  }
  return stats;
}

// The index of the stored device named `name` other than device `self`; devices.size() if none.
size_t OtherDeviceIndex(const json& devices, size_t self, const std::string& name) {
  for (size_t i = 0; i < devices.size(); ++i) {
    if (i != self && devices[i].is_object() && devices[i].value("name", std::string()) == name) {
      return i;
    }
  }
  return devices.size();
}

}  // namespace

absl::StatusOr<HostTraining> TrainHostModel(absl::string_view platform,
                                            const CalibrationSamples& samples,
                                            const HostTrainingOptions& options) {
  if (options.priors.empty()) return absl::InvalidArgumentError("TrainHostModel: no devices");
  if (options.folds < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("TrainHostModel: folds must be >= 2, got ", options.folds));
  }
  std::map<std::string, size_t> index;
  std::vector<std::string> names;
  for (const predictor::AnalyticDeviceParams& p : options.priors) {
    if (!index.emplace(p.name, names.size()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("TrainHostModel: device '", p.name, "' listed twice"));
    }
    names.push_back(p.name);
  }
  std::vector<std::vector<CalibrationSample>> solo(names.size()), co_run(names.size());
  CalibrationSamples all_solo;
  all_solo.platform = samples.platform;
  for (size_t i = 0; i < samples.samples.size(); ++i) {
    const CalibrationSample& s = samples.samples[i];
    const auto it = index.find(s.device);
    if (it == index.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "calibration sample ", i, " (", s.source, ") is for device '", s.device,
          "', which is not one of this platform's devices [", absl::StrJoin(names, ", "), "]"));
    }
    (s.co_running ? co_run : solo)[it->second].push_back(s);
    if (!s.co_running) all_solo.samples.push_back(s);
  }

  calibration::FitOptions fit_options;
  fit_options.seed = options.seed;
  fit_options.holdout_fraction = 0;
  fit_options.priors = options.priors;
  absl::StatusOr<calibration::FitResult> fit =
      calibration::FitAnalyticModel(std::string(platform), names, all_solo, fit_options);
  if (!fit.ok()) return fit.status();

  HostTraining out;
  out.solo_samples = static_cast<int>(all_solo.samples.size());
  out.co_run_samples = static_cast<int>(samples.samples.size() - all_solo.samples.size());
  std::vector<predictor::host_model::HostLatencyModel::Device> devices;
  json stored_devices = json::array();
  for (size_t d = 0; d < names.size(); ++d) {
    const predictor::AnalyticDeviceParams& fitted = fit->params[d];
    absl::StatusOr<DeviceTraining> trained = TrainDevice(platform, fitted, solo[d], options);
    if (!trained.ok()) {
      return absl::Status(
          trained.status().code(),
          absl::StrCat("training the GBDT model of ", names[d], ": ", trained.status().message()));
    }
    out.families.insert(out.families.end(), trained->rows.begin(), trained->rows.end());
    if (trained->file.empty()) {
      out.analytic_only.push_back(
          absl::StrCat(names[d], ": ", solo[d].size(), " samples alone, fewer than ",
                       options.min_family_samples, ": the analytic fit predicts every family"));
    }
    ContentionStats contention = Contention(names[d], solo[d], co_run[d], options);
    predictor::host_model::HostLatencyModel::Device device;
    device.contention = contention.factor;
    out.contention.push_back(contention);
    if (options.anchors) {
      for (const CalibrationSample& s : solo[d])
        device.anchors.push_back({s.config, s.measured_us});
    }
    json families = json::object();
    for (gbdt::OpFamily f : gbdt::kAllFamilies) {
      const bool use = !trained->file.empty() && trained->use_gbdt[static_cast<size_t>(f)];
      device.use_gbdt[static_cast<size_t>(f)] = use;
      families[std::string(gbdt::FamilyName(f))] = use ? "gbdt" : "analytic";
    }
    json stored = {{"name", names[d]},
                   {"gpu", fitted.gpu},
                   {"contention", device.contention},
                   {"families", std::move(families)}};
    if (!trained->file.empty()) {
      absl::StatusOr<std::shared_ptr<const gbdt::GbdtLatencyModel>> model =
          LoadDeviceModel(platform, fitted, trained->file);
      if (!model.ok()) return model.status();
      device.gbdt = std::move(*model);
      stored["gbdt"] = {{"file", trained->file}, {"sha256", gbdt::ModelFileHash(trained->file)}};
    }
    devices.push_back(std::move(device));
    stored_devices.push_back(std::move(stored));
  }
  absl::StatusOr<std::unique_ptr<predictor::host_model::HostLatencyModel>> model =
      predictor::host_model::HostLatencyModel::Create(fit->model, std::move(devices));
  if (!model.ok()) return model.status();
  out.model = std::move(*model);
  for (size_t d = 0; d < names.size(); ++d) {
    const std::span<const predictor::host_model::Anchor> anchors =
        out.model->anchors(static_cast<int>(d));
    if (!anchors.empty())
      stored_devices[d]["anchors"] = predictor::host_model::AnchorsToJson(anchors);
  }
  out.params = {{"format", kHostCalibrationFormat},
                {"platform", std::string(platform)},
                {"model_version", out.model->Version()},
                {"analytic",
                 predictor::host_model::AnalyticParamsToJson({std::string(platform), fit->params})},
                {"devices", std::move(stored_devices)}};
  return out;
}

absl::StatusOr<LoadedHostModel> HostModelFromJson(const json& params) {
  LoadedHostModel out;
  if (!params.is_object() || !params.contains("format")) {
    // Analytic parameters as stored before GBDT training.
    absl::StatusOr<predictor::host_model::AnalyticParams> analytic =
        predictor::host_model::AnalyticParamsFromJson(params);
    if (!analytic.ok()) return analytic.status();
    for (const predictor::AnalyticDeviceParams& d : analytic->devices) {
      out.device_names.push_back(d.name);
    }
    out.model = analytic->MakeModel();
    return out;
  }
  if (params["format"] != kHostCalibrationFormat) {
    return absl::InvalidArgumentError(absl::StrCat("host calibration: unknown format ",
                                                   params["format"].dump(), ", expected '",
                                                   kHostCalibrationFormat, "'"));
  }
  absl::StatusOr<predictor::host_model::AnalyticParams> analytic =
      predictor::host_model::AnalyticParamsFromJson(params.value("analytic", json()));
  if (!analytic.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("host calibration 'analytic': ", analytic.status().message()));
  }
  const json devices = params.value("devices", json());
  if (!devices.is_array() || devices.size() != analytic->devices.size()) {
    return absl::InvalidArgumentError(absl::StrCat("host calibration: 'devices' must list the ",
                                                   analytic->devices.size(),
                                                   " devices of 'analytic'"));
  }
  std::vector<predictor::host_model::HostLatencyModel::Device> parts;
  for (size_t d = 0; d < devices.size(); ++d) {
    const json& stored = devices[d];
    const predictor::AnalyticDeviceParams& fitted = analytic->devices[d];
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrCat("host calibration device ", d, " ('", fitted.name, "'): ", why));
    };
    if (!stored.is_object() || stored.value("name", std::string()) != fitted.name) {
      return bad("'name' missing or not the analytic fit's device of the same index");
    }
    predictor::host_model::HostLatencyModel::Device part;
    // Each number with its value when absent (calibrations stored before it).
    for (const auto& [key, field, absent] :
         {std::tuple{"contention", &part.contention, 1.0}, std::tuple{"in_run", &part.in_run, 1.0},
          std::tuple{"co_run", &part.co_run, 1.0},
          std::tuple{"partial_sum_ns", &part.partial_sum_ns, 0.0},
          std::tuple{"gap_us", &part.gap_us, 0.0},
          std::tuple{"synced_gap_us", &part.synced_gap_us, 0.0}}) {
      const json value = stored.value(key, json(absent));
      if (!value.is_number()) return bad(absl::StrCat("'", key, "' is not a number"));
      *field = value.get<double>();
    }
    if (const auto sync = stored.find("sync_us"); sync != stored.end()) {
      if (!sync->is_object()) return bad("'sync_us' is not an object of device names");
      part.sync_us.assign(devices.size(), 0.0);
      for (const auto& [to, us] : sync->items()) {
        const size_t index = OtherDeviceIndex(devices, d, to);
        if (index == devices.size()) {
          return bad(absl::StrCat("'sync_us' names '", to, "', not another device"));
        }
        if (!us.is_number()) return bad(absl::StrCat("'sync_us' to '", to, "' is not a number"));
        part.sync_us[index] = us.get<double>();
      }
    }
    if (const auto h = stored.find("hand_off"); h != stored.end()) {
      if (!h->is_object()) return bad("'hand_off' is not an object of device names");
      // A pair it does not name costs its sync cost whatever the wait.
      part.hand_off.assign(devices.size(), {});
      for (size_t i = 0; i < part.sync_us.size(); ++i) {
        part.hand_off[i].spinning_us = part.hand_off[i].parked_us = part.sync_us[i];
      }
      for (const auto& [to, costs] : h->items()) {
        const size_t index = OtherDeviceIndex(devices, d, to);
        if (index == devices.size()) {
          return bad(absl::StrCat("'hand_off' names '", to, "', not another device"));
        }
        predictor::host_model::HostLatencyModel::Device::HandOff& hand_off = part.hand_off[index];
        const std::pair<const char*, double*> fields[] = {{"window_us", &hand_off.window_us},
                                                          {"spinning_us", &hand_off.spinning_us},
                                                          {"parked_us", &hand_off.parked_us}};
        for (const auto& [key, value] : fields) {
          if (!costs.is_object() || !costs.contains(key) || !costs[key].is_number()) {
            return bad(absl::StrCat("'hand_off' to '", to, "' needs the number '", key, "'"));
          }
          *value = costs[key].get<double>();
        }
      }
    }
    if (const auto g = stored.find("gbdt"); g != stored.end()) {
      if (!g->is_object() || !g->value("file", json()).is_string() ||
          !g->value("sha256", json()).is_string()) {
        return bad("'gbdt' needs the strings 'file' and 'sha256'");
      }
      const std::string text = (*g)["file"].get<std::string>();
      const std::string hash = gbdt::ModelFileHash(text);
      if (hash != (*g)["sha256"].get<std::string>()) {
        return absl::DataLossError(absl::StrCat(
            ModelSource(fitted.name), ": the stored GBDT model is damaged: its SHA-256 is ", hash,
            ", the calibration recorded ", (*g)["sha256"].get<std::string>()));
      }
      absl::StatusOr<std::shared_ptr<const gbdt::GbdtLatencyModel>> model =
          LoadDeviceModel(analytic->platform, fitted, text);
      if (!model.ok()) return model.status();
      part.gbdt = std::move(*model);
    }
    if (const auto a = stored.find("anchors"); a != stored.end()) {
      absl::StatusOr<std::vector<predictor::host_model::Anchor>> anchors =
          predictor::host_model::AnchorsFromJson(
              *a, absl::StrCat("host calibration device ", d, " ('", fitted.name, "')"));
      if (!anchors.ok()) return anchors.status();
      part.anchors = *std::move(anchors);
    }
    const json families = stored.value("families", json::object());
    if (!families.is_object()) return bad("'families' is not an object");
    for (const auto& [name, used] : families.items()) {
      const std::optional<gbdt::OpFamily> f = gbdt::FamilyFromName(name);
      if (!f.has_value()) return bad(absl::StrCat("unknown op family '", name, "'"));
      if (used != "gbdt" && used != "analytic") {
        return bad(absl::StrCat("family '", name, "' must be \"gbdt\" or \"analytic\""));
      }
      part.use_gbdt[static_cast<size_t>(*f)] = used == "gbdt";
    }
    out.device_names.push_back(fitted.name);
    parts.push_back(std::move(part));
  }
  const json run_overhead = params.value("run_overhead_us", json(0.0));
  if (!run_overhead.is_number() || !std::isfinite(run_overhead.get<double>()) ||
      run_overhead.get<double>() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "host calibration: 'run_overhead_us' must be a number of microseconds >= 0, not ",
        run_overhead.dump()));
  }
  absl::StatusOr<std::unique_ptr<predictor::host_model::HostLatencyModel>> model =
      predictor::host_model::HostLatencyModel::Create(analytic->MakeModel(), std::move(parts),
                                                      run_overhead.get<double>());
  if (!model.ok()) return model.status();
  out.model = std::move(*model);
  return out;
}

absl::Status ApplyRunCosts(const RunCosts& costs, HostTraining& training) {
  json params = training.params;
  json& devices = params["devices"];
  auto find = [&](const std::string& name) -> json* {
    for (json& d : devices) {
      if (d.value("name", std::string()) == name) return &d;
    }
    return nullptr;
  };
  for (const RunCosts::InRun& r : costs.in_run) {
    json* device = find(r.device);
    if (device == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("run costs: in-run factor for device '",
                                                     r.device,
                                                     "', which the calibration does not have"));
    }
    (*device)["in_run"] = r.factor;
    if (r.co_run_factor != 1.0) (*device)["co_run"] = r.co_run_factor;
    if (r.partial_sum_ns > 0) (*device)["partial_sum_ns"] = r.partial_sum_ns;
    if (r.gap_us > 0) (*device)["gap_us"] = r.gap_us;
    if (r.synced_gap_us > 0) (*device)["synced_gap_us"] = r.synced_gap_us;
  }
  for (const RunCosts::Sync& s : costs.sync) {
    json* from = find(s.from);
    if (from == nullptr || find(s.to) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("run costs: sync from '", s.from, "' to '",
                                                     s.to,
                                                     "', a device the calibration does not have"));
    }
    (*from)["sync_us"][s.to] = s.us;
    if (s.window_us > 0) {
      (*from)["hand_off"][s.to] = {
          {"window_us", s.window_us}, {"spinning_us", s.spinning_us}, {"parked_us", s.parked_us}};
    }
  }
  params["run_overhead_us"] = costs.PerRunUs();
  absl::StatusOr<LoadedHostModel> loaded = HostModelFromJson(params);
  if (!loaded.ok()) return loaded.status();
  auto model =
      std::dynamic_pointer_cast<const predictor::host_model::HostLatencyModel>(loaded->model);
  if (model == nullptr)
    return absl::InternalError("run costs: the rebuilt model is not a host model");
  params["model_version"] = model->Version();
  training.model = std::move(model);
  training.params = std::move(params);
  training.run_costs = costs;
  return absl::OkStatus();
}

std::string FormatHostTraining(const HostTraining& training) {
  std::string out =
      absl::StrFormat("%-8s %-18s %5s %11s %11s %15s %15s  %s\n", "device", "family", "n",
                      "GBDT MAPE %", "fit MAPE %", "GBDT median %", "fit median %", "predicted by");
  for (const FamilyComparison& r : training.families) {
    absl::StrAppendFormat(&out, "%-8s %-18s %5d %11.1f %11.1f %15.1f %15.1f  %s\n", r.device,
                          r.family, r.samples, r.gbdt.mape, r.analytic.mape, r.gbdt.median,
                          r.analytic.median, r.used);
  }
  for (const std::string& line : training.analytic_only) absl::StrAppend(&out, line, "\n");
  out += "co-run slowdown (co-run / alone, other devices busy):\n";
  for (const ContentionStats& c : training.contention) {
    if (c.pairs == 0) {
      absl::StrAppendFormat(&out, "%-8s no co-run samples, factor 1\n", c.device);
      continue;
    }
    absl::StrAppendFormat(&out, "%-8s %4d cases  median %.2fx  range %.2f-%.2fx  factor %.2f\n",
                          c.device, c.pairs, c.median, c.min, c.max, c.factor);
  }
  for (int d = 0; training.model != nullptr && d < training.model->num_devices(); ++d) {
    const size_t n = training.model->anchors(d).size();
    if (n == 0) continue;
    absl::StrAppendFormat(&out,
                          "%-8s %5zu timed configurations anchor their own and their cuts' "
                          "predictions\n",
                          training.model->analytic().device(d).name, n);
  }
  if (training.run_costs.has_value()) out += FormatRunCosts(*training.run_costs);
  return out;
}

json HostTrainingReportToJson(const HostTraining& training) {
  json families = json::array();
  for (const FamilyComparison& r : training.families) {
    families.push_back({{"device", r.device},
                        {"family", r.family},
                        {"count", r.samples},
                        {"gbdt_mape_pct", r.gbdt.mape},
                        {"gbdt_median_ape_pct", r.gbdt.median},
                        {"analytic_mape_pct", r.analytic.mape},
                        {"analytic_median_ape_pct", r.analytic.median},
                        {"predicted_by", r.used}});
  }
  json contention = json::array();
  for (const ContentionStats& c : training.contention) {
    contention.push_back({{"device", c.device},
                          {"pairs", c.pairs},
                          {"median_slowdown", c.median},
                          {"min_slowdown", c.min},
                          {"max_slowdown", c.max},
                          {"factor", c.factor}});
  }
  json report = {
      {"solo_samples", training.solo_samples}, {"co_run_samples", training.co_run_samples},
      {"heldout", "grouped k-fold by model"},  {"analytic_only", training.analytic_only},
      {"families", std::move(families)},       {"contention", std::move(contention)}};
  if (training.run_costs.has_value()) report["run_costs"] = RunCostsToJson(*training.run_costs);
  return report;
}

}  // namespace psched::calibration
