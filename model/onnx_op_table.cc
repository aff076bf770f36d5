#include "model/onnx_op_table.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace psched::model {

const std::vector<OnnxOpSupport>& SupportedOnnxOps() {
  static const auto* ops = [] {
    constexpr std::string_view kBinary =
        "numpy broadcasting between tensors of rank 1-6, or with a float32 constant";
    constexpr std::string_view kUnary = "any tensor; fused into the producer where it can be";
    constexpr std::string_view kMask = "constant inputs only (masks, shape arithmetic)";
    auto* v = new std::vector<OnnxOpSupport>{
        {"Abs", "activation", kUnary},
        {"Add", "add", kBinary},
        {"And", "folded", kMask, true},
        {"AveragePool", "avg_pool",
         "2-D on [1,C,H,W]; pads, strides, ceil_mode, count_include_pad"},
        {"BatchNormalization", "folded, or mul + add", "inference mode"},
        {"Cast", "nothing, or folded", "to float on tensors; float, int and bool on constants"},
        {"Ceil", "folded", kMask, true},
        {"Clip", "activation (fused)", "bounds from attributes or constant inputs"},
        {"Concat", "concat", "any axis; constants of any rank are folded"},
        {"Constant", "folded", "value, value_float(s), value_int(s)"},
        {"ConstantOfShape", "folded", "a constant shape"},
        {"Conv", "conv2d",
         "1-D on [1,C,L] (as height 1) and 2-D on [1,C,H,W]; groups, strides, dilations, pads, "
         "auto_pad; constant weights"},
        {"ConvTranspose", "conv_transpose2d",
         "2-D on [1,C,H,W]; group, strides, dilations, pads, output_padding, output_shape, "
         "auto_pad; constant weights"},
        {"Div", "div", kBinary},
        {"Dropout", "nothing", "inference mode, or training mode with ratio 0"},
        {"Einsum", "transpose + reshape + matmul",
         "two operands; letters only: no ellipsis, diagonal or sum within one operand"},
        {"Equal", "folded", kMask, true},
        {"Erf", "activation", kUnary},
        {"Exp", "activation", kUnary},
        {"Expand", "reshape, or add of zeros", "a constant shape"},
        {"Flatten", "flatten, reshape or nothing", "any axis"},
        {"Floor", "folded", kMask, true},
        {"Gather", "slice, or folded",
         "one constant scalar index on a tensor; any constant indices on constants"},
        {"Gelu", "activation", "approximate='none'"},
        {"Gemm", "fully_connected", "A computed [rows,K], no transA; B constant; C [N] or scalar"},
        {"GlobalAveragePool", "global_avg_pool", "[1,C,H,W]"},
        {"Greater", "folded", kMask, true},
        {"GreaterOrEqual", "folded", kMask, true},
        {"HardSigmoid", "activation (fused)", ""},
        {"HardSwish", "activation (fused)", ""},
        {"Identity", "nothing", ""},
        {"LayerNormalization", "layer_norm", "over the last axis; constant scale and bias"},
        {"Less", "folded", kMask, true},
        {"LessOrEqual", "folded", kMask, true},
        {"Log", "activation", kUnary},
        {"MatMul", "fully_connected, or matmul",
         "constant B: fully-connected over rows; computed B: batched with broadcast; two "
         "constants are folded"},
        {"Max", "folded", kMask, true},
        {"MaxPool", "max_pool", "2-D; dilations, ceil_mode; the Indices output unused"},
        {"Min", "folded", kMask, true},
        {"Mod", "folded", kMask, true},
        {"Mul", "mul", kBinary},
        {"Neg", "activation", kUnary},
        {"Not", "folded", kMask, true},
        {"Or", "folded", kMask, true},
        {"Pad", "pad", "constant mode; pads on H, W and C of an image, not N; no axes input"},
        {"Pow", "activation", "a constant scalar exponent; two constants are folded"},
        {"Range", "folded", kMask, true},
        {"Reciprocal", "activation", kUnary},
        {"ReduceL2", "mul + reduce + activation", "any axes, keepdims"},
        {"ReduceMax", "reduce", "any axes, keepdims"},
        {"ReduceMean", "reduce, or global_avg_pool",
         "any axes, keepdims; H and W of an image is a pool"},
        {"ReduceSum", "reduce", "any axes, keepdims"},
        {"Relu", "activation (fused)", ""},
        {"Reshape", "reshape or nothing", "a constant shape with 0 and -1; rank 1-6"},
        {"Resize", "resize",
         "[1,C,H,W]; nearest or linear; scales or sizes; half_pixel, asymmetric, align_corners, "
         "pytorch_half_pixel"},
        {"ScatterND", "folded", kMask, true},
        {"Shape", "folded", "start and end"},
        {"Sigmoid", "activation (fused)", ""},
        {"Sign", "folded", kMask, true},
        {"Slice", "slice, or folded", "constant starts, ends, axes, steps (negative too)"},
        {"Softmax", "softmax", "over the last axis (channels of an image)"},
        {"Split", "slice", "any axis; constant split sizes or equal parts"},
        {"Sqrt", "activation", kUnary},
        {"Squeeze", "reshape or nothing", "axes as attribute or constant input"},
        {"Sub", "sub", kBinary},
        {"Tanh", "activation", kUnary},
        {"Transpose", "transpose, or folded", "any permutation of rank 1-6"},
        {"Unsqueeze", "reshape or nothing", "axes as attribute or constant input"},
        {"Upsample", "resize", "opsets 7 and 9: asymmetric, nearest floor or linear"},
        {"Where", "mul + add, or folded", "a constant condition (masked_fill)"},
        {"Xor", "folded", kMask, true},
    };
    std::sort(v->begin(), v->end(),
              [](const OnnxOpSupport& a, const OnnxOpSupport& b) { return a.op_type < b.op_type; });
    return v;
  }();
  return *ops;
}

std::string OnnxOpTableMarkdown() {
  std::string out = "| ONNX op | becomes | supported |\n| --- | --- | --- |\n";
  for (const OnnxOpSupport& op : SupportedOnnxOps()) {
    absl::StrAppend(&out, "| ", std::string(op.op_type), " | ", std::string(op.becomes), " | ",
                    std::string(op.limits), " |\n");
  }
  return out;
}

}  // namespace psched::model
