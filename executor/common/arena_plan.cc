#include "executor/common/arena_plan.h"

#include <algorithm>
#include <numeric>
#include <span>

namespace psched::executor {
namespace {

// XNNPACK reads up to XNN_EXTRA_BYTES past its inputs; blocks are also kept 64-byte aligned.
constexpr int64_t kSlackFloats = 16;
constexpr int64_t kAlignFloats = 16;

// 4 KiB aliasing: a core compares a load with the stores still in flight by their address's
// low 12 bits, so a load from another page at the same page offset as a recent store waits as
// if it depended on it. A kernel storing output pixel p while it loads input pixels p + 1 ...
// p + 8 hits that on every pixel when the output block starts those few pixels (here: up to
// 512 bytes) past a multiple of 4 KiB from the input block, or as far before it. Measured on
// a 2-vCPU x86 VM: hrnet's and peleenet's 3x3 16>16 convs on 56x56 ran 100-130 us in runs
// where their blocks lay 200768 bytes (49 pages + 64 bytes) apart, 60 us alone and with
// the blocks shifted (docs/runtime-performance.md, "4 KiB aliasing between arena blocks").
constexpr int64_t kPageFloats = 4096 / sizeof(float);
constexpr int64_t kAliasBandFloats = 512 / sizeof(float);
// Tries before a block keeps an aliasing offset (only in arenas crowded with such pairs).
constexpr int kMaxAliasShifts = 8;

int64_t BlockSize(const model::Shape& s) {
  const int64_t n = s.Elements() + kSlackFloats;
  return (n + kAlignFloats - 1) / kAlignFloats * kAlignFloats;
}

struct Block {
  model::TensorId root = model::kInvalidId;
  int64_t size = 0;
  std::vector<model::OpId> ops;  // every op that writes or reads a tensor of the block
  bool from_start = false;       // written before any op runs (a graph input, zeroed at start)
  bool to_end = false;           // read after every op has run (a graph output)
  int64_t offset = 0;
};

// Whether everything touching `x` is done before anything touches `y`.
bool Precedes(const Block& x, const Block& y, const OpOrder& order) {
  if (x.to_end || y.from_start) return false;
  for (model::OpId a : x.ops) {
    for (model::OpId b : y.ops) {
      if (!order.Before(a, b)) return false;
    }
  }
  return true;
}

// Whether block `x` placed at `x_offset` (floats) and block `y`, both a page or more, lie
// within the band of a multiple of 4 KiB apart.
bool Aliases(const Block& x, int64_t x_offset, const Block& y) {
  if (x.size < kPageFloats || y.size < kPageFloats) return false;
  const int64_t d = ((x_offset - y.offset) % kPageFloats + kPageFloats) % kPageFloats;
  return d <= kAliasBandFloats || d >= kPageFloats - kAliasBandFloats;
}

bool ShareAnOp(const Block& x, const Block& y) {
  return std::any_of(x.ops.begin(), x.ops.end(), [&](model::OpId a) {
    return std::find(y.ops.begin(), y.ops.end(), a) != y.ops.end();
  });
}

// The lowest offset >= `from` where `size` floats collide with none of `conflicting` (sorted by
// offset).
int64_t FirstFit(int64_t size, std::span<const Block* const> conflicting, int64_t from) {
  int64_t candidate = from;
  for (const Block* o : conflicting) {
    if (candidate + size <= o->offset) break;
    candidate = std::max(candidate, o->offset + o->size);
  }
  return candidate;
}

}  // namespace

ArenaPlan PlanArena(const model::Graph& graph, bool reuse_memory) {
  const int num_ops = static_cast<int>(graph.ops.size());
  return PlanArena(graph,
                   reuse_memory ? OpOrder::Sequential(num_ops) : OpOrder::Unordered(num_ops));
}

ArenaPlan PlanArena(const model::Graph& graph, const OpOrder& order,
                    std::span<const model::TensorId> live_from_start,
                    std::span<const ExtraWriter> extra_writers) {
  const size_t n = graph.tensors.size();
  const auto num_ops = static_cast<model::OpId>(graph.ops.size());
  std::vector<std::vector<model::OpId>> consumers(n);
  for (model::OpId id = 0; id < num_ops; ++id) {
    for (model::TensorId t : graph.op(id).inputs) consumers[static_cast<size_t>(t)].push_back(id);
  }
  const model::ConcatAliasing aliasing = model::AliasConcatInputs(graph);
  const std::vector<model::TensorId>& root = aliasing.root;
  ArenaPlan plan;
  plan.in_place_concat_inputs = aliasing.in_place_inputs;

  // One block per root, touched by the producers and consumers of every tensor in it.
  std::vector<bool> is_graph_output(n, false);
  for (const model::GraphIO& io : graph.outputs)
    is_graph_output[static_cast<size_t>(io.tensor)] = true;
  std::vector<bool> zeroed_at_start(n, false);
  for (model::TensorId t : live_from_start) zeroed_at_start[static_cast<size_t>(t)] = true;
  std::vector<std::vector<model::OpId>> writers(n);
  for (const ExtraWriter& w : extra_writers) writers[static_cast<size_t>(w.tensor)].push_back(w.op);
  std::vector<int> block_of(n, -1);
  std::vector<Block> blocks;
  for (size_t t = 0; t < n; ++t) {
    if (graph.tensors[t].constant != model::kInvalidId) continue;
    const auto r = static_cast<size_t>(root[t]);
    if (block_of[r] < 0) {
      block_of[r] = static_cast<int>(blocks.size());
      blocks.push_back({.root = root[t], .size = BlockSize(graph.tensors[r].shape), .ops = {}});
    }
    Block& b = blocks[static_cast<size_t>(block_of[r])];
    const model::OpId producer = graph.tensors[t].producer;
    if (producer == model::kInvalidId) {
      b.from_start = true;
    } else {
      b.ops.push_back(producer);
    }
    b.from_start = b.from_start || zeroed_at_start[t];
    b.ops.insert(b.ops.end(), consumers[t].begin(), consumers[t].end());
    b.ops.insert(b.ops.end(), writers[t].begin(), writers[t].end());
    b.to_end = b.to_end || is_graph_output[t];
  }

  std::vector<size_t> by_size(blocks.size());
  std::iota(by_size.begin(), by_size.end(), 0);
  std::stable_sort(by_size.begin(), by_size.end(),
                   [&](size_t a, size_t b) { return blocks[a].size > blocks[b].size; });
  std::vector<size_t> placed;
  for (size_t i : by_size) {
    Block& b = blocks[i];
    std::vector<const Block*> conflicting;  // placed blocks it may not share memory with
    for (size_t j : placed) {
      const Block& o = blocks[j];
      if (!Precedes(o, b, order) && !Precedes(b, o, order)) conflicting.push_back(&o);
    }
    std::sort(conflicting.begin(), conflicting.end(),
              [](const Block* x, const Block* y) { return x->offset < y->offset; });
    int64_t candidate = FirstFit(b.size, conflicting, 0);
    // Away from 4 KiB aliasing with the blocks an op reads or writes beside it.
    for (int shift = 0; shift < kMaxAliasShifts; ++shift) {
      const bool aliased = std::any_of(conflicting.begin(), conflicting.end(), [&](const Block* o) {
        return Aliases(b, candidate, *o) && ShareAnOp(b, *o);
      });
      if (!aliased) break;
      candidate = FirstFit(b.size, conflicting, candidate + 2 * kAliasBandFloats);
    }
    b.offset = candidate;
    plan.size = std::max(plan.size, candidate + b.size);
    placed.push_back(i);
  }

  plan.tensors.assign(n, TensorPlacement{});
  for (size_t t = 0; t < n; ++t) {
    if (graph.tensors[t].constant != model::kInvalidId) continue;
    const auto r = static_cast<size_t>(root[t]);
    const Block& b = blocks[static_cast<size_t>(block_of[r])];
    plan.tensors[t] = {b.offset + aliasing.channel_offset[t], graph.tensors[r].shape.c};
  }
  return plan;
}

}  // namespace psched::executor
