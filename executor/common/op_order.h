// OpOrder: which ops of a graph are guaranteed to have finished before others start.
//
// Before(a, b) holds when, in every run, everything op `a` does to the arena (all of its
// subtasks, on whichever devices) is complete before anything of op `b` starts. The arena
// planner (arena_plan.h) lets two tensors share memory only when every op touching one is
// Before every op touching the other, so an order must never claim more than the executor
// enforces: one device running ops one at a time in op id order (Sequential), or the
// dependencies and per-device queue order of a co-execution plan
// (executor/runtime/plan_order.h). A strict partial order, stored as a bit matrix. Plain
// data; immutable once built, thread-safe to read.
#pragma once

#include <cstdint>
#include <vector>

#include "model/graph.h"

namespace psched::executor {

class OpOrder {
 public:
  // Nothing is ordered: every tensor gets memory of its own.
  static OpOrder Unordered(int num_ops);
  // Ops run one at a time in op id order: a < b.
  static OpOrder Sequential(int num_ops);

  // A graph's ops with nothing ordered yet; Order adds pairs.
  explicit OpOrder(int num_ops);
  // REQUIRES: 0 <= a, b < num_ops(), a != b, and the pair keeps the relation acyclic.
  void Order(model::OpId a, model::OpId b);

  int num_ops() const { return num_ops_; }
  bool Before(model::OpId a, model::OpId b) const {
    const size_t bit =
        static_cast<size_t>(a) * static_cast<size_t>(num_ops_) + static_cast<size_t>(b);
    return (bits_[bit / 64] >> (bit % 64)) & 1u;
  }

 private:
  int num_ops_ = 0;
  std::vector<uint64_t> bits_;  // row a, column b
};

}  // namespace psched::executor
