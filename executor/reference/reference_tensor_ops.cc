#include "executor/reference/reference_tensor_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "executor/common/nd_index.h"

namespace psched::executor::reference::internal {
namespace {

using model::Graph;
using model::Op;
using model::OpKind;

// The data of each input of `op`: the next activation buffer, or the constant's values.
std::vector<const float*> Operands(const Graph& graph, const Op& op,
                                   std::span<const float* const> acts) {
  std::vector<const float*> data;
  size_t next = 0;
  for (model::TensorId t : op.inputs) {
    const model::Tensor& tensor = graph.tensor(t);
    data.push_back(tensor.constant == model::kInvalidId
                       ? acts[next++]
                       : graph.constants[static_cast<size_t>(tensor.constant)].data.data());
  }
  return data;
}

void Binary(const Graph& graph, const Op& op, const std::vector<const float*>& in, float* y) {
  const std::vector<int64_t> out = model::PhysicalDims(graph.tensor(op.output));
  const std::vector<int64_t> sa = BroadcastStrides(model::PhysicalDims(graph.tensor(op.inputs[0])), out);
  const std::vector<int64_t> sb = BroadcastStrides(model::PhysicalDims(graph.tensor(op.inputs[1])), out);
  std::vector<int64_t> offsets_b;
  ForEachOffset(out, sb, [&](int64_t o) { offsets_b.push_back(o); });
  size_t i = 0;
  ForEachOffset(out, sa, [&](int64_t oa) {
    const float a = in[0][oa];
    const float b = in[1][offsets_b[i]];
    float r = 0.0f;
    switch (op.kind) {
      case OpKind::kAdd:
        r = a + b;
        break;
      case OpKind::kMul:
        r = a * b;
        break;
      case OpKind::kSub:
        r = a - b;
        break;
      default:
        r = a / b;
        break;
    }
    y[i++] = r;
  });
}

void Transpose(const Op& op, const float* x, float* y) {
  const auto& t = std::get<model::TransposeAttrs>(op.attrs);
  const std::vector<int64_t> in_strides = RowMajorStrides(t.in_dims);
  std::vector<int64_t> out_dims, strides;
  for (int32_t p : t.perm) {
    out_dims.push_back(t.in_dims[static_cast<size_t>(p)]);
    strides.push_back(in_strides[static_cast<size_t>(p)]);
  }
  int64_t i = 0;
  ForEachOffset(out_dims, strides, [&](int64_t o) { y[i++] = x[o]; });
}

void Slice(const Graph& graph, const Op& op, const float* x, float* y) {
  const auto& s = std::get<model::SliceAttrs>(op.attrs);
  const std::vector<int64_t> in_strides = RowMajorStrides(model::PhysicalDims(graph.tensor(op.inputs[0])));
  int64_t base = 0;
  std::vector<int64_t> strides;
  for (size_t a = 0; a < in_strides.size(); ++a) {
    base += s.starts[a] * in_strides[a];
    strides.push_back(s.steps[a] * in_strides[a]);
  }
  int64_t i = 0;
  ForEachOffset(s.sizes, strides, [&](int64_t o) { y[i++] = x[base + o]; });
}

// C[b] = A[b] x B[b] for every batch index b of the output, operands broadcast over batch.
void MatMul(const Graph& graph, const Op& op, const std::vector<const float*>& in, float* y) {
  const std::vector<int64_t> a = model::PhysicalDims(graph.tensor(op.inputs[0]));
  const std::vector<int64_t> b = model::PhysicalDims(graph.tensor(op.inputs[1]));
  const std::vector<int64_t> out = model::PhysicalDims(graph.tensor(op.output));
  const int64_t m = a[a.size() - 2], k = a.back(), n = b.back();
  const std::vector<int64_t> batch(out.begin(), out.end() - 2);
  const std::vector<int64_t> sa = BroadcastStrides(std::vector<int64_t>(a.begin(), a.end() - 2), batch);
  const std::vector<int64_t> sb = BroadcastStrides(std::vector<int64_t>(b.begin(), b.end() - 2), batch);
  std::vector<int64_t> offsets_b;
  ForEachOffset(batch, sb, [&](int64_t o) { offsets_b.push_back(o); });
  size_t i = 0;
  ForEachOffset(batch, sa, [&](int64_t oa) {
    const float* pa = in[0] + oa * m * k;
    const float* pb = in[1] + offsets_b[i] * k * n;
    float* pc = y + static_cast<int64_t>(i) * m * n;
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t c = 0; c < n; ++c) {
        double acc = 0.0;
        for (int64_t j = 0; j < k; ++j) acc += double{pa[r * k + j]} * pb[j * n + c];
        pc[r * n + c] = static_cast<float>(acc);
      }
    }
    ++i;
  });
}

