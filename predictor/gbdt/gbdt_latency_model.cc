#include "predictor/gbdt/gbdt_latency_model.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "predictor/gbdt/baseline_roofline.h"

namespace psched::predictor::gbdt {

absl::StatusOr<std::unique_ptr<GbdtLatencyModel>> GbdtLatencyModel::Create(
    std::string platform, std::vector<DeviceSource> devices, const DispatchSchemes& schemes) {
  auto model = std::unique_ptr<GbdtLatencyModel>(new GbdtLatencyModel());
  std::string identity;
  std::vector<AnalyticDeviceParams> rooflines;
  for (DeviceSource& source : devices) {
    if (!(std::isfinite(source.extra_us) && source.extra_us >= 0)) {
      return absl::InvalidArgumentError(absl::StrCat("device '", source.name, "': extra_us ",
                                                     source.extra_us, " must be finite and >= 0"));
    }
    ModelExpectation expect;
    expect.device = source.expected_device;
    expect.gpu = source.gpu;
    expect.known_scheme = [&](absl::string_view name) {
      return BuiltinDispatchScheme(name).has_value() || schemes.find(name) != schemes.end();
    };
    expect.for_what = absl::StrCat("platform '", platform, "' device '", source.name, "'");
    absl::StatusOr<DeviceModel> parsed = ParseModelFile(source.text, source.source, expect);
    if (!parsed.ok()) return parsed.status();
    Device device;
    if (parsed->gpu) {
      auto it = schemes.find(parsed->dispatch);
      device.scheme = it != schemes.end() ? it->second : *BuiltinDispatchScheme(parsed->dispatch);
    }
    device.model = *std::move(parsed);
    device.extra_us = source.extra_us;
    for (OpFamily f : kAllFamilies) {
      const auto i = static_cast<size_t>(f);
      if (device.model.For(f) == nullptr) {
        device.families[i] = Resolved{f, false, true};
        continue;
      }
      const OpFamily layout = device.model.families[i].has_value() ? f : *device.model.fallback[i];
      device.families[i] = Resolved{layout, device.model.gpu && HasDispatchFeatures(layout), false};
    }
    rooflines.push_back(RooflineFromBaselines(device.model, source.name));
    absl::StrAppend(&identity, source.name, "=", ModelFileHash(source.text), "+", source.extra_us,
                    ";");
    model->devices_.push_back(std::move(device));
  }
  model->roofline_ = std::make_shared<AnalyticModel>(absl::StrCat(platform, "+baselines"),
                                                     std::move(rooflines));
  model->version_ = absl::StrCat("gbdt-v2/", platform, "/", ModelFileHash(identity).substr(0, 16));
  return model;
}

double GbdtLatencyModel::PredictUs(const OpConfig& config, int device_index) const {
  double out = 0;
  PredictBatch(std::span<const OpConfig>(&config, 1), device_index, std::span<double>(&out, 1));
  return out;
}

void GbdtLatencyModel::PredictBatch(std::span<const OpConfig> configs, int device_index,
                                    std::span<double> out) const {
  const Device& device = devices_[static_cast<size_t>(device_index)];
  std::vector<float> features;
  std::vector<double> margins;
  size_t begin = 0;
  while (begin < configs.size()) {
    // A run of configs predicted by the same family model.
    const OpFamily family = FamilyOf(configs[begin]);
    size_t end = begin + 1;
    while (end < configs.size() && FamilyOf(configs[end]) == family) ++end;
    const Resolved& r = device.families[static_cast<size_t>(family)];
    if (r.roofline) {
      for (size_t i = begin; i < end; ++i) {
        out[i] = roofline_->PredictUs(configs[i], device_index) + device.extra_us;
      }
      begin = end;
      continue;
    }
    const FamilyModel& model = *device.model.families[static_cast<size_t>(r.model)];
    const size_t width = FeatureNames(r.model, r.dispatch).size();
    const size_t rows = end - begin;
    features.resize(rows * width);
    for (size_t i = 0; i < rows; ++i) {
      DispatchFeatures dispatch;
      if (r.dispatch) dispatch = device.scheme(configs[begin + i]);
      ExtractFeatures(configs[begin + i], r.model, r.dispatch ? &dispatch : nullptr,
                      std::span<float>(features.data() + i * width, width));
    }
    margins.resize(rows);
    if (rows == 1) {
      margins[0] = model.trees.Predict(std::span<const float>(features.data(), width));
    } else {
      model.trees.PredictBatch(features, width, margins);
    }
    for (size_t i = 0; i < rows; ++i) {
      const double base = model.baseline.Us(BaselineTermsOf(configs[begin + i]));
      out[begin + i] = base * std::exp(margins[i]) + device.extra_us;
    }
    begin = end;
  }
}

bool GbdtLatencyModel::PredictsWithFallback(const OpConfig& config, int device_index) const {
  return devices_[static_cast<size_t>(device_index)]
      .families[static_cast<size_t>(FamilyOf(config))]
      .roofline;
}

}  // namespace psched::predictor::gbdt
