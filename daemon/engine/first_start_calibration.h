// A daemon with no calibration for its devices plans with the analytic prior, which can be
// several times off on a given board (docs/calibration.md). FirstStartCalibration runs one
// short calibration in the background the first time there is something to time (a model
// registered, or one already stored at start), through `run` (Engine::Calibrate: through the
// inference queue, so no inference runs meanwhile, to the backend's Calibrate, which on the
// host runs calibration::RunPipeline, calibration/pipeline.h). Once it is done the daemon
// plans with the calibrated model; plans made before it are no longer served, so each model's
// next request replans. At most one run per daemon; a failed run is logged, not retried.
//
// Thread-safety: all methods are thread-safe. The destructor waits for a started run.
#pragma once

#include <functional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "daemon/engine/backend.h"
#include "sync/mutex.h"

namespace psched::daemon {

class FirstStartCalibration {
 public:
  // Calibrates, reporting progress through its argument; returns the predictor version the
  // daemon plans with afterwards.
  using RunFn = std::function<absl::StatusOr<std::string>(const CalibrationProgressFn&)>;

  // Empty `off_reason`: wanted, runs on the first Start. Otherwise State() says
  // "off (<off_reason>)" and Start does nothing.
  FirstStartCalibration(std::string off_reason, RunFn run);
  ~FirstStartCalibration();
  FirstStartCalibration(const FirstStartCalibration&) = delete;
  FirstStartCalibration& operator=(const FirstStartCalibration&) = delete;

  // Starts the run on a thread of its own unless it was started before or is off.
  void Start();
  // Waits for a started run to end.
  void Join();

  // One line for `pschedctl status`: "off (...)", "waiting for a model to time",
  // "running: cpu.0 1.2/2.0 s", "done: <predictor version>" or "failed: <why>".
  std::string State() const;

 private:
  void Run();

  const RunFn run_;
  mutable sync::Mutex mu_;
  std::string state_ ABSL_GUARDED_BY(mu_);
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // set once, by the first Start
  sync::Mutex join_mu_;  // one joiner at a time
};

}  // namespace psched::daemon
