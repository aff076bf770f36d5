#include "predictor/gbdt/features.h"

#include <algorithm>
#include <array>

namespace psched::predictor::gbdt {
namespace {

using model::OpKind;

constexpr std::array<absl::string_view, kNumFamilies> kFamilyNames = {
    "conv",        "grouped_conv", "depthwise_conv", "fully_connected", "pool",         "global_pool",
    "concat",      "elementwise",  "matmul",         "data_movement",   "normalization"};

std::vector<std::string> Concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

const std::vector<std::string>& DispatchNames() {
  static const std::vector<std::string> names = {
      "kernel_class", "global_x", "global_y", "global_z", "local_x",     "local_y",
      "local_z",      "groups_x", "groups_y", "groups_z", "groups_total"};
  return names;
}

const std::vector<std::string>& BaseNames(OpFamily family) {
  static const std::vector<std::string> conv = {
      "in_h",     "in_w",        "out_h",    "out_w",     "in_c",   "out_c",
      "kernel_h", "kernel_w",    "stride_h", "stride_w",  "groups", "in_size",
      "out_size", "weight_size", "flops",    "accumulate"};
  static const std::vector<std::string> fc = {"in_h",        "in_w",  "out_h",     "out_w",
                                              "in_c",        "out_c", "in_size",   "out_size",
                                              "weight_size", "flops", "accumulate"};
  static const std::vector<std::string> pool = {
      "in_h",     "in_w",     "out_h",    "out_w",    "in_c",     "out_c", "in_size",
      "out_size", "kernel_h", "kernel_w", "stride_h", "stride_w", "is_max"};
  static const std::vector<std::string> other = {"in_h",       "in_w",   "out_h",   "out_w",
                                                 "in_c",       "out_c",  "in_size", "out_size",
                                                 "num_inputs", "op_kind"};
  static const std::vector<std::string> matmul = {"batch",    "m",        "n",        "k",
                                                  "lhs_size", "rhs_size", "out_size", "flops",
                                                  "bytes",    "rhs_shared"};
  // The extents plus the bytes moved (a slice reads only what it takes).
  static const std::vector<std::string> movement = {"in_h",    "in_w",     "out_h",      "out_w",
                                                    "in_c",    "out_c",    "in_size",    "out_size",
                                                    "bytes",   "num_inputs", "op_kind"};
  static const std::vector<std::string> normalization = {"rows", "reduced_length", "in_size",
                                                         "out_size", "flops", "op_kind"};
  switch (family) {
    case OpFamily::kConv:
    case OpFamily::kGroupedConv:
    case OpFamily::kDepthwiseConv:
      return conv;
    case OpFamily::kFullyConnected:
      return fc;
    case OpFamily::kPool:
      return pool;
    case OpFamily::kMatMul:
      return matmul;
    case OpFamily::kDataMovement:
      return movement;
    case OpFamily::kNormalization:
      return normalization;
    default:
      return other;
  }
}

struct Extents {
  double in_h = 1, in_w = 1, in_c = 0, in_size = 0;
  double out_h, out_w, out_c, out_size;
};

Extents ExtentsOf(const OpConfig& c) {
  Extents e;
  if (!c.inputs.empty()) {
    e.in_h = static_cast<double>(c.inputs[0].h + c.window.pad_top + c.window.pad_bottom);
    e.in_w = static_cast<double>(c.inputs[0].w + c.window.pad_left + c.window.pad_right);
  }
  for (const model::Shape& s : c.inputs) e.in_c += static_cast<double>(s.c);
  // The padded extent of the first input; other inputs (concat, element-wise) are unpadded.
  e.in_size = e.in_h * e.in_w * (c.inputs.empty() ? 0.0 : static_cast<double>(c.inputs[0].c));
  for (size_t i = 1; i < c.inputs.size(); ++i)
    e.in_size += static_cast<double>(c.inputs[i].Elements());
  e.out_h = static_cast<double>(c.output.h);
  e.out_w = static_cast<double>(c.output.w);
  e.out_c = static_cast<double>(c.output.c);
  e.out_size = static_cast<double>(c.output.Elements());
  return e;
}

}  // namespace

bool IsClassicFamily(OpFamily family) { return static_cast<int>(family) < kNumClassicFamilies; }

absl::string_view FamilyName(OpFamily family) { return kFamilyNames[static_cast<size_t>(family)]; }

std::optional<OpFamily> FamilyFromName(absl::string_view name) {
  for (OpFamily f : kAllFamilies) {
    if (FamilyName(f) == name) return f;
  }
  return std::nullopt;
}

OpFamily FamilyOf(const OpConfig& config) {
  switch (config.kind) {
    case OpKind::kConv2d:
      if (config.IsDepthwise()) return OpFamily::kDepthwiseConv;
      return config.groups > 1 ? OpFamily::kGroupedConv : OpFamily::kConv;
    case OpKind::kConvTranspose2d:
      return config.groups > 1 ? OpFamily::kGroupedConv : OpFamily::kConv;
    case OpKind::kFullyConnected:
      return OpFamily::kFullyConnected;
    case OpKind::kMaxPool:
      return OpFamily::kPool;
    case OpKind::kAvgPool:
      return IsWholeInputAverage(config) ? OpFamily::kGlobalPool : OpFamily::kPool;
    case OpKind::kGlobalAvgPool:
      return OpFamily::kGlobalPool;
    case OpKind::kConcat:
      return config.concat_copies ? OpFamily::kDataMovement : OpFamily::kConcat;
    case OpKind::kMatMul:
      return OpFamily::kMatMul;
    case OpKind::kTranspose:
    case OpKind::kReshape:
    case OpKind::kSlice:
      return OpFamily::kDataMovement;
    case OpKind::kLayerNorm:
    case OpKind::kSoftmax:
    case OpKind::kReduce:
      return OpFamily::kNormalization;
    case OpKind::kAdd:
    case OpKind::kMul:
    case OpKind::kSub:
    case OpKind::kDiv:
    case OpKind::kPad:
    case OpKind::kResize:
    case OpKind::kActivation:
    case OpKind::kFlatten:
      return OpFamily::kElementwise;
  }
  return OpFamily::kElementwise;
}

bool HasDispatchFeatures(OpFamily family) {
  return family == OpFamily::kConv || family == OpFamily::kGroupedConv ||
         family == OpFamily::kDepthwiseConv || family == OpFamily::kFullyConnected;
}

const std::vector<std::string>& FeatureNames(OpFamily family, bool gpu) {
  static const std::array<std::vector<std::string>, kNumFamilies> cpu = [] {
    std::array<std::vector<std::string>, kNumFamilies> names;
    for (OpFamily f : kAllFamilies) names[static_cast<size_t>(f)] = BaseNames(f);
    return names;
  }();
  static const std::array<std::vector<std::string>, kNumFamilies> with_dispatch = [] {
    std::array<std::vector<std::string>, kNumFamilies> names;
    for (OpFamily f : kAllFamilies) {
      names[static_cast<size_t>(f)] =
          HasDispatchFeatures(f) ? Concat(BaseNames(f), DispatchNames()) : BaseNames(f);
    }
    return names;
  }();
  return (gpu ? with_dispatch : cpu)[static_cast<size_t>(family)];
}

void ExtractFeatures(const OpConfig& c, OpFamily family, const DispatchFeatures* dispatch,
                     std::span<float> out) {
  const Extents e = ExtentsOf(c);
  size_t i = 0;
  auto put = [&](double v) { out[i++] = static_cast<float>(v); };
  if (family == OpFamily::kMatMul) {
    // A hand-made config without extents reads as one [rows, k] x [k, n] product.
    const MatMulDims d = c.matmul.batch > 0 ? c.matmul
                                            : MatMulDims{1, c.output.h * c.output.w, c.output.c,
                                                         c.inputs.empty() ? 1 : c.inputs[0].c,
                                                         1, 1};
    const double m = static_cast<double>(d.m), n = static_cast<double>(d.n),
                 k = static_cast<double>(d.k);
    put(static_cast<double>(d.batch));
    put(m);
    put(n);
    put(k);
    put(static_cast<double>(d.lhs_batch) * m * k);
    put(static_cast<double>(d.rhs_batch) * k * n);
    put(e.out_size);
    put(c.flops);
    put(c.bytes);
    put(d.rhs_batch == 1 && d.batch > 1 ? 1.0 : 0.0);
    return;
  }
  if (family == OpFamily::kNormalization) {
    // Layer norm and softmax reduce the last axis (the view's channels); a reduce maps its
    // input onto its output.
    const double reduced = c.kind == OpKind::kReduce
                               ? e.in_size / std::max(e.out_size, 1.0)
                               : (c.inputs.empty() ? 1.0 : static_cast<double>(c.inputs[0].c));
    put(e.in_size / std::max(reduced, 1.0));
    put(reduced);
    put(e.in_size);
    put(e.out_size);
    put(c.flops);
    put(static_cast<double>(c.kind));
    return;
  }
  put(e.in_h);
  put(e.in_w);
  put(e.out_h);
  put(e.out_w);
  put(e.in_c);
  put(e.out_c);
  switch (family) {
    case OpFamily::kConv:
    case OpFamily::kGroupedConv:
    case OpFamily::kDepthwiseConv: {
      const double groups = std::max(c.groups, 1);
      const double in_c = c.inputs.empty() ? 0.0 : static_cast<double>(c.inputs[0].c);
      put(c.window.kernel_h);
      put(c.window.kernel_w);
      put(c.window.stride_h);
      put(c.window.stride_w);
      put(groups);
      put(e.in_size);
      put(e.out_size);
      put(e.out_c * c.window.kernel_h * c.window.kernel_w * in_c / groups);
      put(c.flops);
      put(c.accumulate ? 1.0 : 0.0);
      break;
    }
    case OpFamily::kFullyConnected: {
      const double in_features =
          c.inputs.empty() ? 0.0 : static_cast<double>(c.inputs[0].Elements());
      put(in_features);
      put(e.out_size);
      put(in_features * e.out_size);
      put(c.flops);
      put(c.accumulate ? 1.0 : 0.0);
      break;
    }
    case OpFamily::kPool:
      put(e.in_size);
      put(e.out_size);
      put(c.window.kernel_h);
      put(c.window.kernel_w);
      put(c.window.stride_h);
      put(c.window.stride_w);
      put(c.kind == OpKind::kMaxPool ? 1.0 : 0.0);
      break;
    case OpFamily::kDataMovement:
      put(e.in_size);
      put(e.out_size);
      put(c.bytes);
      put(static_cast<double>(c.inputs.size()));
      put(static_cast<double>(c.kind));
      break;
    default:
      put(e.in_size);
      put(e.out_size);
      put(static_cast<double>(c.inputs.size()));
      put(static_cast<double>(c.kind));
      break;
  }
  if (dispatch != nullptr) {
    const std::array<int64_t, 3> counts = WorkGroupCounts(*dispatch);
    put(static_cast<double>(dispatch->kernel));
    for (int64_t g : dispatch->global) put(static_cast<double>(g));
    for (int64_t l : dispatch->local) put(static_cast<double>(l));
    for (int64_t n : counts) put(static_cast<double>(n));
    put(static_cast<double>(counts[0]) * static_cast<double>(counts[1]) *
        static_cast<double>(counts[2]));
  }
}

BaselineTerms BaselineTermsOf(const OpConfig& config) {
  return BaselineTerms{config.flops / 1e6, config.bytes / 1e6};
}

double Baseline::Us(const BaselineTerms& t) const {
  return std::max(kMinBaselineUs, us_per_mflop * t.mflops + us_per_mbyte * t.mbytes + constant_us);
}

}  // namespace psched::predictor::gbdt
