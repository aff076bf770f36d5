#include "predictor/host_model/host_latency_model.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "predictor/gbdt/model_file.h"

namespace psched::predictor::host_model {

absl::StatusOr<std::unique_ptr<HostLatencyModel>> HostLatencyModel::Create(
    std::shared_ptr<const AnalyticModel> analytic, std::vector<Device> devices,
    double run_overhead_us) {
  if (analytic == nullptr || analytic->num_devices() != static_cast<int>(devices.size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "host latency model: the analytic fit has ",
        analytic == nullptr ? 0 : analytic->num_devices(), " devices, expected ", devices.size()));
  }
  if (!std::isfinite(run_overhead_us) || run_overhead_us < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("host latency model: run overhead ", run_overhead_us, " us"));
  }
  std::string identity = analytic->Version();
  for (size_t d = 0; d < devices.size(); ++d) {
    const Device& device = devices[d];
    const std::string& name = analytic->device(static_cast<int>(d)).name;
    if (!std::isfinite(device.contention) || device.contention < 1e-3) {
      return absl::InvalidArgumentError(absl::StrCat(
          "host latency model: device '", name, "' has contention factor ", device.contention));
    }
    if (!std::isfinite(device.in_run) || device.in_run < 1e-3) {
      return absl::InvalidArgumentError(absl::StrCat("host latency model: device '", name,
                                                     "' has in-run factor ", device.in_run));
    }
    if (!std::isfinite(device.co_run) || device.co_run < 1e-3) {
      return absl::InvalidArgumentError(absl::StrCat("host latency model: device '", name,
                                                     "' has co-run factor ", device.co_run));
    }
    if (!std::isfinite(device.partial_sum_ns) || device.partial_sum_ns < 0) {
      return absl::InvalidArgumentError(absl::StrCat("host latency model: device '", name,
                                                     "' has partial-sum cost ",
                                                     device.partial_sum_ns, " ns per element"));
    }
    for (double gap : {device.gap_us, device.synced_gap_us}) {
      if (!std::isfinite(gap) || gap < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "host latency model: device '", name, "' has a gap between subtasks of ", gap, " us"));
      }
    }
    if (!device.sync_us.empty() && device.sync_us.size() != devices.size()) {
      return absl::InvalidArgumentError(absl::StrCat("host latency model: device '", name, "' has ",
                                                     device.sync_us.size(), " sync costs for ",
                                                     devices.size(), " devices"));
    }
    for (double us : device.sync_us) {
      if (!std::isfinite(us) || us < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("host latency model: device '", name, "' has sync cost ", us, " us"));
      }
    }
    if (!device.hand_off.empty() && device.hand_off.size() != devices.size()) {
      return absl::InvalidArgumentError(absl::StrCat("host latency model: device '", name, "' has ",
                                                     device.hand_off.size(), " hand-off costs for ",
                                                     devices.size(), " devices"));
    }
    for (const Device::HandOff& h : device.hand_off) {
      for (double us : {h.window_us, h.spinning_us, h.parked_us}) {
        if (!std::isfinite(us) || us < 0) {
          return absl::InvalidArgumentError(absl::StrCat("host latency model: device '", name,
                                                         "' has a hand-off cost or window of ", us,
                                                         " us; need a finite time >= 0"));
        }
      }
    }
    absl::StrAppend(&identity, "|", name, ":", device.gbdt ? device.gbdt->Version() : "-", ":",
                    absl::StrFormat("%.17g", device.contention), ":");
    // Only learned run costs enter the identity: calibrations stored before them keep their keys.
    bool learned = device.in_run != 1.0;
    for (double us : device.sync_us) learned = learned || us != 0;
    if (learned) {
      absl::StrAppend(&identity, "in_run=", absl::StrFormat("%.17g", device.in_run), ",sync=");
      for (size_t to = 0; to < device.sync_us.size(); ++to) {
        absl::StrAppendFormat(&identity, "%.17g;", to == d ? 0.0 : device.sync_us[to]);
      }
      identity += ':';
    }
    // Hand-off costs, a co-run factor, a partial-sum cost and a gap enter the identity only when
    // present,
    // like the learned run costs.
    if (device.co_run != 1.0) absl::StrAppendFormat(&identity, "co_run=%.17g:", device.co_run);
    if (device.partial_sum_ns != 0) {
      absl::StrAppendFormat(&identity, "partial_sum_ns=%.17g:", device.partial_sum_ns);
    }
    if (device.gap_us != 0 || device.synced_gap_us != 0) {
      absl::StrAppendFormat(&identity, "gap_us=%.17g,%.17g:", device.gap_us, device.synced_gap_us);
    }
    if (!device.hand_off.empty()) {
      identity += "hand_off=";
      for (size_t to = 0; to < device.hand_off.size(); ++to) {
        const Device::HandOff& h = device.hand_off[to];
        if (to != d) {
          absl::StrAppendFormat(&identity, "%.17g,%.17g,%.17g;", h.window_us, h.spinning_us,
                                h.parked_us);
        }
      }
      identity += ':';
    }
    for (const Anchor& a : device.anchors) {
      if (!std::isfinite(a.measured_us) || a.measured_us <= 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "host latency model: device '", name, "' has an anchor of ", a.measured_us, " us"));
      }
    }
    for (gbdt::OpFamily f : gbdt::kAllFamilies) {
      const bool use = device.use_gbdt[static_cast<size_t>(f)];
      if (use && device.gbdt == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat("host latency model: device '", name, "' uses GBDT for family ",
                         gbdt::FamilyName(f), " but has no GBDT model"));
      }
      identity += use ? 'g' : 'a';
    }
  }
  // Like the run costs per device: only a learned overhead enters the identity.
  if (run_overhead_us != 0) {
    absl::StrAppend(&identity, "|run_overhead=", absl::StrFormat("%.17g", run_overhead_us));
  }
  std::unique_ptr<HostLatencyModel> model(new HostLatencyModel());
  model->run_overhead_us_ = run_overhead_us;
  model->analytic_ = std::move(analytic);
  model->devices_ = std::move(devices);
  for (size_t d = 0; d < model->devices_.size(); ++d) {
    Device& device = model->devices_[d];
    if (device.anchors.empty()) {
      model->anchors_.emplace_back();
      continue;
    }
    const HostLatencyModel* self = model.get();
    const int index = static_cast<int>(d);
    model->anchors_.push_back(MeasuredAnchors::Build(
        device.anchors,
        [self, index](const OpConfig& c) { return self->AnalyticKernelUs(c, index); }));
    // One copy: the built anchors hold them, one per configuration (anchors(d)).
    std::vector<Anchor>().swap(device.anchors);
    // Anchors enter the identity only when present: calibrations without them keep their keys.
    absl::StrAppend(&identity, "|anchors:", d, "=", model->anchors_.back()->digest());
  }
  // The analytic fit's name (its version is "analytic-v3/<name>/<hash>"), e.g. host+calibrated.
  const std::vector<std::string> parts = absl::StrSplit(model->analytic_->Version(), '/');
  model->version_ = absl::StrCat("calibrated-v1/", parts.size() >= 3 ? parts[1] : "host", "/",
                                 gbdt::ModelFileHash(identity));
  return model;
}

