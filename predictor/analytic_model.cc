#include "predictor/analytic_model.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"

namespace psched::predictor {
namespace {

// FNV-1a: a hash that is stable across builds, so Version() can key a persistent cache.
uint64_t StableHash(std::string_view text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : text) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

void AnalyticDeviceParams::SetThroughput(double conv, double depthwise, double fully_connected,
                                         double others) {
  gflops.fill(others);
  gflops[static_cast<size_t>(model::OpKind::kConv2d)] = conv;
  gflops[static_cast<size_t>(model::OpKind::kConvTranspose2d)] = conv;
  gflops[static_cast<size_t>(model::OpKind::kFullyConnected)] = fully_connected;
  depthwise_gflops = depthwise;
  pointwise_gflops = conv;
}

bool IsPointwiseConv(const OpConfig& config) {
  return config.kind == model::OpKind::kConv2d && !config.IsDepthwise() &&
         config.window.kernel_h == 1 && config.window.kernel_w == 1;
}

double ReductionLength(const OpConfig& config) {
  if (config.kind == model::OpKind::kMatMul) return static_cast<double>(config.matmul.k);
  const bool conv = config.kind == model::OpKind::kConv2d ||
                    config.kind == model::OpKind::kConvTranspose2d;
  if (!conv || config.inputs.empty()) return 0;
  return static_cast<double>(config.inputs[0].c) / std::max(config.groups, 1) *
         config.window.kernel_h * config.window.kernel_w;
}

AnalyticModel::AnalyticModel(std::string name, std::vector<AnalyticDeviceParams> devices)
    : name_(std::move(name)), devices_(std::move(devices)) {
  std::string params;
  for (const AnalyticDeviceParams& d : devices_) {
    absl::StrAppend(&params, d.name, d.gpu ? ":gpu" : ":cpu", ":", d.depthwise_gflops, ":",
                    d.bandwidth_gbps, ":", d.overhead_us, ":", d.dispatch_us, ":",
                    d.half_parallelism, ":", d.pointwise_gflops, ":", d.half_reduction, ":",
                    d.concat_us);
    for (double g : d.gflops) absl::StrAppend(&params, ",", g);
  }
  version_ = absl::StrCat("analytic-v3/", name_, "/", absl::Hex(StableHash(params)));
}

double AnalyticModel::PredictUs(const OpConfig& config, int device_index) const {
  const AnalyticDeviceParams& d = devices_[static_cast<size_t>(device_index)];
  if (config.kind == model::OpKind::kConcat && !config.concat_copies) {
    return d.concat_us + d.dispatch_us;
  }
  const bool depthwise = config.IsDepthwise();
  const double peak = depthwise                 ? d.depthwise_gflops
                      : IsPointwiseConv(config) ? d.pointwise_gflops
                                                : d.gflops[static_cast<size_t>(config.kind)];
  const double parallel = static_cast<double>(config.output.Elements());
  double utilisation = parallel / (parallel + d.half_parallelism);
  if (!depthwise && d.half_reduction > 0) {
    const double k = ReductionLength(config);
    if (k > 0) utilisation *= k / (k + d.half_reduction);
  }
  // GFLOP/s and GB/s are both 1e3 units per microsecond.
  const double compute_us = config.flops / (peak * 1e3 * utilisation);
  const double memory_us = config.bytes / (d.bandwidth_gbps * 1e3);
  return std::max(compute_us, memory_us) + d.overhead_us + d.dispatch_us;
}

}  // namespace psched::predictor
