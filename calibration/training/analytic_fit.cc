#include "calibration/training/analytic_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "predictor/error_summary.h"
#include "predictor/host_model/analytic_params_json.h"

namespace psched::calibration {
namespace {

// Throughput classes: one per op kind, plus depthwise and pointwise convs.
constexpr int kDepthwiseClass = model::kNumOpKinds;
constexpr int kPointwiseClass = model::kNumOpKinds + 1;

int ClassOf(const predictor::OpConfig& c) {
  if (c.IsDepthwise()) return kDepthwiseClass;
  if (predictor::IsPointwiseConv(c)) return kPointwiseClass;
  return static_cast<int>(c.kind);
}

// The held-out split stratifies by op kind (depthwise convs apart), as it did before
// pointwise convs had a throughput of their own, so the same samples and seed hold out the
// same samples across model versions and their errors compare directly.
int SplitGroupOf(const predictor::OpConfig& c) {
  return c.IsDepthwise() ? kDepthwiseClass : static_cast<int>(c.kind);
}

std::string ClassName(int cls) {
  if (cls == kDepthwiseClass) return "depthwise";
  if (cls == kPointwiseClass) return "conv2d_1x1";
  return std::string(model::OpKindName(static_cast<model::OpKind>(cls)));
}

// Parameter vector layout (natural logs): bandwidth, overhead, half_parallelism, then the
// optional ones (concat_us when concats were timed, half_reduction when non-depthwise convs
// were), then the GFLOP/s of each fitted class.
constexpr int kLogBandwidth = 0;
constexpr int kLogOverhead = 1;
constexpr int kLogHalfParallelism = 2;
constexpr int kNumFixedParams = 3;

// Plausible ranges that keep the optimiser away from overflow; far outside any real device.
struct Range {
  double lo, hi;
};
Range ParamRange(int index, int log_half_reduction) {
  if (index == log_half_reduction) return {std::log(1e-3), std::log(1e5)};
  switch (index) {
    case kLogBandwidth:
      return {std::log(1e-3), std::log(1e5)};
    case kLogOverhead:
      return {std::log(1e-3), std::log(1e6)};
    case kLogHalfParallelism:
      return {std::log(1e-2), std::log(1e9)};
    default:  // throughputs and concat_us
      return {std::log(1e-5), std::log(1e6)};
  }
}

constexpr double kRidge = 1e-3;

// One device's fitting problem.
class DeviceFit {
 public:
  DeviceFit(predictor::AnalyticDeviceParams prior,
            std::vector<const predictor::host_model::CalibrationSample*> train)
      : prior_(std::move(prior)), train_(std::move(train)) {
    prior_.dispatch_us = 0;
    // A zero throughput (predictor::AnalyticDeviceParams' default) makes 0-flop kinds predict 0 /
    // 0.
    for (double& g : prior_.gflops) g = g > 0 ? g : 1.0;
    if (!(prior_.depthwise_gflops > 0)) prior_.depthwise_gflops = 1.0;
    int next = kNumFixedParams;
    for (const predictor::host_model::CalibrationSample* s : train_) {
      if (s->config.kind == model::OpKind::kConcat && log_concat_ < 0) log_concat_ = next++;
      if (predictor::ReductionLength(s->config) > 0 && !s->config.IsDepthwise() &&
          log_half_reduction_ < 0)
        log_half_reduction_ = next++;
    }
    for (const predictor::host_model::CalibrationSample* s : train_) {
      const int cls = ClassOf(s->config);
      if (s->config.flops > 0 && s->config.kind != model::OpKind::kConcat &&
          class_slot_.find(cls) == class_slot_.end()) {
        class_slot_[cls] = next++;
      }
      log_measured_.push_back(std::log(s->measured_us));
    }
    num_params_ = next;
  }

  int num_params() const { return num_params_; }
  bool fits_half_reduction() const { return log_half_reduction_ >= 0; }

