#include "scheduler/single_device.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace psched::scheduler {

absl::Status SingleDeviceScheduler::PlaceAll(const Problem& problem, Workspace& ws) const {
  const std::optional<int> device = problem.platform().DeviceIndex(device_);
  if (!device.has_value()) {
    std::vector<std::string> names;
    for (const platform::DeviceSpec& d : problem.platform().devices) names.push_back(d.name);
    return absl::NotFoundError(absl::StrCat("single:", device_, ": platform '",
                                            problem.platform().name, "' has no device '", device_,
                                            "'; it has: ", absl::StrJoin(names, ", ")));
  }
  for (int t = 0; t < ws.graph.num_tasks(); ++t) {
    const OpId op = ws.graph.task(t).op;
    if (ws.SiblingOn(op, *device)) {
      return absl::InvalidArgumentError(absl::StrCat("single:", device_, ": op ", op, " (",
                                                     problem.op_name(op),
                                                     ") is split into several subtasks, which "
                                                     "cannot share one device"));
    }
    if (!problem.DeviceRuns(op, *device)) {
      return absl::FailedPreconditionError(
          absl::StrCat("single:", device_, ": op ", op, " (", problem.op_name(op), ") has no kernel on ",
                       device_, "; use a method that places ops on several devices"));
    }
    ws.Place(t, ws.EftOn(problem, t, *device));
  }
  return absl::OkStatus();
}

}  // namespace psched::scheduler
