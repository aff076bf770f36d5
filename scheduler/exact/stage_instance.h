// One exact scheduling instance (paper sec. 4.1): the ops of a stage (or of the whole
// graph), the plans each may take, and what earlier stages left behind - completion
// times of the stage's external inputs per device and the busy intervals of every device.
//
// The plans of an op are described per split axis (an OpAxis): either a *grid* - every
// division of U into at most K subtasks whose cut points lie on the alignment grid, i.e.
// the candidate space the iterative search samples from - or one *fixed* plan whose slots
// may go to any distinct devices (the restricted spaces: min-local-latency or equal-size
// expansion, and kNone for the unpartitioned op). A grid is counted in units: U =
// units * alignment - clip, and a part of k units does k * alignment work, except the one
// part holding the last unit, which is `clip` shorter (the last slot of the plan).
//
// Also precomputed here, for the solvers' lower bounds: per (op, axis, device), the
// least latency of a part of at least k units (a monotone relaxation that is exact for any
// latency table), the least latency per unit, and per op the static "tail" (the least
// time from its completion to the end of the stage along in-stage successors).
//
// Built once per stage; immutable afterwards and safe to share read-only across threads.
// It refers to the Problem it was built from. REQUIRES: the Problem outlives it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "model/split.h"
#include "scheduler/partition_plan.h"
#include "scheduler/problem.h"
#include "scheduler/schedule.h"

namespace psched::scheduler::exact {

// The candidate space of an exact solve: the paper's Joint-Gurobi and its three restricted
// Gurobi rows (Table 3).
enum class ExactSpace {
  kJoint,          // every axis x every division on the grid, or the unpartitioned op
  kScheduleOnly,   // every op unpartitioned
  kExpandedLocal,  // the min-local-latency plan of every op, devices free
  kExpandedEqual,  // the equal-size plan of every op, devices free
};
std::string_view ExactSpaceName(ExactSpace space);

// The most devices an exact instance supports (device sets are bit masks).
inline constexpr int kMaxExactDevices = 16;

struct OpAxis {
  model::SplitAxis axis = model::SplitAxis::kNone;
  int64_t total = 1;      // U
  int64_t alignment = 1;  // work per grid unit
  int64_t units = 1;      // ceil(U / alignment)
  int64_t clip = 0;       // units * alignment - U
  // Non-empty: exactly these slot works (in slot order), any distinct devices. Empty: a grid.
  std::vector<int64_t> fixed;
  bool grid() const { return fixed.empty(); }
  // The work of a grid part of `k` units; `last` when it holds the last unit.
  int64_t Work(int64_t k, bool last) const { return k * alignment - (last ? clip : 0); }
};

// The plans one op may take, one entry per axis (kNone first when allowed).
using OpSpace = std::vector<OpAxis>;

// Per op of the stage (by position in `ops`), its space under `space`.
std::vector<OpSpace> BuildOpSpaces(const Problem& problem, std::span<const OpId> ops,
                                   ExactSpace space);

struct BusyInterval {
  double begin = 0;
  double end = 0;
};

class StageInstance {
 public:
  // `ops`: ascending; every predecessor of an op is in `ops` or has its subtasks in
  // `fixed` (earlier stages). `spaces`: one per op. Errors: more devices than
  // kMaxExactDevices, a space that does not fit the op (wrong work total, too many slots),
  // a latency that is negative or not finite.
  static absl::StatusOr<StageInstance> Build(const Problem& problem, std::span<const OpId> ops,
                                             const Schedule& fixed, std::vector<OpSpace> spaces);

