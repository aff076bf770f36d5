// predictor::ResidualCorrectedModel: another latency model scaled by factors learned from
// measured times (measured / predicted), so a model that is off on this machine - a wrong
// device speed, an op kind it gets wrong - predicts what the machine does.
//
// A factor is kept per (op configuration, device) that was measured. A configuration that
// was not measured gets the geometric mean of its op kind's factors on that device, else of
// the device's factors, else 1: a planner exploring new slices of an op must not find them
// cheaper only because the correction has not seen them. Factors refine one another: a
// correction made from the predictions of an earlier one multiplies its factors.
//
// Immutable after Make; thread-safe. Version() is the inner model's version plus a hash of
// the factors, so plans made with a correction have a cache key of their own.
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "predictor/latency_model.h"

namespace psched::predictor {

// One measured (sub)operator: what it ran as, where, how long it took and what the model
// being corrected predicted for it.
struct ResidualSample {
  OpConfig config;
  int device = 0;
  double measured_us = 0;
  double predicted_us = 0;
};

class ResidualCorrectedModel final : public LatencyModel {
 public:
  // Factors are clamped to [1/kMaxFactor, kMaxFactor]: one wild measurement (a preempted
  // run) must not make a device look unusable.
  static constexpr double kMaxFactor = 20;

  // Corrects `inner` by `samples` (several samples of one configuration and device: the
  // median ratio). `previous`, when given, must correct the same inner model; the samples'
  // predictions are its predictions and its factors are refined. Samples with a device out
  // of range or a non-positive or non-finite time are skipped; INVALID_ARGUMENT when none is
  // left or `previous` corrects another model.
  static absl::StatusOr<std::shared_ptr<const ResidualCorrectedModel>> Make(
      std::shared_ptr<const LatencyModel> inner, const ResidualCorrectedModel* previous,
      std::span<const ResidualSample> samples);

  int num_devices() const override { return inner_->num_devices(); }
  double PredictUs(const OpConfig& config, int device_index) const override;
  void PredictBatch(std::span<const OpConfig> configs, int device_index,
                    std::span<double> out) const override;
  // The inner model's: measured subtask times say nothing about hand-offs between devices.
  double SyncUs(int from_device, int to_device) const override {
    return inner_->SyncUs(from_device, to_device);
  }
  double HandOffUs(int from_device, int to_device, double idle_us) const override {
    return inner_->HandOffUs(from_device, to_device, idle_us);
  }
  // 1: the residuals were measured inside the served plan's runs, which hold whatever slowdown
  // co-running devices cause; the inner model's factor on top would count it twice.
  double CoRunFactor(int device) const override { return 1.0; }
  // 0 for the same reason: a last cin slice's residual holds the combine it ran.
  double PartialSumNs(int device) const override { return 0; }
  // The inner model's: the residuals are of subtask times, which hold no gap between them.
  double SubtaskGapUs(int device, bool synced) const override {
    return inner_->SubtaskGapUs(device, synced);
  }
  double RunOverheadUs() const override { return inner_->RunOverheadUs(); }
  bool PredictsWithFallback(const OpConfig& config, int device_index) const override {
    return inner_->PredictsWithFallback(config, device_index);
  }
  std::string Version() const override { return version_; }

  const std::shared_ptr<const LatencyModel>& inner() const { return inner_; }
  // The factor PredictUs applies to `config` on `device_index`.
  double Factor(const OpConfig& config, int device_index) const;
  // Configurations with a factor of their own.
  size_t measured_configs() const { return exact_.size(); }

 private:
  // What identifies a configuration: its kind, cost and the fields that change the kernel.
  using ConfigKey = std::tuple<int, double, double, int32_t, bool, int64_t, int>;  // ..., device
  static ConfigKey KeyOf(const OpConfig& config, int device_index);

  ResidualCorrectedModel(std::shared_ptr<const LatencyModel> inner,
                         std::map<ConfigKey, double> exact);

  std::shared_ptr<const LatencyModel> inner_;
  std::map<ConfigKey, double> exact_;
  std::map<std::pair<int, int>, double> by_kind_;  // (op kind, device)
  std::vector<double> by_device_;
  std::string version_;
};

}  // namespace psched::predictor
