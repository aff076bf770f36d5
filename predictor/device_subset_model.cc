#include "predictor/device_subset_model.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace psched::predictor {

absl::StatusOr<std::unique_ptr<DeviceSubsetModel>> DeviceSubsetModel::Create(
    std::shared_ptr<const LatencyModel> base, std::vector<int> devices) {
  if (devices.empty()) {
    return absl::InvalidArgumentError("a device subset needs at least one device");
  }
  for (int d : devices) {
    if (d < 0 || d >= base->num_devices()) {
      return absl::InvalidArgumentError(
          absl::StrCat("device index ", d, " is outside the ", base->num_devices(),
                       " devices of latency model ", base->Version()));
    }
  }
  return std::unique_ptr<DeviceSubsetModel>(
      new DeviceSubsetModel(std::move(base), std::move(devices)));
}

DeviceSubsetModel::DeviceSubsetModel(std::shared_ptr<const LatencyModel> base,
                                     std::vector<int> devices)
    : base_(std::move(base)), devices_(std::move(devices)) {
  version_ = absl::StrCat(base_->Version(), ";devices=", absl::StrJoin(devices_, ","));
}

double DeviceSubsetModel::PredictUs(const OpConfig& config, int device_index) const {
  return base_->PredictUs(config, devices_[static_cast<size_t>(device_index)]);
}

void DeviceSubsetModel::PredictBatch(std::span<const OpConfig> configs, int device_index,
                                     std::span<double> out) const {
  base_->PredictBatch(configs, devices_[static_cast<size_t>(device_index)], out);
}

double DeviceSubsetModel::SyncUs(int from_device, int to_device) const {
  return base_->SyncUs(devices_[static_cast<size_t>(from_device)],
                       devices_[static_cast<size_t>(to_device)]);
}

double DeviceSubsetModel::HandOffUs(int from_device, int to_device, double idle_us) const {
  return base_->HandOffUs(devices_[static_cast<size_t>(from_device)],
                          devices_[static_cast<size_t>(to_device)], idle_us);
}

}  // namespace psched::predictor