  const Problem& problem() const { return *problem_; }
  int num_ops() const { return static_cast<int>(ops_.size()); }
  int num_devices() const { return devices_; }
  int max_parts() const { return max_parts_; }  // K
  OpId op(int local) const { return ops_[static_cast<size_t>(local)]; }
  const OpSpace& space(int local) const { return spaces_[static_cast<size_t>(local)]; }
  // In-stage predecessors / successors (local indices) and the transfer cost of each edge.
  std::span<const int> preds(int local) const { return Slice(pred_, pred_begin_, local); }
  std::span<const double> pred_transfer(int local) const {
    return Slice(pred_transfer_, pred_begin_, local);
  }
  std::span<const int> succs(int local) const { return Slice(succ_, succ_begin_, local); }
  // When inputs from earlier stages are available on `device`.
  double ExternalReady(int local, int device) const {
    return external_ready_[static_cast<size_t>(local) * static_cast<size_t>(devices_) +
                           static_cast<size_t>(device)];
  }
  // Busy intervals of earlier stages on `device` that can still matter, sorted.
  std::span<const BusyInterval> busy(int device) const {
    return busy_[static_cast<size_t>(device)];
  }
  // The earliest start >= lower of a subtask of `duration` on `device` that overlaps no
  // busy interval (an idle gap between earlier-stage subtasks may be used).
  double Fit(int device, double lower, double duration) const;
  double EdgeCost(double transfer, int from_device, int to_device) const {
    return problem_->EdgeCostUs(transfer, from_device, to_device);
  }
  bool ancestor(int a, int b) const {  // a is an in-stage ancestor of b
    return ancestor_[static_cast<size_t>(b) * ops_.size() + static_cast<size_t>(a)];
  }

  // Latency of a subtask doing `work` of op `local` along axis `axis` (index into space).
  double Duration(int local, int axis, int64_t work, int device) const {
    return problem_->LatencyUs(op(local), space(local)[static_cast<size_t>(axis)].axis, work,
                               device);
  }
  // Latency of slot `slot` of a fixed plan (axis index `axis`) on `device` (precomputed).
  double FixedDuration(int local, int axis, int slot, int device) const {
    return fixed_duration_[RateIndex(local, axis, device)][static_cast<size_t>(slot)];
  }
  // Least latency, on `device`, of a grid part of at least `k` units (0 for k <= 0).
  double MinPartDuration(int local, int axis, int device, int64_t k) const;
  // The most units a grid part can hold and still end within `budget` on `device` under
  // the MinPartDuration relaxation (0 when even one unit does not fit).
  int64_t MaxUnitsWithin(int local, int axis, int device, double budget) const;
  // The most units one grid part of (local, axis) may hold.
  int64_t MaxPartUnits(int local, int axis) const {
    return space(local)[static_cast<size_t>(axis)].units;
  }
  // Least latency per unit of a grid part on `device`.
  double MinUnitDuration(int local, int axis, int device) const {
    return unit_rate_[RateIndex(local, axis, device)];
  }
  // A lower bound on the time from the op's completion to the end of the stage.
  double Tail(int local) const { return tail_[static_cast<size_t>(local)]; }
  // A lower bound on the op's duration from the moment its inputs are ready everywhere.
  double MinBody(int local) const { return min_body_[static_cast<size_t>(local)]; }

 private:
  StageInstance() = default;
  template <typename T>
  static std::span<const T> Slice(const std::vector<T>& v, const std::vector<int>& begin, int i) {
    const size_t k = static_cast<size_t>(i);
    return std::span<const T>(v.data() + begin[k], static_cast<size_t>(begin[k + 1] - begin[k]));
  }
  size_t RateIndex(int local, int axis, int device) const {
    return (static_cast<size_t>(axis_begin_[static_cast<size_t>(local)]) + static_cast<size_t>(axis)) *
               static_cast<size_t>(devices_) +
           static_cast<size_t>(device);
  }

  const Problem* problem_ = nullptr;
  int devices_ = 0;
  int max_parts_ = 1;
  std::vector<OpId> ops_;
  std::vector<OpSpace> spaces_;
  std::vector<int> pred_begin_, pred_, succ_begin_, succ_;
  std::vector<double> pred_transfer_;
  std::vector<double> external_ready_;
  std::vector<std::vector<BusyInterval>> busy_;
  std::vector<bool> ancestor_;
  // Flattened (op, axis) rows: axis_begin_[local] + axis.
  std::vector<int> axis_begin_;
  std::vector<double> unit_rate_;                  // [row * D + d]
  std::vector<std::vector<double>> min_part_;      // [row * D + d][k - 1], nondecreasing in k
  std::vector<std::vector<double>> fixed_duration_;  // [row * D + d][slot]
  std::vector<double> tail_, min_body_;
};

// The least completion time of `units` grid units of (local, axis) spread over the devices
// in `mask` that start no earlier than offsets[d], under the MinPartDuration relaxation (any
// part may use any number of units); +infinity when `mask` is empty and units > 0.
double RelaxedDivisionBound(const StageInstance& instance, int local, int axis, int64_t units,
                            uint32_t mask, std::span<const double> offsets);

}  // namespace psched::scheduler::exact
