#include "model/synthetic_weights.h"

#include <cmath>
#include <string_view>

namespace psched::model {
namespace {

uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : s) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

// SplitMix64: a tiny, well-mixed generator whose stream is fixed by its seed.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi).
  float Uniform(float lo, float hi) {
    const double unit = static_cast<double>(Next() >> 11) * 0x1.0p-53;
    return static_cast<float>(lo + (hi - lo) * unit);
  }

 private:
  uint64_t state_;
};

void Fill(uint64_t seed, float lo, float hi, Constant* c) {
  if (!c->data.empty()) return;
  SplitMix64 rng(seed ^ Fnv1a(c->name));
  c->data.resize(static_cast<size_t>(c->Elements()));
  for (float& v : c->data) v = rng.Uniform(lo, hi);
}

bool IsRectifier(const Activation& a) {
  return a.kind == ActivationKind::kRelu || (a.kind == ActivationKind::kClip && a.min == 0.0f);
}

}  // namespace

void SynthesizeWeights(uint64_t seed, Graph* graph) {
  auto constant = [&](ConstantId id) -> Constant* {
    return id == kInvalidId ? nullptr : &graph->constants[static_cast<size_t>(id)];
  };
  for (const Op& op : graph->ops) {
    const float gain = IsRectifier(op.activation) ? std::sqrt(2.0f) : 1.0f;
    ConstantId weight = kInvalidId, bias = kInvalidId;
    if (const auto* conv = std::get_if<ConvAttrs>(&op.attrs)) {
      weight = conv->filter;
      bias = conv->bias;
    } else if (const auto* fc = std::get_if<FullyConnectedAttrs>(&op.attrs)) {
      weight = fc->weight;
      bias = fc->bias;
    }
    if (Constant* w = constant(weight)) {
      // OHWI and [out][in] both keep one output channel's fan-in contiguous.
      const int64_t fan_in = w->Elements() / std::max<int64_t>(1, w->dims[0]);
      const float limit = gain * std::sqrt(3.0f / static_cast<float>(std::max<int64_t>(1, fan_in)));
      Fill(seed, -limit, limit, w);
    }
    if (Constant* b = constant(bias)) Fill(seed, -0.05f, 0.05f, b);
    for (TensorId t : op.inputs) {
      Constant* operand = constant(graph->tensor(t).constant);
      if (operand == nullptr) continue;
      if (op.kind == OpKind::kMul) {
        Fill(seed, 0.5f, 1.0f, operand);
      } else {
        Fill(seed, -0.05f, 0.05f, operand);
      }
    }
  }
  // Anything no op references (there should be none after canonicalisation) gets small values.
  for (Constant& c : graph->constants) Fill(seed, -0.05f, 0.05f, &c);
  graph->has_weights = true;
}

}  // namespace psched::model
