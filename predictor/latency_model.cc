#include "predictor/latency_model.h"

namespace psched::predictor {

void LatencyModel::PredictBatch(std::span<const OpConfig> configs, int device_index,
                                std::span<double> out) const {
  for (size_t i = 0; i < configs.size(); ++i) out[i] = PredictUs(configs[i], device_index);
}

}  // namespace psched::predictor
