#include "calibration/op_timing/transformer_shapes.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace psched::calibration {
namespace {

using model::OpKind;
using Dims = std::vector<int64_t>;

// Builds a graph of independent ops over row-major tensors.
class ShapeGraph {
 public:
  explicit ShapeGraph(std::string name) { g_.name = std::move(name); }

  model::TensorId Input(const Dims& dims) {
    const model::TensorId id = Tensor(dims);
    g_.inputs.push_back(model::GraphIO{id, g_.tensors[static_cast<size_t>(id)].name, dims});
    return id;
  }

  model::ConstantId Constant(const Dims& dims) {
    model::Constant c;
    c.name = absl::StrCat("c", g_.constants.size());
    c.dims = dims;
    g_.constants.push_back(std::move(c));
    return static_cast<model::ConstantId>(g_.constants.size() - 1);
  }

  void Op(std::string name, OpKind kind, const std::vector<Dims>& inputs, const Dims& out,
          model::OpAttrs attrs = {},
          model::ActivationKind activation = model::ActivationKind::kNone) {
    model::Op op;
    op.name = std::move(name);
    op.kind = kind;
    op.attrs = std::move(attrs);
    op.activation.kind = activation;
    for (const Dims& d : inputs) op.inputs.push_back(Input(d));
    op.output = Tensor(out);
    g_.tensors[static_cast<size_t>(op.output)].producer = static_cast<model::OpId>(g_.ops.size());
    g_.outputs.push_back(
        model::GraphIO{op.output, g_.tensors[static_cast<size_t>(op.output)].name, out});
    g_.ops.push_back(std::move(op));
  }

  void FullyConnected(std::string name, int64_t rows, int64_t in, int64_t out) {
    model::FullyConnectedAttrs fc{Constant({out, in}), Constant({out})};
    Op(std::move(name), OpKind::kFullyConnected, {{rows, in}}, {rows, out}, fc);
  }

  model::Graph Take() { return std::move(g_); }

 private:
  model::TensorId Tensor(const Dims& dims) {
    model::Tensor t;
    t.name = absl::StrCat("t", g_.tensors.size());
    t.dims = dims;
    t.channels_last = false;
    t.shape = model::ViewOf(dims, false);
    t.onnx_rank = static_cast<int32_t>(dims.size());
    g_.tensors.push_back(std::move(t));
    return static_cast<model::TensorId>(g_.tensors.size() - 1);
  }