void LayerNorm(const Graph& graph, const Op& op, const float* x, float* y) {
  const auto& ln = std::get<model::LayerNormAttrs>(op.attrs);
  const model::Shape& s = graph.tensor(op.inputs[0]).shape;
  const int64_t n = model::PhysicalDims(graph.tensor(op.inputs[0])).back();
  const int64_t rows = s.Elements() / n;
  const float* scale = graph.constants[static_cast<size_t>(ln.scale)].data.data();
  const float* bias = ln.bias == model::kInvalidId
                          ? nullptr
                          : graph.constants[static_cast<size_t>(ln.bias)].data.data();
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * n;
    double mean = 0.0, var = 0.0;
    for (int64_t i = 0; i < n; ++i) mean += row[i];
    mean /= static_cast<double>(n);
    for (int64_t i = 0; i < n; ++i) var += (row[i] - mean) * (row[i] - mean);
    var /= static_cast<double>(n);
    const double inv = 1.0 / std::sqrt(var + ln.epsilon);
    for (int64_t i = 0; i < n; ++i) {
      y[r * n + i] = static_cast<float>((row[i] - mean) * inv * scale[i] + (bias ? bias[i] : 0.0));
    }
  }
}

void Reduce(const Graph& graph, const Op& op, const float* x, float* y) {
  const auto& r = std::get<model::ReduceAttrs>(op.attrs);
  const std::vector<int64_t> in = model::PhysicalDims(graph.tensor(op.inputs[0]));
  // Output strides over the input's axes: 0 along reduced axes.
  std::vector<int64_t> kept(in);
  for (int32_t a : r.axes) kept[static_cast<size_t>(a)] = 1;
  const std::vector<int64_t> out_strides = BroadcastStrides(kept, in);
  const int64_t out_count = model::ElementsOf(kept);
  std::vector<double> acc(static_cast<size_t>(out_count),
                          r.reduce == model::ReduceKind::kMax
                              ? -std::numeric_limits<double>::infinity()
                              : 0.0);
  int64_t i = 0;
  ForEachOffset(in, out_strides, [&](int64_t o) {
    double& a = acc[static_cast<size_t>(o)];
    a = r.reduce == model::ReduceKind::kMax ? std::max(a, double{x[i]}) : a + x[i];
    ++i;
  });
  const double count = static_cast<double>(model::ElementsOf(in) / out_count);
  for (int64_t o = 0; o < out_count; ++o) {
    const double v = acc[static_cast<size_t>(o)];
    y[o] = static_cast<float>(r.reduce == model::ReduceKind::kMean ? v / count : v);
  }
}

void Concat(const Graph& graph, const Op& op, const std::vector<const float*>& in, float* y) {
  const std::vector<int64_t> out = model::PhysicalDims(graph.tensor(op.output));
  const auto* attrs = std::get_if<model::ConcatAttrs>(&op.attrs);
  const size_t axis =
      attrs == nullptr || attrs->axis < 0 ? out.size() - 1 : static_cast<size_t>(attrs->axis);
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < axis; ++i) outer *= out[i];
  for (size_t i = axis + 1; i < out.size(); ++i) inner *= out[i];
  const int64_t out_row = out[axis] * inner;
  int64_t offset = 0;
  for (size_t t = 0; t < op.inputs.size(); ++t) {
    const int64_t row = model::PhysicalDims(graph.tensor(op.inputs[t]))[axis] * inner;
    for (int64_t o = 0; o < outer; ++o) {
      std::copy_n(in[t] + o * row, row, y + o * out_row + offset);
    }
    offset += row;
  }
}

}  // namespace

bool IsTensorKind(const Op& op) {
  switch (op.kind) {
    case OpKind::kAdd:
    case OpKind::kMul:
    case OpKind::kSub:
    case OpKind::kDiv:
    case OpKind::kTranspose:
    case OpKind::kReshape:
    case OpKind::kMatMul:
    case OpKind::kLayerNorm:
    case OpKind::kReduce:
    case OpKind::kSlice:
      return true;
    case OpKind::kConcat: {
      const auto* attrs = std::get_if<model::ConcatAttrs>(&op.attrs);
      return attrs != nullptr && attrs->axis >= 0;
    }
    default:
      return false;
  }
}

void RunTensorOp(const Graph& graph, model::OpId id, std::span<const float* const> acts,
                 float* output) {
  const Op& op = graph.op(id);
  const std::vector<const float*> in = Operands(graph, op, acts);
  switch (op.kind) {
    case OpKind::kTranspose:
      Transpose(op, in[0], output);
      break;
    case OpKind::kReshape:
      std::copy_n(in[0], graph.output_shape(id).Elements(), output);
      break;
    case OpKind::kMatMul:
      MatMul(graph, op, in, output);
      break;
    case OpKind::kLayerNorm:
      LayerNorm(graph, op, in[0], output);
      break;
    case OpKind::kReduce:
      Reduce(graph, op, in[0], output);
      break;
    case OpKind::kSlice:
      Slice(graph, op, in[0], output);
      break;
    case OpKind::kConcat:
      Concat(graph, op, in, output);
      break;
    default:
      Binary(graph, op, in, output);
      break;
  }
}

}  // namespace psched::executor::reference::internal
