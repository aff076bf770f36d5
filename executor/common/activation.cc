#include "executor/common/activation.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace psched::executor {
namespace {

// e^x for x in [-87.3, 88.7] (callers clamp), to about 2 ulp: x = n ln 2 + r with |r| <= ln2/2,
// e^r by a degree-6 polynomial, 2^n put into the exponent bits. Plain arithmetic and bit casts,
// so the loops below vectorize; std::exp is a scalar call per element and cost a whole model
// its activation passes (a SiLU pass over efficientnet_b0's tensors took 3-4 ns per float).
inline float FastExp(float x) {
  // Round to nearest by the 1.5 * 2^23 shifter: plain adds, which every vector unit has.
  const float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = x - n * 0.693359375f;  // ln 2 in two parts, so r keeps its low bits
  r = r - n * -2.12194440e-4f;
  float p = 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return p * scale;
}

inline float FastSigmoid(float x) {
  const float e = FastExp(std::clamp(-x, -87.0f, 88.0f));
  return 1.0f / (1.0f + e);
}

// erf(x) to 1.5e-7 absolute (Abramowitz and Stegun 7.1.26), branch-free so it vectorizes.
inline float FastErf(float x) {
  const float z = std::fabs(x);
  const float t = 1.0f / (1.0f + 0.3275911f * z);
  float p = 1.061405429f;
  p = p * t - 1.453152027f;
  p = p * t + 1.421413741f;
  p = p * t - 0.284496736f;
  p = p * t + 0.254829592f;
  const float e = 1.0f - p * t * FastExp(std::max(-z * z, -87.0f));
  return std::copysign(e, x);
}

// One row of `n` contiguous floats. The kind is switched on once per row, and each case is a
// loop the compiler vectorizes; on x86 it is built for AVX-512, AVX2 and the baseline, and the
// loader picks the widest the core has. Not with clang: its builds here are the sanitizer and
// analysis ones, where the loader would run the instrumented ifunc resolver before the
// sanitizer's runtime is up (a crash at load under ThreadSanitizer).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void ActivateRow(const model::Activation& a, float* p, int64_t n) {
  switch (a.kind) {
    case model::ActivationKind::kRelu:
      for (int64_t i = 0; i < n; ++i) p[i] = std::max(p[i], 0.0f);
      return;
    case model::ActivationKind::kClip: {
      const float lo = a.min, hi = a.max;
      for (int64_t i = 0; i < n; ++i) p[i] = std::min(std::max(p[i], lo), hi);
      return;
    }
    case model::ActivationKind::kSigmoid:
      for (int64_t i = 0; i < n; ++i) p[i] = FastSigmoid(p[i]);
      return;
    case model::ActivationKind::kSilu:
      for (int64_t i = 0; i < n; ++i) p[i] = p[i] * FastSigmoid(p[i]);
      return;
    case model::ActivationKind::kHardSigmoid: {
      const float alpha = a.alpha, beta = a.beta;
      for (int64_t i = 0; i < n; ++i) p[i] = std::clamp(alpha * p[i] + beta, 0.0f, 1.0f);
      return;
    }
    case model::ActivationKind::kHardSwish:
      for (int64_t i = 0; i < n; ++i) {
        p[i] = p[i] * std::clamp(p[i] * (1.0f / 6.0f) + 0.5f, 0.0f, 1.0f);
      }
      return;
    case model::ActivationKind::kTanh:
      // 1 - 2 / (e^2x + 1): exact to 1e-7 absolute, which near 0 is not 1 ulp (tanh x ~ x).
      for (int64_t i = 0; i < n; ++i) {
        p[i] = 1.0f - 2.0f / (FastExp(std::clamp(2.0f * p[i], -87.0f, 88.0f)) + 1.0f);
      }
      return;
    case model::ActivationKind::kGelu:
      for (int64_t i = 0; i < n; ++i) {
        p[i] = 0.5f * p[i] * (1.0f + FastErf(p[i] * 0.70710678118654752f));
      }
      return;
    default:
      for (int64_t i = 0; i < n; ++i) p[i] = ApplyActivation(a, p[i]);
      return;
  }
}

}  // namespace

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
  if (view.pixel_stride == view.shape.c) {
    ActivateRow(activation, view.data, view.shape.h * view.shape.w * view.shape.c);
    return;
  }
  for (int64_t h = 0; h < view.shape.h; ++h) {
    for (int64_t w = 0; w < view.shape.w; ++w) {
      ActivateRow(activation, view.pixel(h, w), view.shape.c);
    }
  }
}

}  // namespace psched::executor