double HostLatencyModel::AnalyticKernelUs(const OpConfig& config, int device_index) const {
  const double us =
      analytic_->PredictUs(config, device_index) - analytic_->device(device_index).dispatch_us;
  return std::max(us, 0.01);
}

std::span<const Anchor> HostLatencyModel::anchors(int index) const {
  const std::optional<MeasuredAnchors>& a = anchors_[static_cast<size_t>(index)];
  return a ? std::span<const Anchor>(a->anchors()) : std::span<const Anchor>();
}

std::optional<double> HostLatencyModel::AnchoredUs(const OpConfig& config, int device_index) const {
  const std::optional<MeasuredAnchors>& anchors = anchors_[static_cast<size_t>(device_index)];
  if (!anchors) return std::nullopt;
  const std::optional<double> us = anchors->PredictUs(config);
  if (!us) return std::nullopt;
  const Device& device = devices_[static_cast<size_t>(device_index)];
  return (*us + analytic_->device(device_index).dispatch_us) * device.contention * device.in_run;
}

double HostLatencyModel::TrainedUs(const OpConfig& config, int device_index) const {
  const Device& device = devices_[static_cast<size_t>(device_index)];
  const bool use = device.use_gbdt[static_cast<size_t>(gbdt::FamilyOf(config))];
  const double us =
      use ? device.gbdt->PredictUs(config, 0) : analytic_->PredictUs(config, device_index);
  return us * device.contention * device.in_run;
}

