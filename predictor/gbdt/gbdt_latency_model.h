// A LatencyModel backed by GBDT model files, one per platform device (paper sec. 5.4).
//
// A prediction is baseline(config) * exp(margin) + extra_us: the family's linear baseline in
// FLOPs and bytes, scaled by the trees' log-space correction (features.h), plus a constant
// per-subtask cost of the device that the measurements do not contain (the GPU's
// synchronisation kernel, paper sec. 2.1). GPU models compute dispatch features with the
// scheme their file names; the phone schemes are built in, others (the host OpenCL
// backend's) are passed to Create.
//
// A family a device's file has no model for (the transformer families in a file that predates
// them, features.h) is predicted by the roofline its own baselines imply
// (baseline_roofline.h), plus extra_us; PredictsWithFallback says so.
//
// A model set is the list of device files; a host-trained set is just another one. Version()
// is "gbdt-v2/<platform>/<hash>", the hash covering every file's SHA-256, its device name and
// extra_us, so retraining any file changes every plan-cache key that used it.
//
// Immutable after Create; all methods are thread-safe.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "predictor/analytic_model.h"
#include "predictor/gbdt/model_file.h"
#include "predictor/latency_model.h"

namespace psched::predictor::gbdt {

// Dispatch schemes beyond the built-in ones, by the name model files use.
using DispatchSchemes = std::map<std::string, DispatchFn, std::less<>>;

class GbdtLatencyModel final : public LatencyModel {
 public:
  struct DeviceSource {
    std::string name;    // the platform's device name, e.g. "cpu.l"
    std::string source;  // where `text` came from, for errors: a path or "embedded:..."
    std::string text;    // the model file
    // The device id the file must have been trained for ("pixel4/cpu.l"); empty: any.
    std::string expected_device;
    bool gpu = false;     // the platform device's kind; the file's must match
    double extra_us = 0;  // added to every prediction on this device
  };

  // Parses and checks every file. InvalidArgument naming the file (and line) when one is
  // malformed, was trained for another device or device kind, or names an unknown dispatch
  // scheme; also for a negative or non-finite extra_us.
  static absl::StatusOr<std::unique_ptr<GbdtLatencyModel>> Create(
      std::string platform, std::vector<DeviceSource> devices, const DispatchSchemes& schemes = {});

  int num_devices() const override { return static_cast<int>(devices_.size()); }
  double PredictUs(const OpConfig& config, int device_index) const override;
  void PredictBatch(std::span<const OpConfig> configs, int device_index,
                    std::span<double> out) const override;
  bool PredictsWithFallback(const OpConfig& config, int device_index) const override;
  std::string Version() const override { return version_; }

  const DeviceModel& device_model(int index) const {
    return devices_[static_cast<size_t>(index)].model;
  }

 private:
  // The family model that predicts a family: its own, or its fallback's.
  struct Resolved {
    OpFamily model = OpFamily::kConv;  // index into DeviceModel::families; also the layout
    bool dispatch = false;             // whether its features include dispatch features
    bool roofline = false;             // no model: `roofline_` predicts the family
  };
  struct Device {
    DeviceModel model;
    DispatchFn scheme = nullptr;
    double extra_us = 0;
    std::array<Resolved, kNumFamilies> families;
  };
  GbdtLatencyModel() = default;

  std::vector<Device> devices_;
  // Device i's roofline from its file's baselines; predicts the families a file lacks.
  std::shared_ptr<const AnalyticModel> roofline_;
  std::string version_;
};

}  // namespace psched::predictor::gbdt
