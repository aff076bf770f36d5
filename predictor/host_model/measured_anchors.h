// predictor::host_model::MeasuredAnchors: what calibration timed on one device, used to
// predict the configurations it timed and the cuts of the same ops that it did not.
//
// Why: a GBDT model predicts a cut it never saw from its neighbours in feature space, and a
// planner choosing among dozens of cuts of an op picks the ones the model under-predicts most.
// An example traced on PoCL: hrnet's 3x3 conv 512->1024 on 7x7 pixels, 144 of its output
// channels predicted 3.0 ms and measured 5.8, while calibration had timed 256 of them at 9.4
// ms. The case list times every op of the registered models whole and cut at a quarter, a half
// and three quarters along each axis, so for those ops the measurements bound every cut.
//
// An anchor group is one op's configurations along one axis: those that differ only in the
// extent the axis cuts - output channels (input channels too where they follow the output's:
// depthwise and grouped convs, pooling, element-wise ops), input channels of an input-channel
// partial sum (`accumulate`), or output rows with the input rows and bottom padding that
// follow. A configuration in a group with anchors is predicted as base(config) x rho, where
// base is a smooth model of the device (the analytic fit: linear in the work) and rho =
// measured / base, interpolated linearly in the extent between the nearest anchors below and
// above it (the nearest one's rho beyond the last). Of a configuration's two groups the one
// with the nearer anchor (in relative extent) predicts it; a timed configuration is its own
// anchor. Configurations of ops calibration never timed are not predicted here (nullopt).
//
// Immutable after Build; thread-safe.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "predictor/op_config.h"

namespace psched::predictor::host_model {

struct Anchor {
  OpConfig config;
  double measured_us = 0;  // finite, > 0
};

class MeasuredAnchors {
 public:
  // A smooth model of the device: microseconds > 0 for any configuration.
  using BaseFn = std::function<double(const OpConfig&)>;

  // Several anchors of one configuration count as their median.
  // REQUIRES: every measured_us finite and > 0; base non-null.
  static MeasuredAnchors Build(std::span<const Anchor> anchors, BaseFn base);

  // nullopt when no anchor shares a group with `config`.
  std::optional<double> PredictUs(const OpConfig& config) const;

  // The distinct configurations with their (median) times, in a fixed order: what is stored.
  const std::vector<Anchor>& anchors() const { return anchors_; }
  // Lowercase hex SHA-256 over the stored anchors; part of the host model's version.
  const std::string& digest() const { return digest_; }

 private:
  // The fields of a configuration with the axis' extents masked, and which axis.
  using GroupKey = std::vector<int64_t>;
  struct Point {
    int64_t extent;
    double rho;  // measured / base
  };
  // key -> points sorted by extent (one per extent)
  using Groups = std::map<GroupKey, std::vector<Point>>;

  MeasuredAnchors() = default;

  std::vector<Anchor> anchors_;
  std::string digest_;
  Groups groups_;
  BaseFn base_;
};

// [{"config": OpConfigToJson, "us": x}, ...] in the given order.
nlohmann::json AnchorsToJson(std::span<const Anchor> anchors);
// InvalidArgument naming `where` and the entry's index for a malformed entry or a time that is
// not finite and > 0.
absl::StatusOr<std::vector<Anchor>> AnchorsFromJson(const nlohmann::json& json,
                                                    absl::string_view where);

}  // namespace psched::predictor::host_model