  predictor::AnalyticDeviceParams Params(const std::vector<double>& theta) const {
    predictor::AnalyticDeviceParams p = prior_;
    p.bandwidth_gbps = std::exp(theta[kLogBandwidth]);
    p.overhead_us = std::exp(theta[kLogOverhead]);
    p.half_parallelism = std::exp(theta[kLogHalfParallelism]);
    if (log_concat_ >= 0) p.concat_us = std::exp(theta[static_cast<size_t>(log_concat_)]);
    if (log_half_reduction_ >= 0)
      p.half_reduction = std::exp(theta[static_cast<size_t>(log_half_reduction_)]);
    for (const auto& [cls, slot] : class_slot_) {
      const double g = std::exp(theta[static_cast<size_t>(slot)]);
      if (cls == kDepthwiseClass) {
        p.depthwise_gflops = g;
      } else if (cls == kPointwiseClass) {
        p.pointwise_gflops = g;
      } else {
        p.gflops[static_cast<size_t>(cls)] = g;
      }
    }
    return p;
  }

  // A data-driven starting point with the given half_parallelism and half_reduction. Every
  // sample satisfies t >= overhead + bytes / bandwidth and t >= overhead + flops / gflops,
  // so high percentiles of the implied rates are close to (and below) the true ones.
  std::vector<double> Start(double half_parallelism, double half_reduction) const {
    std::vector<double> theta(static_cast<size_t>(num_params()));
    const double fastest = std::exp(*std::min_element(log_measured_.begin(), log_measured_.end()));
    const double overhead = std::max(0.5 * fastest, 0.01);
    std::vector<double> bandwidth;
    std::vector<double> concat;
    std::map<int, std::vector<double>> rates;
    for (const predictor::host_model::CalibrationSample* s : train_) {
      if (s->config.kind == model::OpKind::kConcat) {
        concat.push_back(s->measured_us);
        continue;
      }
      const double busy_us = std::max(s->measured_us - overhead, 0.05 * s->measured_us);
      bandwidth.push_back(s->config.bytes / (busy_us * 1e3));
      if (s->config.flops > 0)
        rates[ClassOf(s->config)].push_back(s->config.flops / (busy_us * 1e3));
    }
    theta[kLogBandwidth] = std::log(std::max(Percentile(bandwidth, 0.9), 1e-3));
    theta[kLogOverhead] = std::log(overhead);
    theta[kLogHalfParallelism] = std::log(half_parallelism);
    if (log_concat_ >= 0)
      theta[static_cast<size_t>(log_concat_)] = std::log(Percentile(concat, 0.5));
    if (log_half_reduction_ >= 0)
      theta[static_cast<size_t>(log_half_reduction_)] = std::log(half_reduction);
    for (const auto& [cls, slot] : class_slot_) {
      theta[static_cast<size_t>(slot)] = std::log(std::max(Percentile(rates[cls], 0.9), 1e-5));
    }
    return Clamp(theta);
  }

