// GraphBuilder: assembles a model::Graph by hand for executor tests.
//
// Tests describe tiny graphs op by op (inputs, output shape, attrs) instead of importing
// ONNX, so each test states exactly what it computes. Not thread-safe; Build() moves the
// graph out and leaves the builder empty.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/graph.h"

namespace psched::executor::testing {

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string name = "test");

  // A graph input of the given NHWC shape (declared to ONNX as [1, C, H, W]).
  model::TensorId AddInput(const model::Shape& shape);
  // A weight constant; returns its id for ConvAttrs / FullyConnectedAttrs.
  model::ConstantId AddConstant(std::vector<int64_t> dims, std::vector<float> data);
  // A constant operand tensor (NHWC data) for kAdd / kMul / kSub.
  model::TensorId AddConstantTensor(const model::Shape& shape, std::vector<float> data);
  // Appends an op producing a new tensor of `out_shape`; returns that tensor.
  model::TensorId AddOp(model::OpKind kind, std::vector<model::TensorId> inputs,
                        const model::Shape& out_shape, model::OpAttrs attrs = {},
                        model::Activation activation = {});
  void MarkOutput(model::TensorId tensor);

  model::Graph Build();

 private:
  model::Graph graph_;
};

// `n` values uniformly drawn from [lo, hi) with a fixed seed.
std::vector<float> RandomVector(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f);

// Attributes of a square `k`x`k` conv from `cin` to `cout` channels with symmetric padding,
// its filter (in [-0.5, 0.5)) and bias added to `b` as seeded random constants.
model::ConvAttrs RandomConv(GraphBuilder& b, int64_t cin, int64_t cout, int k, int stride,
                            int dilation, int pad, int groups, uint32_t seed);

}  // namespace psched::executor::testing
