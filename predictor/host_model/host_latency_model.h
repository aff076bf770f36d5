// The latency model host calibration produces: per (device, op family) either the device's
// GBDT regressor (predictor/gbdt) or the analytic roofline fit (predictor/analytic_model.h),
// scaled by the device's measured co-run contention factor.
//
// Calibration trains a GBDT model per device on its measured samples, but a family with only a
// handful of samples (the budget ran out, or the registered models have few such ops) is better
// served by the roofline, which shares its few parameters across kinds; `Device::gbdt` records
// the choice per family. Both parts include the device's per-subtask synchronisation cost (GPU
// dispatch_us). `contention` is the median slowdown of the device's ops measured while the other
// devices ran a busy loop: plans put work on several devices at once, and on a machine whose
// "GPU" shares cores and memory with the CPU clusters that is when the ops run.
//
// What calibration learns from whole runs of real plans (calibration/run_costs/run_costs.h) comes
// on top: `in_run` scales a device's predictions to what its subtasks took inside those runs
// (their caches hold what the run left, not what an isolated timing left), and `sync_us` is the
// cost of a hand-off from this device to each other one (SyncUs: a parked device thread woken,
// data fetched from another core's cache), which schedulers add to edges between devices;
// `hand_off` is the same cost split by the waiter's idle time, and `co_run` how much slower the
// device's kernels run in plans with work on other devices too, both for predicting a fixed
// plan's run (HandOffUs, CoRunFactor: a waiter that had not parked yet costs far less than one
// that had; two cores running at once share the last-level cache and memory bandwidth);
// `run_overhead_us` is what a run costs outside every subtask (RunOverheadUs).
//
// A device may also keep what calibration timed on it (`anchors`, measured_anchors.h): a
// configuration of an op that calibration timed, whole or cut, is then predicted from those
// times (with the analytic fit as the smooth shape between them) instead of by the GBDT
// model or the fit; the per-subtask sync cost and the factors above apply as to any
// prediction.
//
// Version() is "calibrated-v1/<analytic model name>/<SHA-256>" (e.g.
// "calibrated-v1/host+calibrated/...") over the analytic model's version, every GBDT part's
// version, the per-family choices, the contention factors and, when learned (not 1 and 0), the
// in-run factors, sync costs, hand-off costs, partial-sum costs and run overhead: a retrained file,
// a changed choice or a new run-cost fit changes every plan-cache key. Immutable after Create;
// thread-safe.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "predictor/analytic_model.h"
#include "predictor/gbdt/features.h"
#include "predictor/gbdt/gbdt_latency_model.h"
#include "predictor/host_model/measured_anchors.h"
#include "predictor/latency_model.h"

namespace psched::predictor::host_model {

class HostLatencyModel final : public LatencyModel {
 public:
  struct Device {
    // This device's GBDT model (device 0 of it); null: every family uses the analytic fit.
    std::shared_ptr<const gbdt::GbdtLatencyModel> gbdt;
    // Per family (gbdt::OpFamily order): predicted by `gbdt` (true) or the analytic fit.
    std::array<bool, gbdt::kNumFamilies> use_gbdt{};
    double contention = 1.0;  // predictions are multiplied by this
    double in_run = 1.0;      // and by this
    // While another device runs too, this device's subtasks take this much longer (CoRunFactor,
    // over the overlapped share of each; not in PredictUs).
    double co_run = 1.0;
    // What the last slice of a cin-split op ending on this device pays per element it adds of
    // the other slices' partial sums, in ns (PartialSumNs; 0: none measured).
    double partial_sum_ns = 0;
    // Between two subtasks of this device in a run, and before one with an input from another
    // device (SubtaskGapUs; 0: none measured).
    double gap_us = 0;
    double synced_gap_us = 0;
    // Microseconds of a hand-off from this device to device i (SyncUs); empty: none. Entry i of
    // device i itself is ignored.
    std::vector<double> sync_us;
    // What a hand-off from this device to device i costs in a run by how long the waiter had
    // been idle when the input came (HandOffUs): `spinning_us` below `window_us` (a host
    // waiter's spin before it parks), `parked_us` from then on. Empty: SyncUs whatever the wait.
    // Entry i of device i itself is ignored.
    struct HandOff {
      double window_us = 0;
      double spinning_us = 0;
      double parked_us = 0;
      // The hand-off after a wait of `idle_us`.
      double CostUs(double idle_us) const { return idle_us < window_us ? spinning_us : parked_us; }
    };
    std::vector<HandOff> hand_off;
    // What calibration timed on this device alone (measured_anchors.h); empty: none. Create
    // moves them into the model (anchors(i) holds them, one per configuration).
    std::vector<Anchor> anchors;
  };

