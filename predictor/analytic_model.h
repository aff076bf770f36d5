// A roofline-style latency model with per-device parameters.
//
// time = max(flops / (peak * utilisation), bytes / bandwidth) + overhead (+ dispatch on
// a GPU), where utilisation = x / (x + half_parallelism) for x output elements of the
// (sub)operator. The utilisation term makes small and partitioned ops relatively slower,
// so splitting is never free: a device needs enough independent work to reach its peak,
// and every subtask pays the fixed overhead (and on a GPU the sync/dispatch kernel of
// paper sec. 2.1). A cin subtask additionally reads back the output it accumulates into.
//
// Convs get three peaks: depthwise, pointwise (1x1, not depthwise) and the rest, because
// XNNPACK runs them through different micro-kernels with very different efficiency. The
// utilisation of a non-depthwise conv or a MatMul is further scaled by k / (k +
// half_reduction) for its reduction length k (input channels per group x kernel window; K):
// the GEMM inner loop of a conv with few input channels (a first layer over RGB, a 1x1 over
// 16 channels) or of attention's products over a 32- or 64-channel head spends more of its
// time loading and storing outputs than multiplying. A channel concat costs the fixed
// `concat_us`: the executors make its producers write straight into their channel slices of
// the output (executor/common/arena_plan.h), so nothing is copied; a concat along another
// axis copies its inputs and is costed by its bytes like any other op.
//
// These parameters are analytic stand-ins until a measured (GBDT) predictor exists.
// AnalyticModel is immutable after construction; all methods are thread-safe.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "model/graph.h"
#include "predictor/latency_model.h"

namespace psched::predictor {

struct AnalyticDeviceParams {
  std::string name;
  bool gpu = false;
  // Effective peak GFLOP/s per op kind; depthwise convs use `depthwise_gflops`.
  std::array<double, model::kNumOpKinds> gflops{};
  double depthwise_gflops = 1.0;
  double pointwise_gflops = 1.0;  // 1x1 convs that are not depthwise
  // Reduction length at which a non-depthwise conv reaches half its peak; 0: no such term.
  double half_reduction = 0.0;
  double bandwidth_gbps = 10.0;  // effective memory bandwidth, GB/s
  double overhead_us = 2.0;      // fixed per (sub)operator cost: launch, threadpool wake-up
  double concat_us = 2.0;        // an in-place concat; replaces overhead_us for concats
  // Added to every subtask on a GPU: the synchronisation kernel (paper: 10 us).
  double dispatch_us = 0.0;
  // Output elements at which the device reaches half of its peak.
  double half_parallelism = 256.0;

  // Sets every op kind to `others`, then conv (pointwise convs too) and fully-connected to
  // their own values.
  void SetThroughput(double conv, double depthwise, double fully_connected, double others);
};

// A 1x1 conv that is not depthwise: the convs that use `pointwise_gflops`.
bool IsPointwiseConv(const OpConfig& config);
// Input channels per group times the kernel window of a conv, K of a MatMul; 0 for other ops.
double ReductionLength(const OpConfig& config);

class AnalyticModel final : public LatencyModel {
 public:
  AnalyticModel(std::string name, std::vector<AnalyticDeviceParams> devices);

  int num_devices() const override { return static_cast<int>(devices_.size()); }
  double PredictUs(const OpConfig& config, int device_index) const override;
  std::string Version() const override { return version_; }

  const AnalyticDeviceParams& device(int index) const {
    return devices_[static_cast<size_t>(index)];
  }

 private:
  std::string name_;
  std::vector<AnalyticDeviceParams> devices_;
  std::string version_;
};

}  // namespace psched::predictor