bool HostLatencyModel::PredictsWithFallback(const OpConfig& config, int device_index) const {
  const Device& device = devices_[static_cast<size_t>(device_index)];
  return !AnchoredUs(config, device_index).has_value() &&
         device.use_gbdt[static_cast<size_t>(gbdt::FamilyOf(config))] &&
         device.gbdt->PredictsWithFallback(config, 0);
}

double HostLatencyModel::PredictUs(const OpConfig& config, int device_index) const {
  const std::optional<double> us = AnchoredUs(config, device_index);
  return us ? *us : TrainedUs(config, device_index);
}

double HostLatencyModel::SyncUs(int from_device, int to_device) const {
  const std::vector<double>& sync = devices_[static_cast<size_t>(from_device)].sync_us;
  return sync.empty() || from_device == to_device ? 0.0 : sync[static_cast<size_t>(to_device)];
}

double HostLatencyModel::HandOffUs(int from_device, int to_device, double idle_us) const {
  const std::vector<Device::HandOff>& hand_off =
      devices_[static_cast<size_t>(from_device)].hand_off;
  if (hand_off.empty() || from_device == to_device) return SyncUs(from_device, to_device);
  return hand_off[static_cast<size_t>(to_device)].CostUs(idle_us);
}

void HostLatencyModel::PredictBatch(std::span<const OpConfig> configs, int device_index,
                                    std::span<double> out) const {
  if (configs.empty()) return;
  // Configurations the anchors cover first: the trees need not walk for them. One op's
  // subtasks are covered all or none (the op was timed or not), so a mixed batch is rare and
  // predicted one by one.
  std::vector<bool> covered(configs.size());
  size_t anchored = 0;
  for (size_t i = 0; i < configs.size(); ++i) {
    const std::optional<double> us = AnchoredUs(configs[i], device_index);
    if (!us) continue;
    out[i] = *us;
    covered[i] = true;
    ++anchored;
  }
  if (anchored == configs.size()) return;
  if (anchored > 0) {
    for (size_t i = 0; i < configs.size(); ++i) {
      if (!covered[i]) out[i] = TrainedUs(configs[i], device_index);
    }
    return;
  }
  const Device& device = devices_[static_cast<size_t>(device_index)];
  const gbdt::OpFamily family = gbdt::FamilyOf(configs.front());
  for (const OpConfig& c : configs) {
    if (gbdt::FamilyOf(c) != family) {
      LatencyModel::PredictBatch(configs, device_index, out);
      return;
    }
  }
  // One op's subtasks: the GBDT part walks its trees once for the whole batch.
  if (device.use_gbdt[static_cast<size_t>(family)]) {
    device.gbdt->PredictBatch(configs, 0, out);
  } else {
    analytic_->PredictBatch(configs, device_index, out);
  }
  for (double& us : out) us *= device.contention * device.in_run;
}

}  // namespace psched::predictor::host_model
