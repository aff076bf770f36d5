// `single:<device>`: every op, unpartitioned, on one named device in topological order
// (the paper's single-device rows). Plans with more than one active subtask are rejected:
// siblings cannot share a device. Immutable; thread-safe with one workspace per thread.
#pragma once

#include <string>

#include "scheduler/list_scheduler.h"

namespace psched::scheduler {

class SingleDeviceScheduler final : public ListScheduler {
 public:
  explicit SingleDeviceScheduler(std::string device) : device_(std::move(device)) {}
  std::string name() const override { return "single:" + device_; }

 protected:
  absl::Status PlaceAll(const Problem& problem, Workspace& workspace) const override;

 private:
  std::string device_;
};

}  // namespace psched::scheduler