  // Levenberg-Marquardt from `theta`; returns the end point and its cost.
  std::pair<std::vector<double>, double> Solve(std::vector<double> theta,
                                               int max_iterations) const {
    const std::vector<double> anchor = theta;
    const size_t n = theta.size();
    std::vector<double> r = Residuals(theta, anchor);
    double cost = SquaredNorm(r);
    double lambda = 1e-3;
    for (int it = 0; it < max_iterations && lambda < 1e12; ++it) {
      // Forward-difference Jacobian in log space.
      std::vector<std::vector<double>> jac(n);
      for (size_t j = 0; j < n; ++j) {
        std::vector<double> t = theta;
        const double h = 1e-6 * std::max(1.0, std::abs(theta[j]));
        t[j] += h;
        std::vector<double> rj = Residuals(t, anchor);
        jac[j].resize(r.size());
        for (size_t i = 0; i < r.size(); ++i) jac[j][i] = (rj[i] - r[i]) / h;
      }
      std::vector<std::vector<double>> a(n, std::vector<double>(n));
      std::vector<double> g(n);
      for (size_t p = 0; p < n; ++p) {
        for (size_t q = p; q < n; ++q) {
          double sum = 0;
          for (size_t i = 0; i < r.size(); ++i) sum += jac[p][i] * jac[q][i];
          a[p][q] = a[q][p] = sum;
        }
        double sum = 0;
        for (size_t i = 0; i < r.size(); ++i) sum += jac[p][i] * r[i];
        g[p] = -sum;
      }
      bool improved = false;
      while (lambda < 1e12) {
        std::vector<std::vector<double>> damped = a;
        for (size_t p = 0; p < n; ++p) damped[p][p] += lambda * (a[p][p] + 1e-9);
        std::vector<double> step = SolveLinear(damped, g);
        std::vector<double> candidate = theta;
        for (size_t p = 0; p < n; ++p) candidate[p] += step[p];
        candidate = Clamp(candidate);
        std::vector<double> rc = Residuals(candidate, anchor);
        const double c = SquaredNorm(rc);
        if (c < cost || (std::isnan(cost) && !std::isnan(c))) {
          improved = (cost - c) > 1e-12 * std::max(cost, 1e-300);
          theta = std::move(candidate);
          r = std::move(rc);
          cost = c;
          lambda = std::max(lambda / 3.0, 1e-12);
          break;
        }
        lambda *= 4.0;
      }
      if (!improved) break;
    }
    return {theta, cost};
  }

 private:
  static double Percentile(std::vector<double> v, double q) {
    if (v.empty()) return 1.0;
    std::sort(v.begin(), v.end());
    return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
  }

  static double SquaredNorm(const std::vector<double>& r) {
    double s = 0;
    for (double x : r) s += x * x;
    return s;
  }

  std::vector<double> Clamp(std::vector<double> theta) const {
    for (size_t j = 0; j < theta.size(); ++j) {
      const Range range = ParamRange(static_cast<int>(j), log_half_reduction_);
      theta[j] = std::clamp(theta[j], range.lo, range.hi);
    }
    return theta;
  }

  // Gaussian elimination with partial pivoting; `a` is small (a few dozen rows at most) and
  // positive definite after damping.
  static std::vector<double> SolveLinear(std::vector<std::vector<double>> a,
                                         std::vector<double> b) {
    const size_t n = b.size();
    for (size_t col = 0; col < n; ++col) {
      size_t pivot = col;
      for (size_t row = col + 1; row < n; ++row) {
        if (std::abs(a[row][col]) > std::abs(a[pivot][col])) pivot = row;
      }
      std::swap(a[col], a[pivot]);
      std::swap(b[col], b[pivot]);
      if (std::abs(a[col][col]) < 1e-300) continue;
      for (size_t row = col + 1; row < n; ++row) {
        const double f = a[row][col] / a[col][col];
        for (size_t k = col; k < n; ++k) a[row][k] -= f * a[col][k];
        b[row] -= f * b[col];
      }
    }
    std::vector<double> x(n, 0.0);
    for (size_t i = n; i-- > 0;) {
      double sum = b[i];
      for (size_t k = i + 1; k < n; ++k) sum -= a[i][k] * x[k];
      x[i] = std::abs(a[i][i]) < 1e-300 ? 0.0 : sum / a[i][i];
    }
    return x;
  }

  // Log errors of every training sample, then the ridge rows.
  std::vector<double> Residuals(const std::vector<double>& theta,
                                const std::vector<double>& anchor) const {
    const predictor::AnalyticModel model("fit", {Params(theta)});
    std::vector<double> r;
    r.reserve(train_.size() + theta.size());
    for (size_t i = 0; i < train_.size(); ++i) {
      r.push_back(std::log(model.PredictUs(train_[i]->config, 0)) - log_measured_[i]);
    }
    const double w = std::sqrt(kRidge);
    for (size_t j = 0; j < theta.size(); ++j) r.push_back(w * (theta[j] - anchor[j]));
    return r;
  }

