#include "calibration/op_timing/calibration_cases.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "calibration/op_timing/transformer_shapes.h"
#include "predictor/host_model/calibration_samples.h"

namespace psched::calibration {
namespace {

using model::OpKind;

std::string Category(const predictor::OpConfig& c) {
  switch (c.kind) {
    case OpKind::kConv2d:
      if (c.IsDepthwise()) return "conv_depthwise";
      if (c.window.stride_h > 1 || c.window.stride_w > 1) return "conv_strided";
      if (c.window.kernel_h == 1 && c.window.kernel_w == 1) return "conv_1x1";
      if (c.window.kernel_h == 3 && c.window.kernel_w == 3) return "conv_3x3";
      return "conv_other";
    case OpKind::kConvTranspose2d:
      return "conv_other";
    case OpKind::kFullyConnected:
      return "fully_connected";
    case OpKind::kMaxPool:
    case OpKind::kAvgPool:
    case OpKind::kGlobalAvgPool:
      return "pool";
    case OpKind::kAdd:
    case OpKind::kMul:
    case OpKind::kSub:
    case OpKind::kDiv:
    case OpKind::kActivation:
      return "elementwise";
    case OpKind::kConcat:
      return c.concat_copies ? "data_movement" : "concat";
    case OpKind::kMatMul:
      return "matmul";
    case OpKind::kTranspose:
    case OpKind::kReshape:
    case OpKind::kSlice:
      return "data_movement";
    case OpKind::kLayerNorm:
    case OpKind::kSoftmax:
    case OpKind::kReduce:
      return "normalization";
    default:
      return "other";
  }
}

model::ConstantId CopyConstant(const model::Graph& from, model::ConstantId id, model::Graph& to) {
  if (id == model::kInvalidId) return model::kInvalidId;
  to.constants.push_back(from.constants[static_cast<size_t>(id)]);
  return static_cast<model::ConstantId>(to.constants.size() - 1);
}

std::vector<int64_t> OnnxDims(const model::Tensor& t) {
  if (!t.channels_last && !t.dims.empty()) return t.dims;
  if (t.onnx_rank == 2) return {1, t.shape.c};
  return {1, t.shape.c, t.shape.h, t.shape.w};
}

}  // namespace

std::string ConfigKey(const predictor::OpConfig& config) {
  return predictor::host_model::OpConfigToJson(config).dump();
}

model::Graph ExtractOp(const model::Graph& graph, model::OpId id) {
  const model::Op& op = graph.op(id);
  model::Graph g;
  g.name = absl::StrCat(graph.name, "/op", id);
  g.has_weights = graph.has_weights;
  model::Op copy = op;
  copy.inputs.clear();
  std::map<model::TensorId, model::TensorId> mapped;
  for (model::TensorId t : op.inputs) {
    if (const auto it = mapped.find(t); it != mapped.end()) {
      copy.inputs.push_back(it->second);
      continue;
    }
    const model::Tensor& src = graph.tensor(t);
    model::Tensor tensor;
    tensor.name = src.name;
    tensor.shape = src.shape;
    tensor.onnx_rank = src.onnx_rank;
    tensor.dims = src.dims;
    tensor.channels_last = src.channels_last;
    const model::TensorId new_id = static_cast<model::TensorId>(g.tensors.size());
    if (src.constant != model::kInvalidId) {
      tensor.constant = CopyConstant(graph, src.constant, g);
    } else {
      g.inputs.push_back(model::GraphIO{new_id, src.name, OnnxDims(src)});
    }
    g.tensors.push_back(std::move(tensor));
    mapped[t] = new_id;
    copy.inputs.push_back(new_id);
  }
  if (auto* conv = std::get_if<model::ConvAttrs>(&copy.attrs)) {
    conv->filter = CopyConstant(graph, conv->filter, g);
    conv->bias = CopyConstant(graph, conv->bias, g);
  } else if (auto* fc = std::get_if<model::FullyConnectedAttrs>(&copy.attrs)) {
    fc->weight = CopyConstant(graph, fc->weight, g);
    fc->bias = CopyConstant(graph, fc->bias, g);
  } else if (auto* ln = std::get_if<model::LayerNormAttrs>(&copy.attrs)) {
    ln->scale = CopyConstant(graph, ln->scale, g);
    ln->bias = CopyConstant(graph, ln->bias, g);
  }
  const model::Tensor& out = graph.tensor(op.output);
  model::Tensor output;
  output.name = out.name;
  output.shape = out.shape;
  output.onnx_rank = out.onnx_rank;
  output.dims = out.dims;
  output.channels_last = out.channels_last;
  output.producer = 0;
  copy.output = static_cast<model::TensorId>(g.tensors.size());
  g.outputs.push_back(model::GraphIO{copy.output, out.name, OnnxDims(out)});
  g.tensors.push_back(std::move(output));
  g.ops.push_back(std::move(copy));
  return g;
}

std::vector<CalibrationCase> BuildCases(std::span<const model::Graph> models,
                                        const CaseOptions& options) {
  std::mt19937_64 rng(options.seed);
  std::map<std::string, std::vector<CalibrationCase>> by_category;
  std::set<std::string> seen;
  auto add = [&](CalibrationCase c, bool slice) {
    if (!seen.insert(ConfigKey(c.config)).second) return;
    c.category = slice ? absl::StrCat(Category(c.config), "/slice") : Category(c.config);
    by_category[c.category].push_back(std::move(c));
  };
  const std::set<std::string> priority_names(options.priority_models.begin(),
                                             options.priority_models.end());
  std::vector<const model::Graph*> ordered;
  for (const model::Graph& g : models) {
    if (priority_names.contains(g.name)) ordered.push_back(&g);
  }
  for (const model::Graph& g : models) {
    if (!priority_names.contains(g.name)) ordered.push_back(&g);
  }
  const std::vector<model::Graph> shapes =
      options.transformer_shapes ? TransformerShapeGraphs() : std::vector<model::Graph>{};
  for (const model::Graph& g : shapes) ordered.push_back(&g);
  for (const model::Graph* graph_ptr : ordered) {
    const model::Graph& graph = *graph_ptr;
    const bool priority = priority_names.contains(graph.name);
    const model::ConcatAliasing aliasing = model::AliasConcatInputs(graph);
    for (model::OpId id = 0; id < static_cast<model::OpId>(graph.ops.size()); ++id) {
      const predictor::OpConfig whole = predictor::WholeOpConfig(graph, id, aliasing);
      if (seen.contains(ConfigKey(whole))) continue;
      auto extracted = std::make_shared<const model::Graph>(ExtractOp(graph, id));
      const std::string where = absl::StrCat(graph.name, "/op ", id, " '", graph.op(id).name, "'");
      add(CalibrationCase{extracted, model::SplitAxis::kNone, 0, 1, whole, "", where, priority},
          false);
      if (!options.include_slices || !model::IsPartitionable(graph.op(id).kind)) continue;
      for (model::SplitAxis axis : {model::SplitAxis::kOutputChannels,
                                    model::SplitAxis::kInputChannels, model::SplitAxis::kRows}) {
        const int64_t work = model::WorkSize(graph, id, axis);
        if (work < 2) continue;
        // A quarter, half or three quarters of the work (all three for priority models);
        // spatial slices also start mid-way or end at the last row, where the halo is
        // clipped differently.
        std::vector<int64_t> quarters = {1, 2, 3};
        if (!priority) quarters = {std::uniform_int_distribution<int64_t>(1, 3)(rng)};
        for (int64_t q : quarters) {
          const int64_t size = std::max<int64_t>(1, work * q / 4);
          int64_t begin = 0;
          if (axis == model::SplitAxis::kRows) {
            const int64_t where_in = std::uniform_int_distribution<int64_t>(0, 2)(rng);
            begin = where_in == 0 ? 0 : where_in == 1 ? (work - size) / 2 : work - size;
          }
          const int64_t end = begin + size;
          add(CalibrationCase{extracted, axis, begin, end,
                              predictor::SubtaskConfig(whole, axis, begin, end), "",
                              absl::StrCat(where, " ", std::string(model::SplitAxisName(axis)), "[",
                                           begin, ",", end, ")"),
                              priority},
              true);
        }
      }
    }
  }
  std::vector<std::vector<CalibrationCase>*> queues;
  for (auto& [category, cases] : by_category) {
    std::shuffle(cases.begin(), cases.end(), rng);
    std::stable_partition(cases.begin(), cases.end(),
                          [](const CalibrationCase& c) { return c.priority; });
    queues.push_back(&cases);
  }
  std::vector<CalibrationCase> out;
  for (size_t round = 0;; ++round) {
    bool any = false;
    for (std::vector<CalibrationCase>* q : queues) {
      if (round < q->size()) {
        out.push_back(std::move((*q)[round]));
        any = true;
      }
    }
    if (!any) break;
  }
  return out;
}

}  // namespace psched::calibration
