#include "predictor/gbdt/baseline_roofline.h"

#include <algorithm>

namespace psched::predictor::gbdt {
namespace {

// 1 MFLOP in `us` microseconds is 1e3 / us GFLOP/s; 1 MB likewise GB/s.
double RateOf(double us_per_million, double otherwise) {
  return us_per_million > 0 ? 1e3 / us_per_million : otherwise;
}

}  // namespace

AnalyticDeviceParams RooflineFromBaselines(const DeviceModel& model, std::string name) {
  const FamilyModel* conv = model.For(OpFamily::kConv);
  const FamilyModel* elementwise = model.For(OpFamily::kElementwise);
  const Baseline none;
  const Baseline& c = conv != nullptr ? conv->baseline : none;
  const Baseline& e = elementwise != nullptr ? elementwise->baseline : none;
  const double gflops = RateOf(c.us_per_mflop, RateOf(e.us_per_mflop, kDefaultRooflineGflops));
  const double gbps = RateOf(c.us_per_mbyte, RateOf(e.us_per_mbyte, kDefaultRooflineGbps));
  AnalyticDeviceParams p;
  p.name = std::move(name);
  p.gpu = model.gpu;
  p.SetThroughput(gflops, gflops / 4.0, gflops, gflops / 4.0);
  p.gflops[static_cast<size_t>(model::OpKind::kMatMul)] = gflops;
  p.bandwidth_gbps = gbps;
  p.overhead_us = std::max(0.0, c.constant_us);
  p.concat_us = p.overhead_us;
  p.dispatch_us = 0;
  p.half_parallelism = 0;
  return p;
}

}  // namespace psched::predictor::gbdt
