// The interface every latency predictor implements: the estimated execution time of one
// (sub)operator configuration on one device of a platform, in microseconds, including any
// per-subtask dispatch/synchronisation overhead of that device (paper sec. 2.1).
//
// Implementations are immutable after construction and their const methods are
// thread-safe. Device indices refer to the platform the model was built for.
#pragma once

#include <span>
#include <string>

#include "predictor/op_config.h"

namespace psched::predictor {

class LatencyModel {
 public:
  virtual ~LatencyModel() = default;

  virtual int num_devices() const = 0;
  // REQUIRES: 0 <= device_index < num_devices().
  virtual double PredictUs(const OpConfig& config, int device_index) const = 0;
  // REQUIRES: out.size() == configs.size().
  virtual void PredictBatch(std::span<const OpConfig> configs, int device_index,
                            std::span<double> out) const;
  // Identifies the model and its parameters; part of the plan cache key.
  virtual std::string Version() const = 0;
};

}  // namespace psched::predictor