  model::Graph g_;
};

// One attention block over `windows` windows of `tokens` tokens of `channels` = heads x
// head_dim, with an MLP of `mlp` hidden channels.
void AttentionBlock(ShapeGraph& g, const std::string& tag, int64_t windows, int64_t tokens,
                    int64_t heads, int64_t head_dim, int64_t mlp) {
  const int64_t c = heads * head_dim;
  const int64_t rows = windows * tokens;
  const int64_t b = windows * heads;
  g.Op(tag + "/norm", OpKind::kLayerNorm, {{windows, tokens, c}}, {windows, tokens, c},
       model::LayerNormAttrs{1e-6f, g.Constant({c}), g.Constant({c})});
  g.FullyConnected(tag + "/qkv", rows, c, 3 * c);
  g.Op(tag + "/qkv_split", OpKind::kTranspose, {{rows, 3 * c}},
       {3, windows, heads, tokens, head_dim},
       model::TransposeAttrs{{windows, tokens, 3, heads, head_dim}, {2, 0, 3, 1, 4}});
  g.Op(tag + "/q", OpKind::kSlice, {{3, b, tokens, head_dim}}, {b, tokens, head_dim},
       model::SliceAttrs{{0, 0, 0, 0}, {1, 1, 1, 1}, {1, b, tokens, head_dim}});
  g.Op(tag + "/k_t", OpKind::kTranspose, {{b, tokens, head_dim}}, {b, head_dim, tokens},
       model::TransposeAttrs{{b, tokens, head_dim}, {0, 2, 1}});
  g.Op(tag + "/scores", OpKind::kMatMul, {{b, tokens, head_dim}, {b, head_dim, tokens}},
       {b, tokens, tokens});
  g.Op(tag + "/softmax", OpKind::kSoftmax, {{b, tokens, tokens}}, {b, tokens, tokens});
  g.Op(tag + "/context", OpKind::kMatMul, {{b, tokens, tokens}, {b, tokens, head_dim}},
       {b, tokens, head_dim});
  g.Op(tag + "/merge_heads", OpKind::kTranspose, {{windows, heads, tokens, head_dim}},
       {windows, tokens, c},
       model::TransposeAttrs{{windows, heads, tokens, head_dim}, {0, 2, 1, 3}});
  g.Op(tag + "/flatten_tokens", OpKind::kReshape, {{windows, tokens, c}}, {rows, c});
  g.FullyConnected(tag + "/proj", rows, c, c);
  g.Op(tag + "/residual", OpKind::kAdd, {{rows, c}, {rows, c}}, {rows, c});
  g.FullyConnected(tag + "/mlp_in", rows, c, mlp);
  g.Op(tag + "/gelu", OpKind::kActivation, {{rows, mlp}}, {rows, mlp}, {},
       model::ActivationKind::kGelu);
  g.FullyConnected(tag + "/mlp_out", rows, mlp, c);
  g.Op(tag + "/scale", OpKind::kDiv, {{rows, c}, {rows, c}}, {rows, c});
}

// The head of a ViT: the class token prepended to the patch tokens, taken back out after the
// blocks, and the token mean other heads pool with.
void VitHead(ShapeGraph& g, const std::string& tag, int64_t tokens, int64_t c) {
  g.Op(tag + "/prepend_class", OpKind::kConcat, {{1, 1, c}, {1, tokens - 1, c}}, {1, tokens, c},
       model::ConcatAttrs{1});
  g.Op(tag + "/class_token", OpKind::kSlice, {{1, tokens, c}}, {1, c},
       model::SliceAttrs{{0, 0, 0}, {1, 1, 1}, {1, 1, c}});
  g.Op(tag + "/token_mean", OpKind::kReduce, {{1, tokens, c}}, {1, c},
       model::ReduceAttrs{model::ReduceKind::kMean, {1}});
}

}  // namespace

std::vector<model::Graph> TransformerShapeGraphs() {
  std::vector<model::Graph> graphs;
  {
    ShapeGraph g("shapes_vit_b16");
    AttentionBlock(g, "block", 1, 197, 12, 64, 3072);
    VitHead(g, "head", 197, 768);
    graphs.push_back(g.Take());
  }
  {
    ShapeGraph g("shapes_vit_b32");
    AttentionBlock(g, "block", 1, 50, 12, 64, 3072);
    VitHead(g, "head", 50, 768);
    graphs.push_back(g.Take());
  }
  {
    ShapeGraph g("shapes_swin_t");
    AttentionBlock(g, "stage1", 64, 49, 3, 32, 384);
    AttentionBlock(g, "stage3", 4, 49, 12, 32, 1536);
    // 56x56 tokens into 8x8 windows of 7x7.
    g.Op("stage1/window_partition", OpKind::kTranspose, {{1, 56, 56, 96}}, {64, 49, 96},
         model::TransposeAttrs{{8, 7, 8, 7, 96}, {0, 2, 1, 3, 4}});
    g.Op("stage4/token_mean", OpKind::kReduce, {{1, 49, 768}}, {1, 768},
         model::ReduceAttrs{model::ReduceKind::kMean, {1}});
    graphs.push_back(g.Take());
  }
  {
    ShapeGraph g("shapes_small");
    AttentionBlock(g, "t65", 1, 65, 3, 64, 768);
    VitHead(g, "t65", 65, 192);
    AttentionBlock(g, "t17", 1, 17, 2, 32, 256);
    VitHead(g, "t17", 17, 64);
    graphs.push_back(g.Take());
  }
  return graphs;
}

}  // namespace psched::calibration
