// Candidate partition plans of one operator (paper sec. 4.1, 4.3-4.4 and 5.1): which
// split axes an op allows, the one-subtask-per-device (OSPD) local cost of a plan, the
// min-local-latency and equal-size plans, and uniform random sampling of plans for the
// iterative search.
//
// Plans follow scheduler::PartitionPlan: `work` lists the active slots only (zeros are
// dropped, so a plan never has more entries than active subtasks), and a plan with a
// single active slot is written as PartitionPlan::None() - all of an op's work on one
// device is the unpartitioned op. Where a function also decides devices (OSPD), it returns
// the device of every slot beside the plan.
//
// Everything here is a pure function of its arguments, except PlanSampler, which owns
// scratch space and must be used by one thread at a time.
#pragma once

#include <array>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "absl/functional/function_ref.h"
#include "model/split.h"
#include "scheduler/partition_plan.h"
#include "scheduler/problem.h"

namespace psched::scheduler::partition_aware {

// The axes `op` may be split along (WorkSize > 0), in kAllSplitAxes order, kNone excluded.
// Returns how many were written to `axes`.
int SplitAxes(const Problem& problem, OpId op, std::array<model::SplitAxis, 3>& axes);

// The most slots a plan of this problem may use: min(max_splits, |D|).
int PlanSlots(const Problem& problem);

// Minimises max over active slots q of (offsets[q] + cost(q, work[q])) over the divisions
// of `total` into offsets.size() slots with at most `max_active` non-zero entries, whose
// cut points are multiples of `alignment` (the last cut may fall on `total`). Writes the
// best division to `work` (size offsets.size()) and returns its objective.
//
// Search: cut points are indices n in [0, N], N = ceil(total / alignment). When all
// nondecreasing cut sequences number at most kExhaustiveBudget they are all tried (exact).
// Otherwise a coarse grid of step s (the smallest with at most kExhaustiveBudget
// sequences) is searched exhaustively, then a window of +-s around the best cuts at a
// finer step, repeated until step 1 - exact for latencies that vary smoothly with work,
// a local refinement where GPU kernels jump. Partial sequences whose running maximum
// already reaches the best objective are pruned. REQUIRES: total >= 1, alignment >= 1,
// 1 <= offsets.size() <= 8, max_active >= 1.
inline constexpr int64_t kExhaustiveBudget = 4096;
double MinMaxDivision(int64_t total, int64_t alignment, int max_active,
                      std::span<const double> offsets,
                      absl::FunctionRef<double(int slot, int64_t work)> cost,
                      std::span<int64_t> work);

// A plan with the device of each of its slots.
struct PlacedPlan {
  PartitionPlan plan;
  std::vector<int> devices;  // one per plan.work entry
  double local_cost_us = 0;  // max over slots of the slot's latency on its device
};

// OSPD local cost of `plan` when its slot q runs on devices[q]: max_q tau(u_q).
double OspdLocalCostUs(const Problem& problem, OpId op, const PartitionPlan& plan,
                       std::span<const int> devices);

// pi^Local (paper sec. 4.3): the plan minimising the OSPD local latency, over the
// unpartitioned op on its fastest device and every split axis divided over all devices
// (slot d on device d) by MinMaxDivision with the problem's alignment.
PlacedPlan MinLocalLatencyPlan(const Problem& problem, OpId op);

// pi^equal (paper sec. 4.4): per axis, U divided into PlanSlots() near-equal parts (the
// larger parts first) on the devices fastest for the whole op, the largest part on the
// fastest; the axis (or the unpartitioned op on its fastest device) with the smallest
// OSPD local cost wins. A CPU-only split (device_capability.h) is divided among the fastest
// devices that run it.
PlacedPlan EqualSizePlan(const Problem& problem, OpId op);

// Draws candidate plans (paper sec. 5.1): a strategy uniformly among none and the op's
// split axes, then a division of U into K slots uniformly among all compositions
// of N = ceil(U / alignment) units (stars and bars), each unit `alignment` work items
// (the last one clipped to U). K is at most the number of devices with a kernel for the
// split, so a CPU-only split is drawn among the CPUs. Allocation-free once warm. Not thread-safe.
class PlanSampler {
 public:
  // K = `slots` (0 or more than PlanSlots(): PlanSlots()); alignment 0: the problem's.
  explicit PlanSampler(int slots = 0, int64_t alignment = 0) : slots_(slots), alignment_(alignment) {}
  // Writes a sampled plan for `op` into `out`, reusing its capacity.
  void Sample(const Problem& problem, OpId op, std::mt19937_64& rng, PartitionPlan& out);

 private:
  int slots_;
  int64_t alignment_;
  std::vector<int64_t> picks_;
};

// Removes zero slots and turns a one-slot plan into PartitionPlan::None(), in place.
void Canonicalize(PartitionPlan& plan);

}  // namespace psched::scheduler::partition_aware
