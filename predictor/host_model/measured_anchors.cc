#include "predictor/host_model/measured_anchors.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "model/model_hash.h"
#include "predictor/error_summary.h"
#include "predictor/host_model/calibration_samples.h"

namespace psched::predictor::host_model {
namespace {

enum class Axis : int64_t { kChannels = 0, kRows = 1 };

// Output channels decide the input channels of every kind but a dense conv and a fully
// connected op, whose inputs a cut along the output leaves whole.
bool InputChannelsFollowOutput(const OpConfig& c) {
  const bool dense = (c.kind == model::OpKind::kConv2d && c.groups == 1) ||
                     c.kind == model::OpKind::kFullyConnected;
  return !dense;
}

// The configuration's fields with the axis' extents masked (-1), and the extent itself.
std::pair<std::vector<int64_t>, int64_t> GroupOf(const OpConfig& c, Axis axis) {
  constexpr int64_t kMasked = -1;
  int64_t extent = 0;
  model::Shape out = c.output;
  std::vector<model::Shape> in = c.inputs;
  model::Window2d window = c.window;
  if (axis == Axis::kRows) {
    extent = out.h;
    out.h = kMasked;
    for (model::Shape& s : in) s.h = kMasked;
    window.pad_bottom = kMasked;
  } else if (c.accumulate && !in.empty()) {
    extent = in[0].c;
    in[0].c = kMasked;
  } else {
    extent = out.c;
    out.c = kMasked;
    if (InputChannelsFollowOutput(c)) {
      for (model::Shape& s : in) s.c = kMasked;
    }
  }
  std::vector<int64_t> key = {static_cast<int64_t>(axis),
                              static_cast<int64_t>(c.kind),
                              static_cast<int64_t>(c.activation),
                              c.accumulate ? 1 : 0,
                              c.output_pixel_stride,
                              c.groups,
                              out.h,
                              out.w,
                              out.c,
                              window.kernel_h,
                              window.kernel_w,
                              window.stride_h,
                              window.stride_w,
                              window.dilation_h,
                              window.dilation_w,
                              window.pad_top,
                              window.pad_left,
                              window.pad_bottom,
                              window.pad_right};
  for (const model::Shape& s : in) key.insert(key.end(), {s.h, s.w, s.c});
  return {std::move(key), extent};
}

}  // namespace

MeasuredAnchors MeasuredAnchors::Build(std::span<const Anchor> anchors, BaseFn base) {
  // One anchor per configuration (the median of its times), ordered by its JSON so the stored
  // form and the digest do not depend on the samples' order.
  std::map<std::string, std::pair<OpConfig, std::vector<double>>> distinct;
  for (const Anchor& a : anchors) {
    auto& [config, times] = distinct[OpConfigToJson(a.config).dump()];
    config = a.config;
    times.push_back(a.measured_us);
  }
  MeasuredAnchors result;
  result.base_ = std::move(base);
  std::string digested;
  for (auto& [key, entry] : distinct) {
    const double us = Median(std::move(entry.second));
    result.anchors_.push_back({entry.first, us});
    absl::StrAppend(&digested, key, "=", absl::StrFormat("%.17g", us), ";");
  }
  result.digest_ = model::ModelHash(digested);
  for (const Anchor& a : result.anchors_) {
    const double rho = a.measured_us / result.base_(a.config);
    for (Axis axis : {Axis::kChannels, Axis::kRows}) {
      auto [key, extent] = GroupOf(a.config, axis);
      result.groups_[std::move(key)].push_back({extent, rho});
    }
  }
  for (auto& [key, points] : result.groups_) {
    std::sort(points.begin(), points.end(),
              [](const Point& a, const Point& b) { return a.extent < b.extent; });
  }
  return result;
}

std::optional<double> MeasuredAnchors::PredictUs(const OpConfig& config) const {
  double best_distance = 0;
  std::optional<double> best_rho;
  for (Axis axis : {Axis::kChannels, Axis::kRows}) {
    const auto [key, extent] = GroupOf(config, axis);
    const auto it = groups_.find(key);
    if (it == groups_.end()) continue;
    const std::vector<Point>& points = it->second;
    const auto above = std::lower_bound(points.begin(), points.end(), extent,
                                        [](const Point& p, int64_t e) { return p.extent < e; });
    double rho = 0, distance = 0;
    if (above != points.end() && above->extent == extent) {
      rho = above->rho;
    } else if (above == points.end()) {
      const Point& below = points.back();
      rho = below.rho;
      distance = std::log(static_cast<double>(extent) / below.extent);
    } else if (above == points.begin()) {
      rho = above->rho;
      distance = std::log(static_cast<double>(above->extent) / extent);
    } else {
      const Point& below = *(above - 1);
      const double t = static_cast<double>(extent - below.extent) / (above->extent - below.extent);
      rho = below.rho + t * (above->rho - below.rho);
      distance = std::min(std::log(static_cast<double>(extent) / below.extent),
                          std::log(static_cast<double>(above->extent) / extent));
    }
    if (!best_rho || distance < best_distance) {
      best_rho = rho;
      best_distance = distance;
    }
  }
  if (!best_rho) return std::nullopt;
  return *best_rho * base_(config);
}

nlohmann::json AnchorsToJson(std::span<const Anchor> anchors) {
  nlohmann::json out = nlohmann::json::array();
  for (const Anchor& a : anchors) {
    out.push_back({{"config", OpConfigToJson(a.config)}, {"us", a.measured_us}});
  }
  return out;
}

absl::StatusOr<std::vector<Anchor>> AnchorsFromJson(const nlohmann::json& json,
                                                    absl::string_view where) {
  if (!json.is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": 'anchors' must be an array of {config, us}"));
  }
  std::vector<Anchor> anchors;
  anchors.reserve(json.size());
  for (size_t i = 0; i < json.size(); ++i) {
    const nlohmann::json& entry = json[i];
    const auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": anchor ", i, ": ", why));
    };
    if (!entry.is_object() || !entry.contains("config") || !entry.contains("us")) {
      return bad("expected {\"config\": ..., \"us\": ...}");
    }
    const nlohmann::json& us = entry["us"];
    if (!us.is_number() || !std::isfinite(us.get<double>()) || us.get<double>() <= 0) {
      return bad(absl::StrCat("'us' must be a time > 0, not ", us.dump()));
    }
    absl::StatusOr<OpConfig> config = OpConfigFromJson(entry["config"]);
    if (!config.ok()) return bad(config.status().message());
    anchors.push_back({*std::move(config), us.get<double>()});
  }
  return anchors;
}

}  // namespace psched::predictor::host_model
