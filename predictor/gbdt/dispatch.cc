#include "predictor/gbdt/dispatch.h"

#include <string>

#include "absl/strings/match.h"

namespace psched::predictor::gbdt {
namespace {

using model::OpKind;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool WinogradSuitable(const OpConfig& c) {
  if (c.kind != OpKind::kConv2d || c.groups != 1 || c.inputs.empty()) return false;
  const model::Window2d& w = c.window;
  if (w.kernel_h != 3 || w.kernel_w != 3 || w.stride_h != 1 || w.stride_w != 1 ||
      w.dilation_h != 1 || w.dilation_w != 1) {
    return false;
  }
  const int64_t tiles = CeilDiv(c.output.h, 4) * CeilDiv(c.output.w, 4);
  return CeilDiv(c.inputs[0].c, 4) >= 16 && CeilDiv(c.output.c, 4) >= 16 && tiles >= 32;
}

KernelClass TfliteKernel(const OpConfig& c, bool winograd) {
  switch (c.kind) {
    case OpKind::kConv2d: {
      const bool one_pixel_input = !c.inputs.empty() &&
                                   c.inputs[0].h + c.window.pad_top + c.window.pad_bottom == 1 &&
                                   c.inputs[0].w + c.window.pad_left + c.window.pad_right == 1;
      if (c.groups == 1 && c.window.kernel_h == 1 && c.window.kernel_w == 1 && one_pixel_input) {
        return KernelClass::kFullyConnected;
      }
      if (c.IsDepthwise()) return KernelClass::kDepthwise;
      if (c.groups > 1) return KernelClass::kGrouped;
      return winograd && WinogradSuitable(c) ? KernelClass::kWinograd : KernelClass::kDirect;
    }
    case OpKind::kConvTranspose2d:
      return c.groups > 1 ? KernelClass::kGrouped : KernelClass::kDirect;
    case OpKind::kFullyConnected:
      return KernelClass::kFullyConnected;
    case OpKind::kMaxPool:
      return KernelClass::kPooling;
    case OpKind::kAvgPool:
      return IsWholeInputAverage(c) ? KernelClass::kMean : KernelClass::kPooling;
    case OpKind::kGlobalAvgPool:
      return KernelClass::kMean;
    case OpKind::kConcat:
      return KernelClass::kConcat;
    default:
      return KernelClass::kElementwise;
  }
}

}  // namespace

DispatchFeatures TfliteGpuDispatchWithKernel(const OpConfig& c, KernelClass kernel) {
  DispatchFeatures d;
  d.kernel = kernel;
  const int64_t slices = CeilDiv(c.output.c, 4);
  switch (d.kernel) {
    case KernelClass::kWinograd:
      d.global = {CeilDiv(c.output.w, 4) * CeilDiv(c.output.h, 4), 1, slices};
      d.local = {32, 1, 1};
      break;
    case KernelClass::kFullyConnected:
    case KernelClass::kMean:
      d.global = {slices, 1, 1};
      d.local = {32, 1, 1};
      break;
    default:
      d.global = {c.output.w, c.output.h, slices};
      d.local = {8, 4, 1};
      break;
  }
  return d;
}

bool IsWholeInputAverage(const OpConfig& c) {
  if (c.kind != OpKind::kAvgPool || c.inputs.empty()) return false;
  const model::Shape& in = c.inputs[0];
  return c.output.h == 1 && c.output.w == 1 && c.window.kernel_h >= in.h &&
         c.window.kernel_w >= in.w;
}

std::array<int64_t, 3> WorkGroupCounts(const DispatchFeatures& d) {
  std::array<int64_t, 3> counts{};
  for (size_t i = 0; i < 3; ++i) counts[i] = d.local[i] > 0 ? CeilDiv(d.global[i], d.local[i]) : 0;
  return counts;
}

DispatchFeatures TfliteGpuDispatch(const OpConfig& config) {
  return TfliteGpuDispatchWithKernel(config, TfliteKernel(config, false));
}

DispatchFeatures TfliteGpuWinogradDispatch(const OpConfig& config) {
  return TfliteGpuDispatchWithKernel(config, TfliteKernel(config, true));
}

bool IsTfliteScheme(absl::string_view name) {
  return name == "tflite-gpu" || name == "tflite-gpu-winograd";
}

std::optional<DispatchFn> BuiltinDispatchScheme(absl::string_view name) {
  if (name == "tflite-gpu") return &TfliteGpuDispatch;
  if (name == "tflite-gpu-winograd") return &TfliteGpuWinogradDispatch;
  return std::nullopt;
}

std::optional<KernelClass> KernelClassFromTfliteName(absl::string_view name) {
  // Longest prefixes first: "convolution_2d_grouped" starts with "convolution_2d".
  static constexpr std::pair<absl::string_view, KernelClass> kPrefixes[] = {
      {"convolution_winograd", KernelClass::kWinograd},
      {"convolution_2d_grouped", KernelClass::kGrouped},
      {"convolution_2d", KernelClass::kDirect},
      {"depthwise_conv", KernelClass::kDepthwise},
      {"fully_connected", KernelClass::kFullyConnected},
      {"pooling_2d", KernelClass::kPooling},
      {"mean", KernelClass::kMean},
      {"concat", KernelClass::kConcat},
  };
  for (const auto& [prefix, kernel] : kPrefixes) {
    if (name.substr(0, prefix.size()) == prefix) return kernel;
  }
  return std::nullopt;
}

}  // namespace psched::predictor::gbdt
