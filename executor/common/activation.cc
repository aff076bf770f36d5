#include "executor/common/activation.h"

#include <algorithm>
#include <cmath>

namespace psched::executor {

float ApplyActivation(const model::Activation& activation, float x) {
  switch (activation.kind) {
    case model::ActivationKind::kNone:
      return x;
    case model::ActivationKind::kRelu:
      return x > 0.0f ? x : 0.0f;
    case model::ActivationKind::kClip:
      return std::min(std::max(x, activation.min), activation.max);
    case model::ActivationKind::kSigmoid:
      return 1.0f / (1.0f + std::exp(-x));
    case model::ActivationKind::kHardSigmoid:
      return std::clamp(activation.alpha * x + activation.beta, 0.0f, 1.0f);
    case model::ActivationKind::kHardSwish:
      return x * std::clamp(x / 6.0f + 0.5f, 0.0f, 1.0f);
    case model::ActivationKind::kSilu:
      return x / (1.0f + std::exp(-x));
    case model::ActivationKind::kGelu:
      return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f));
    case model::ActivationKind::kTanh:
      return std::tanh(x);
    case model::ActivationKind::kErf:
      return std::erf(x);
    case model::ActivationKind::kExp:
      return std::exp(x);
    case model::ActivationKind::kLog:
      return std::log(x);
    case model::ActivationKind::kSqrt:
      return std::sqrt(x);
    case model::ActivationKind::kReciprocal:
      return 1.0f / x;
    case model::ActivationKind::kNeg:
      return -x;
    case model::ActivationKind::kAbs:
      return std::fabs(x);
    case model::ActivationKind::kPow:
      return activation.alpha == 2.0f ? x * x : std::pow(x, activation.alpha);
  }
  return x;
}

void ApplyActivationInPlace(const model::Activation& activation, const TensorView& view) {
  if (activation.kind == model::ActivationKind::kNone) return;
  for (int64_t h = 0; h < view.shape.h; ++h) {
    for (int64_t w = 0; w < view.shape.w; ++w) {
      float* p = view.pixel(h, w);
      for (int64_t c = 0; c < view.shape.c; ++c) {
        p[c] = ApplyActivation(activation, p[c]);
      }
    }
  }
}

}  // namespace psched::executor