  predictor::AnalyticDeviceParams prior_;
  std::vector<const predictor::host_model::CalibrationSample*> train_;
  std::vector<double> log_measured_;
  std::map<int, int> class_slot_;  // class -> parameter index
  int log_concat_ = -1;            // parameter index, or -1 when not fitted
  int log_half_reduction_ = -1;
  int num_params_ = kNumFixedParams;
};

ErrorStats Summarise(std::string device, std::string kind, std::vector<double> apes) {
  const predictor::ErrorSummary summary = predictor::SummarizeErrors(std::move(apes));
  ErrorStats s;
  s.device = std::move(device);
  s.kind = std::move(kind);
  s.count = summary.count;
  s.mape = summary.mape;
  s.median_ape = summary.median;
  s.max_ape = summary.max;
  return s;
}

}  // namespace

std::vector<ErrorStats> EvaluateErrors(
    const predictor::AnalyticModel& model, std::span<const std::string> device_names,
    std::span<const predictor::host_model::CalibrationSample> samples, bool exclude_dispatch) {
  std::vector<ErrorStats> rows;
  const int devices = std::min(static_cast<int>(device_names.size()), model.num_devices());
  for (int d = 0; d < devices; ++d) {
    const double dispatch = exclude_dispatch ? model.device(d).dispatch_us : 0.0;
    std::map<int, std::vector<double>> by_class;
    std::vector<double> all;
    for (const predictor::host_model::CalibrationSample& s : samples) {
      if (s.device != device_names[static_cast<size_t>(d)]) continue;
      const double predicted = model.PredictUs(s.config, d) - dispatch;
      const double ape = 100.0 * std::abs(predicted - s.measured_us) / s.measured_us;
      by_class[ClassOf(s.config)].push_back(ape);
      all.push_back(ape);
    }
    if (all.empty()) continue;
    for (auto& [cls, apes] : by_class) {
      rows.push_back(
          Summarise(device_names[static_cast<size_t>(d)], ClassName(cls), std::move(apes)));
    }
    rows.push_back(Summarise(device_names[static_cast<size_t>(d)], "all", std::move(all)));
  }
  return rows;
}

absl::StatusOr<FitResult> FitAnalyticModel(std::string_view platform,
                                           std::span<const std::string> device_names,
                                           const predictor::host_model::CalibrationSamples& samples,
                                           const FitOptions& options) {
  if (device_names.empty()) return absl::InvalidArgumentError("FitAnalyticModel: no devices");
  if (!(options.holdout_fraction >= 0 && options.holdout_fraction <= 0.9)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "FitAnalyticModel: holdout_fraction must be in [0, 0.9], got ", options.holdout_fraction));
  }
  if (options.max_iterations < 1) {
    return absl::InvalidArgumentError("FitAnalyticModel: max_iterations must be >= 1");
  }
  std::map<std::string, int, std::less<>> index;
  for (size_t d = 0; d < device_names.size(); ++d) {
    if (!index.emplace(device_names[d], static_cast<int>(d)).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("FitAnalyticModel: device '", device_names[d], "' listed twice"));
    }
  }
  // Stratified split: each (device, class) group is shuffled and its first share held out.
  std::map<std::pair<int, int>, std::vector<size_t>> groups;
  for (size_t i = 0; i < samples.samples.size(); ++i) {
    const predictor::host_model::CalibrationSample& s = samples.samples[i];
    const auto it = index.find(s.device);
    if (it == index.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("FitAnalyticModel: sample ", i, " is on device '", s.device,
                       "', which is not one of ", absl::StrJoin(device_names, ", ")));
    }
    if (!(std::isfinite(s.measured_us) && s.measured_us > 0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "FitAnalyticModel: sample ", i, " has measured_us ", s.measured_us, " (must be > 0)"));
    }
    groups[{it->second, SplitGroupOf(s.config)}].push_back(i);
  }
  std::mt19937_64 rng(options.seed);
  std::vector<std::vector<const predictor::host_model::CalibrationSample*>> train(
      device_names.size());
  std::vector<predictor::host_model::CalibrationSample> heldout;
  std::vector<predictor::host_model::CalibrationSample> train_copy;
  for (auto& [key, members] : groups) {
    std::shuffle(members.begin(), members.end(), rng);
    size_t hold = static_cast<size_t>(
        std::llround(options.holdout_fraction * static_cast<double>(members.size())));
    hold = std::min(hold, members.size() - 1);
    for (size_t m = 0; m < members.size(); ++m) {
      const predictor::host_model::CalibrationSample& s = samples.samples[members[m]];
      if (m < hold) {
        heldout.push_back(s);
      } else {
        train[static_cast<size_t>(key.first)].push_back(&s);
        train_copy.push_back(s);
      }
    }
  }

  FitResult result;
  for (size_t d = 0; d < device_names.size(); ++d) {
    predictor::AnalyticDeviceParams prior;
    prior.name = device_names[d];
    for (const predictor::AnalyticDeviceParams& p : options.priors) {
      if (p.name == device_names[d]) prior = p;
    }
    if (train[d].empty()) {
      result.params.push_back(prior);
      result.report.unfitted_devices.push_back(device_names[d]);
      continue;
    }
    DeviceFit fit(prior, train[d]);
    std::vector<double> best;
    double best_cost = INFINITY;
    // A half_reduction of 1e-3 is practically no reduction term; the start that ends
    // lowest decides whether the data want one.
    std::vector<double> reductions = {1e-3};
    if (fit.fits_half_reduction()) {
      reductions.push_back(64.0);
      reductions.push_back(512.0);
      if (prior.half_reduction > 0) reductions.push_back(prior.half_reduction);
    }
    for (double h : {prior.half_parallelism, 16.0, 256.0, 4096.0, 65536.0}) {
      if (!(h > 0)) continue;
      for (double k : reductions) {
        auto [theta, cost] = fit.Solve(fit.Start(h, k), options.max_iterations);
        if (best.empty() || cost < best_cost) {
          best_cost = cost;
          best = std::move(theta);
        }
      }
    }
    predictor::AnalyticDeviceParams fitted = fit.Params(best);
    fitted.dispatch_us = prior.dispatch_us;
    result.params.push_back(std::move(fitted));
  }
  predictor::host_model::AnalyticParams params{std::string(platform), result.params};
  result.model = params.MakeModel();
  result.report.train_samples = static_cast<int>(train_copy.size());
  result.report.heldout_samples = static_cast<int>(heldout.size());
  result.report.train = EvaluateErrors(*result.model, device_names, train_copy);
  result.report.heldout = EvaluateErrors(*result.model, device_names, heldout);
  result.heldout = std::move(heldout);
  return result;
}

