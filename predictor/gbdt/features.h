// The op families GBDT latency models are trained for and the features each one sees (paper
// sec. 5.4 and its appendix feature table).
//
// One regressor per (family x device). Dense, grouped and depthwise convolutions are
// families of their own: TFLite and XNNPACK run them through different kernels whose cost
// per FLOP differs by up to an order of magnitude, which matters most where only
// whole-model totals constrain the fit. Features follow the paper's table: input/output
// height, width and channels, input/output sizes, kernel shape and stride, group count,
// filter (weight) size and FLOPs for convolutions; the same without kernel terms for fully
// connected; kernel and stride for pooling; shapes and sizes for everything else. GPU models
// of convolution and fully-connected ops add the dispatch features (dispatch.h). psched adds
// `accumulate` (an input-channel partial sum, which also reads the output back) and, for
// families that pool several op kinds, the kind itself.
//
// The transformer kinds get three families. A MatMul between computed tensors (attention's
// Q.K^T and A.V) is a batched GEMM whose cost follows batch, M, N and K, which no other
// family's layout carries. Data movement (transpose, reshape, slice, a concat that copies)
// does no arithmetic: its time is bytes moved and the access pattern. Normalisation (layer
// norm, softmax, reduce) makes two or three passes over rows of a reduced length, which sets
// its cost beside the element count. Model files written before these families existed have
// no section for them; a family a file lacks is predicted by an analytic roofline
// (gbdt_latency_model.h), so `kClassicFamilies` are the ones every file must cover.
//
// Heights and widths of inputs are the *padded* extents (input rows + top and bottom
// padding): the phone data records convolutions after an explicit PAD op, so the input a
// kernel reads is the padded one either way.
//
// A model predicts log(latency / baseline) where baseline = a * MFLOP + b * MB + c is a
// per-(family, device) linear cost in the op's FLOPs and bytes (OpConfig::flops, bytes):
// within one tree leaf the prediction then scales with the work, so a partition's smaller
// subtasks get proportionally smaller predictions instead of the step function a raw
// regression would give, while kernel switches still show as jumps between leaves.
// Everything here is pure and thread-safe.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "predictor/gbdt/dispatch.h"
#include "predictor/op_config.h"

namespace psched::predictor::gbdt {

enum class OpFamily : uint8_t {
  kConv,            // conv2d, dense (groups == 1)
  kGroupedConv,     // conv2d with 1 < groups and more than one input channel per group
  kDepthwiseConv,   // conv2d with one input channel per group (OpConfig::IsDepthwise)
  kFullyConnected,  // fully_connected
  kPool,            // max_pool, avg_pool with a sliding window
  kGlobalPool,      // global_avg_pool, and an avg_pool over the whole input
  kConcat,          // concat
  kElementwise,     // add, mul, sub, div, pad, resize, activation, flatten
  kMatMul,          // matmul (both operands computed, or a constant one)
  kDataMovement,    // transpose, reshape, slice, concat along another axis than the channels
  kNormalization,   // layer_norm, softmax, reduce
};
inline constexpr int kNumFamilies = 11;
inline constexpr OpFamily kAllFamilies[] = {
    OpFamily::kConv,          OpFamily::kGroupedConv,  OpFamily::kDepthwiseConv,
    OpFamily::kFullyConnected, OpFamily::kPool,        OpFamily::kGlobalPool,
    OpFamily::kConcat,        OpFamily::kElementwise,  OpFamily::kMatMul,
    OpFamily::kDataMovement,  OpFamily::kNormalization};
// The families of the CNN kinds: a model file covers each with a model or a fallback.
inline constexpr int kNumClassicFamilies = 8;
bool IsClassicFamily(OpFamily family);

// "conv", "grouped_conv", "depthwise_conv", "fully_connected", "pool", "global_pool", "concat",
// "elementwise", "matmul", "data_movement", "normalization".
absl::string_view FamilyName(OpFamily family);
std::optional<OpFamily> FamilyFromName(absl::string_view name);
OpFamily FamilyOf(const OpConfig& config);

// Whether a family's GPU models carry the dispatch features (convolutions and linear ops, as
// in the paper's table).
bool HasDispatchFeatures(OpFamily family);

// The feature names of a family's model, in column order; GPU models of families with
// dispatch features append those. Model files list these names and are refused when they
// differ, so a model is never evaluated on a different layout.
const std::vector<std::string>& FeatureNames(OpFamily family, bool gpu);

// Writes the features of `config` for a `family` model.
// REQUIRES: out.size() == FeatureNames(family, dispatch != nullptr).size(); `dispatch` is
// non-null exactly for GPU models of families with dispatch features.
void ExtractFeatures(const OpConfig& config, OpFamily family, const DispatchFeatures* dispatch,
                     std::span<float> out);

// The baseline's inputs: FLOPs in millions and bytes in millions.
struct BaselineTerms {
  double mflops = 0;
  double mbytes = 0;
};
BaselineTerms BaselineTermsOf(const OpConfig& config);

// a * mflops + b * mbytes + c, in microseconds; never below kMinBaselineUs so the log target
// stays finite.
struct Baseline {
  double us_per_mflop = 0;
  double us_per_mbyte = 0;
  double constant_us = 0;
  double Us(const BaselineTerms& t) const;
};
inline constexpr double kMinBaselineUs = 0.01;

}  // namespace psched::predictor::gbdt
