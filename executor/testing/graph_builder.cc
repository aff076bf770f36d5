#include "executor/testing/graph_builder.h"

#include <random>
#include <utility>

#include "absl/strings/str_cat.h"

namespace psched::executor::testing {

GraphBuilder::GraphBuilder(std::string name) {
  graph_.name = std::move(name);
  graph_.has_weights = true;
}

model::TensorId GraphBuilder::AddInput(const model::Shape& shape) {
  const auto id = static_cast<model::TensorId>(graph_.tensors.size());
  model::Tensor t;
  t.name = absl::StrCat("input", graph_.inputs.size());
  t.shape = shape;
  graph_.tensors.push_back(t);
  graph_.inputs.push_back({id, t.name, {1, shape.c, shape.h, shape.w}});
  return id;
}

model::ConstantId GraphBuilder::AddConstant(std::vector<int64_t> dims, std::vector<float> data) {
  const auto id = static_cast<model::ConstantId>(graph_.constants.size());
  graph_.constants.push_back({absl::StrCat("const", id), std::move(dims), std::move(data)});
  return id;
}

model::TensorId GraphBuilder::AddConstantTensor(const model::Shape& shape,
                                                std::vector<float> data) {
  const model::ConstantId cid = AddConstant({shape.h, shape.w, shape.c}, std::move(data));
  const auto id = static_cast<model::TensorId>(graph_.tensors.size());
  model::Tensor t;
  t.name = absl::StrCat("const_tensor", id);
  t.shape = shape;
  t.constant = cid;
  graph_.tensors.push_back(t);
  return id;
}

model::TensorId GraphBuilder::AddOp(model::OpKind kind, std::vector<model::TensorId> inputs,
                                    const model::Shape& out_shape, model::OpAttrs attrs,
                                    model::Activation activation) {
  const auto op_id = static_cast<model::OpId>(graph_.ops.size());
  const auto out = static_cast<model::TensorId>(graph_.tensors.size());
  model::Tensor t;
  t.name = absl::StrCat("t", out);
  t.shape = out_shape;
  t.producer = op_id;
  graph_.tensors.push_back(t);
  model::Op op;
  op.name = absl::StrCat(std::string(model::OpKindName(kind)), op_id);
  op.kind = kind;
  op.inputs = std::move(inputs);
  op.output = out;
  op.activation = activation;
  op.attrs = std::move(attrs);
  graph_.ops.push_back(std::move(op));
  return out;
}

void GraphBuilder::MarkOutput(model::TensorId tensor) {
  const model::Shape& s = graph_.tensors[static_cast<size_t>(tensor)].shape;
  graph_.outputs.push_back(
      {tensor, graph_.tensors[static_cast<size_t>(tensor)].name, {1, s.c, s.h, s.w}});
}

model::Graph GraphBuilder::Build() { return std::exchange(graph_, model::Graph{}); }

std::vector<float> RandomVector(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

model::ConvAttrs RandomConv(GraphBuilder& b, int64_t cin, int64_t cout, int k, int stride,
                            int dilation, int pad, int groups, uint32_t seed) {
  model::ConvAttrs conv;
  conv.window = {.kernel_h = k,
                 .kernel_w = k,
                 .stride_h = stride,
                 .stride_w = stride,
                 .dilation_h = dilation,
                 .dilation_w = dilation,
                 .pad_top = pad,
                 .pad_left = pad,
                 .pad_bottom = pad,
                 .pad_right = pad};
  conv.groups = groups;
  const int64_t n = cout * k * k * (cin / groups);
  conv.filter = b.AddConstant({cout, k, k, cin / groups},
                              RandomVector(static_cast<size_t>(n), seed, -0.5f, 0.5f));
  conv.bias = b.AddConstant({cout}, RandomVector(static_cast<size_t>(cout), seed + 100));
  return conv;
}

}  // namespace psched::executor::testing