std::string FormatErrorTable(std::span<const ErrorStats> rows) {
  std::string out;
  char line[160];
  std::snprintf(line, sizeof(line), "%-8s %-16s %6s %9s %11s %10s\n", "device", "kind", "n",
                "MAPE %", "median APE %", "max APE %");
  out += line;
  for (const ErrorStats& r : rows) {
    std::snprintf(line, sizeof(line), "%-8s %-16s %6d %9.1f %11.1f %10.1f\n", r.device.c_str(),
                  r.kind.c_str(), r.count, r.mape, r.median_ape, r.max_ape);
    out += line;
  }
  return out;
}

nlohmann::json FitReportToJson(const FitReport& report) {
  auto rows = [](const std::vector<ErrorStats>& stats) {
    nlohmann::json list = nlohmann::json::array();
    for (const ErrorStats& s : stats) {
      list.push_back({{"device", s.device},
                      {"kind", s.kind},
                      {"count", s.count},
                      {"mape_pct", s.mape},
                      {"median_ape_pct", s.median_ape},
                      {"max_ape_pct", s.max_ape}});
    }
    return list;
  };
  return {{"train_samples", report.train_samples},
          {"heldout_samples", report.heldout_samples},
          {"heldout", rows(report.heldout)},
          {"train", rows(report.train)},
          {"unfitted_devices", report.unfitted_devices}};
}

}  // namespace psched::calibration
