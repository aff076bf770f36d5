#include "scheduler/partition_aware/test_graphs.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace psched::scheduler::partition_aware::testing {
namespace {

constexpr int64_t kSide = 28;

class Builder {
 public:
  explicit Builder(std::string name) {
    graph_.name = std::move(name);
    graph_.tensors.push_back(model::Tensor{"input", model::Shape{kSide, kSide, 16}});
    graph_.inputs.push_back(model::GraphIO{0, "input", {1, 16, kSide, kSide}});
  }
  static constexpr model::TensorId kInput = 0;

  model::TensorId Conv(model::TensorId in, int64_t cout) {
    const int64_t cin = graph_.tensor(in).shape.c;
    model::ConvAttrs attrs;
    attrs.window.kernel_h = attrs.window.kernel_w = 3;
    attrs.window.pad_top = attrs.window.pad_left = attrs.window.pad_bottom = attrs.window.pad_right = 1;
    attrs.filter = static_cast<model::ConstantId>(graph_.constants.size());
    graph_.constants.push_back(model::Constant{"w" + std::to_string(graph_.ops.size()), {cout, 3, 3, cin}, {}});
    return Add(model::OpKind::kConv2d, {in}, model::Shape{kSide, kSide, cout}, attrs);
  }

  model::TensorId Concat(const std::vector<model::TensorId>& ins) {
    int64_t c = 0;
    for (model::TensorId t : ins) c += graph_.tensor(t).shape.c;
    return Add(model::OpKind::kConcat, ins, model::Shape{kSide, kSide, c}, std::monostate{});
  }

  model::Graph Finish(model::TensorId out) {
    const model::Shape& s = graph_.tensor(out).shape;
    graph_.outputs.push_back(model::GraphIO{out, graph_.tensor(out).name, {1, s.c, s.h, s.w}});
    return std::move(graph_);
  }

 private:
  model::TensorId Add(model::OpKind kind, std::vector<model::TensorId> ins, model::Shape shape,
                      model::OpAttrs attrs) {
    const model::OpId id = static_cast<model::OpId>(graph_.ops.size());
    const model::TensorId out = static_cast<model::TensorId>(graph_.tensors.size());
    graph_.tensors.push_back(model::Tensor{"t" + std::to_string(id), shape, 4, id});
    model::Op op;
    op.name = std::string(model::OpKindName(kind)) + "_" + std::to_string(id);
    op.kind = kind;
    op.inputs = std::move(ins);
    op.output = out;
    op.attrs = attrs;
    graph_.ops.push_back(std::move(op));
    return out;
  }

  model::Graph graph_;
};

}  // namespace

model::Graph ConvChain(int n) {
  Builder b("chain");
  model::TensorId t = Builder::kInput;
  for (int i = 0; i < n; ++i) t = b.Conv(t, i % 2 == 0 ? 64 : 32);
  return b.Finish(t);
}

model::Graph ForkJoin(int branches, int depth) {
  Builder b("fork_join");
  const model::TensorId stem = b.Conv(Builder::kInput, 32);
  std::vector<model::TensorId> ends;
  for (int k = 0; k < branches; ++k) {
    model::TensorId t = stem;
    for (int d = 0; d < depth; ++d) t = b.Conv(t, 16 + 16 * ((k + d) % 3));
    ends.push_back(t);
  }
  return b.Finish(b.Conv(b.Concat(ends), 32));
}

model::Graph Diamonds(int blocks) {
  Builder b("diamonds");
  model::TensorId t = Builder::kInput;
  for (int k = 0; k < blocks; ++k) {
    const model::TensorId top = b.Conv(t, 32);
    t = b.Concat({b.Conv(top, 48), b.Conv(top, 16)});
  }
  return b.Finish(b.Conv(t, 32));
}

model::Graph RandomDag(int n, uint64_t seed) {
  Builder b("random_dag");
  std::mt19937_64 rng(seed);
  std::vector<model::TensorId> outs;
  std::vector<bool> consumed;
  for (int i = 0; i < n; ++i) {
    const int fan_in = outs.empty() ? 1 : std::uniform_int_distribution<int>(1, 3)(rng);
    std::vector<model::TensorId> ins;
    for (int k = 0; k < fan_in; ++k) {
      // Input tensor 0 is the graph input; later tensors are op outputs.
      const int pick = std::uniform_int_distribution<int>(0, static_cast<int>(outs.size()))(rng);
      const model::TensorId t = pick == 0 ? Builder::kInput : outs[static_cast<size_t>(pick - 1)];
      if (std::find(ins.begin(), ins.end(), t) == ins.end()) ins.push_back(t);
      if (pick > 0) consumed[static_cast<size_t>(pick - 1)] = true;
    }
    const int64_t cout = 8 << std::uniform_int_distribution<int>(0, 3)(rng);
    outs.push_back(ins.size() == 1 ? b.Conv(ins[0], cout) : b.Concat(ins));
    consumed.push_back(false);
  }
  std::vector<model::TensorId> sinks;
  for (size_t k = 0; k < outs.size(); ++k) {
    if (!consumed[k]) sinks.push_back(outs[k]);
  }
  return b.Finish(sinks.size() == 1 ? sinks[0] : b.Concat(sinks));
}

}  // namespace psched::scheduler::partition_aware::testing