  // InvalidArgument when the analytic model's device count differs from devices.size(), a
  // device uses GBDT for a family without having a GBDT model, a contention or in-run factor is
  // not finite and >= 1e-3 (co-run too), a partial_sum_ns or gap_us not finite and >= 0, or a
  // device's
  // sync_us is neither empty nor one finite cost
  // >= 0 per device, a device's hand_off is neither empty nor one entry of finite costs >= 0 per
  // device, or run_overhead_us is not finite and >= 0.
  static absl::StatusOr<std::unique_ptr<HostLatencyModel>> Create(
      std::shared_ptr<const AnalyticModel> analytic, std::vector<Device> devices,
      double run_overhead_us = 0);
  // Not copyable: the anchors' smooth shape calls back into this model.
  HostLatencyModel(const HostLatencyModel&) = delete;
  HostLatencyModel& operator=(const HostLatencyModel&) = delete;

  int num_devices() const override { return static_cast<int>(devices_.size()); }
  double PredictUs(const OpConfig& config, int device_index) const override;
  void PredictBatch(std::span<const OpConfig> configs, int device_index,
                    std::span<double> out) const override;
  double SyncUs(int from_device, int to_device) const override;
  double HandOffUs(int from_device, int to_device, double idle_us) const override;
  double CoRunFactor(int device) const override {
    return devices_[static_cast<size_t>(device)].co_run;
  }
  double PartialSumNs(int device) const override {
    return devices_[static_cast<size_t>(device)].partial_sum_ns;
  }
  double SubtaskGapUs(int device, bool synced) const override {
    const Device& d = devices_[static_cast<size_t>(device)];
    return synced ? d.synced_gap_us : d.gap_us;
  }
  double RunOverheadUs() const override { return run_overhead_us_; }
  // The analytic fit is a calibrated choice here, not a stand-in: only the GBDT part's own
  // fallback counts.
  bool PredictsWithFallback(const OpConfig& config, int device_index) const override;
  std::string Version() const override { return version_; }

  const AnalyticModel& analytic() const { return *analytic_; }
  const Device& device(int index) const { return devices_[static_cast<size_t>(index)]; }
  // The device's anchors, one per configuration timed (their median time); empty: none.
  std::span<const Anchor> anchors(int index) const;

  // The analytic fit's time for `config` on the device without its per-subtask sync cost (the
  // smooth shape anchors interpolate along; > 0).
  double AnalyticKernelUs(const OpConfig& config, int device_index) const;

 private:
  HostLatencyModel() = default;

  std::shared_ptr<const AnalyticModel> analytic_;
  std::vector<Device> devices_;
  // The anchors' prediction for `config` on the device with its sync cost and factors, as
  // PredictUs returns it; nullopt where the device's anchors do not cover it.
  std::optional<double> AnchoredUs(const OpConfig& config, int device_index) const;
  // The GBDT model's or the analytic fit's prediction (the family's choice) with the factors.
  double TrainedUs(const OpConfig& config, int device_index) const;

  std::vector<std::optional<MeasuredAnchors>> anchors_;  // per device; nullopt: none
  double run_overhead_us_ = 0;
  std::string version_;
};

}  // namespace psched::predictor::host_model
