#include "daemon/engine/first_start_calibration.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "spdlog/spdlog.h"

namespace psched::daemon {

FirstStartCalibration::FirstStartCalibration(std::string off_reason, RunFn run)
    : run_(std::move(run)) {
  sync::MutexLock lock(&mu_);
  if (off_reason.empty()) {
    state_ = "waiting for a model to time";
  } else {
    state_ = absl::StrCat("off (", off_reason, ")");
    started_ = true;  // never starts
  }
}

FirstStartCalibration::~FirstStartCalibration() { Join(); }

void FirstStartCalibration::Start() {
  {
    sync::MutexLock lock(&mu_);
    if (started_) return;
    started_ = true;
    state_ = "starting";
  }
  // Only the first Start gets here, so thread_ is written once, before any Join reads it
  // under join_mu_.
  sync::MutexLock lock(&join_mu_);
  thread_ = std::thread([this] { Run(); });
}

void FirstStartCalibration::Join() {
  sync::MutexLock lock(&join_mu_);
  if (thread_.joinable()) thread_.join();
}

std::string FirstStartCalibration::State() const {
  sync::MutexLock lock(&mu_);
  return state_;
}

void FirstStartCalibration::Run() {
  spdlog::info("first-start calibration: timing the devices in the background");
  auto progress = [this](const CalibrationProgressEvent& event) {
    sync::MutexLock lock(&mu_);
    state_ = event.finished ? absl::StrCat("running: ", event.device, " done, fitting")
                            : absl::StrFormat("running: %s %.1f/%.1f s", event.device,
                                              event.elapsed_s, event.budget_s);
  };
  absl::StatusOr<std::string> version = run_(progress);
  sync::MutexLock lock(&mu_);
  if (version.ok()) {
    state_ = absl::StrCat("done: ", *version);
    spdlog::info("first-start calibration done: planning with {}", *version);
  } else {
    state_ = absl::StrCat("failed: ", version.status().message());
    spdlog::warn("first-start calibration failed (plans keep the analytic prior; "
                 "`pschedctl calibrate` retries): {}",
                 std::string(version.status().message()));
  }
}

}  // namespace psched::daemon
