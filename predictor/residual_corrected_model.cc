#include "predictor/residual_corrected_model.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "model/model_hash.h"
#include "predictor/error_summary.h"

namespace psched::predictor {
namespace {

double Clamp(double factor) {
  return std::clamp(factor, 1 / ResidualCorrectedModel::kMaxFactor,
                    ResidualCorrectedModel::kMaxFactor);
}

bool Usable(double us) { return std::isfinite(us) && us > 0; }

// Geometric means of factors grouped by `group`.
template <typename Key>
std::map<Key, double> GeometricMeans(const std::vector<std::pair<Key, double>>& factors) {
  std::map<Key, std::pair<double, int>> sums;
  for (const auto& [key, factor] : factors) {
    auto& [log_sum, count] = sums[key];
    log_sum += std::log(factor);
    ++count;
  }
  std::map<Key, double> means;
  for (const auto& [key, sum] : sums) means[key] = std::exp(sum.first / sum.second);
  return means;
}

}  // namespace

ResidualCorrectedModel::ConfigKey ResidualCorrectedModel::KeyOf(const OpConfig& config,
                                                                int device_index) {
  return {
      static_cast<int>(config.kind), config.flops, config.bytes, config.groups, config.accumulate,
      config.output_pixel_stride,    device_index};
}

absl::StatusOr<std::shared_ptr<const ResidualCorrectedModel>> ResidualCorrectedModel::Make(
    std::shared_ptr<const LatencyModel> inner, const ResidualCorrectedModel* previous,
    std::span<const ResidualSample> samples) {
  if (previous != nullptr && previous->inner_->Version() != inner->Version()) {
    return absl::InvalidArgumentError(absl::StrCat("the correction to refine is of model ",
                                                   previous->inner_->Version(), ", not of ",
                                                   inner->Version()));
  }
  std::map<ConfigKey, std::vector<double>> ratios;
  std::map<ConfigKey, const OpConfig*> configs;
  for (const ResidualSample& sample : samples) {
    if (sample.device < 0 || sample.device >= inner->num_devices() || !Usable(sample.measured_us) ||
        !Usable(sample.predicted_us)) {
      continue;
    }
    const ConfigKey key = KeyOf(sample.config, sample.device);
    ratios[key].push_back(sample.measured_us / sample.predicted_us);
    configs[key] = &sample.config;
  }
  if (ratios.empty()) {
    return absl::InvalidArgumentError(
        "no usable measurement to correct the latency model with (every sample had an unknown "
        "device or a non-positive time)");
  }
  std::map<ConfigKey, double> exact =
      previous != nullptr ? previous->exact_ : std::map<ConfigKey, double>{};
  for (const auto& [key, values] : ratios) {
    const double before =
        previous != nullptr
            ? previous->Factor(*configs[key], std::get<std::tuple_size_v<ConfigKey> - 1>(key))
            : 1.0;
    exact[key] = Clamp(before * Median(values));
  }
  return std::shared_ptr<const ResidualCorrectedModel>(
      new ResidualCorrectedModel(std::move(inner), std::move(exact)));
}

ResidualCorrectedModel::ResidualCorrectedModel(std::shared_ptr<const LatencyModel> inner,
                                               std::map<ConfigKey, double> exact)
    : inner_(std::move(inner)), exact_(std::move(exact)) {
  std::vector<std::pair<std::pair<int, int>, double>> kind_factors;
  std::vector<std::pair<int, double>> device_factors;
  std::string text;
  for (const auto& [key, factor] : exact_) {
    const auto& [kind, flops, bytes, groups, accumulate, stride, device] = key;
    kind_factors.push_back({{kind, device}, factor});
    device_factors.push_back({device, factor});
    absl::StrAppendFormat(&text, "%d,%.17g,%.17g,%d,%d,", kind, flops, bytes, groups,
                          accumulate ? 1 : 0);
    if (stride != 0) absl::StrAppendFormat(&text, "s%d,", stride);
    absl::StrAppendFormat(&text, "%d=%.17g;", device, factor);
  }
  by_kind_ = GeometricMeans(kind_factors);
  by_device_.assign(static_cast<size_t>(inner_->num_devices()), 1.0);
  for (const auto& [device, factor] : GeometricMeans(device_factors)) {
    by_device_[static_cast<size_t>(device)] = factor;
  }
  version_ = absl::StrCat(inner_->Version(), ";residuals=", model::ModelHash(text).substr(0, 16));
}

double ResidualCorrectedModel::Factor(const OpConfig& config, int device_index) const {
  if (auto it = exact_.find(KeyOf(config, device_index)); it != exact_.end()) return it->second;
  if (auto it = by_kind_.find({static_cast<int>(config.kind), device_index});
      it != by_kind_.end()) {
    return it->second;
  }
  return by_device_[static_cast<size_t>(device_index)];
}

double ResidualCorrectedModel::PredictUs(const OpConfig& config, int device_index) const {
  return inner_->PredictUs(config, device_index) * Factor(config, device_index);
}

void ResidualCorrectedModel::PredictBatch(std::span<const OpConfig> configs, int device_index,
                                          std::span<double> out) const {
  inner_->PredictBatch(configs, device_index, out);
  for (size_t i = 0; i < configs.size(); ++i) out[i] *= Factor(configs[i], device_index);
}

}  // namespace psched::predictor
