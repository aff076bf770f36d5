// DeviceSubsetModel: some devices of a larger latency model, as a model of their own. A host
// calibration covers every device the host has (cpu.0, cpu.1, gpu, ...); a platform made of a
// few of them plans with this view, whose device i is the base model's device `devices[i]`.
//
// Version() is the base's plus the chosen indices, so plans for different subsets of one
// calibration get different cache keys. Immutable; thread-safe.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "predictor/latency_model.h"

namespace psched::predictor {

class DeviceSubsetModel final : public LatencyModel {
 public:
  // InvalidArgument when `devices` is empty or names an index outside the base model.
  static absl::StatusOr<std::unique_ptr<DeviceSubsetModel>> Create(
      std::shared_ptr<const LatencyModel> base, std::vector<int> devices);

  int num_devices() const override { return static_cast<int>(devices_.size()); }
  double PredictUs(const OpConfig& config, int device_index) const override;
  void PredictBatch(std::span<const OpConfig> configs, int device_index,
                    std::span<double> out) const override;
  double SyncUs(int from_device, int to_device) const override;
  double HandOffUs(int from_device, int to_device, double idle_us) const override;
  double CoRunFactor(int device) const override {
    return base_->CoRunFactor(devices_[static_cast<size_t>(device)]);
  }
  double PartialSumNs(int device) const override {
    return base_->PartialSumNs(devices_[static_cast<size_t>(device)]);
  }
  double SubtaskGapUs(int device, bool synced) const override {
    return base_->SubtaskGapUs(devices_[static_cast<size_t>(device)], synced);
  }
  double RunOverheadUs() const override { return base_->RunOverheadUs(); }
  bool PredictsWithFallback(const OpConfig& config, int device_index) const override {
    return base_->PredictsWithFallback(config, devices_[static_cast<size_t>(device_index)]);
  }
  std::string Version() const override { return version_; }

 private:
  DeviceSubsetModel(std::shared_ptr<const LatencyModel> base, std::vector<int> devices);

  std::shared_ptr<const LatencyModel> base_;
  std::vector<int> devices_;
  std::string version_;
};

}  // namespace psched::predictor
