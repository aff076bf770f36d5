// Reusable state of one list-scheduling run: the expanded graph, one insertion timeline
// per device, where each task went, and scratch vectors the algorithms share.
//
// A ListWorkspace is owned by one caller at a time and reused across runs so the inner
// SCHEDULE routine of the iterative search allocates nothing once warm. Placements can be
// undone in LIFO order (lookahead). Not thread-safe: use one workspace per thread.
#pragma once

#include <vector>

#include "absl/status/status.h"
#include "scheduler/device_timeline.h"
#include "scheduler/expanded_graph.h"
#include "scheduler/problem.h"
#include "scheduler/schedule.h"

namespace psched::scheduler {

struct Placement {
  int device = -1;
  double start_us = 0;
  double end_us = 0;
};

class ListWorkspace {
 public:
  // Clears placements and timelines for `graph` (already built); the subtasks of `fixed`
  // (earlier stages; may be null) occupy their devices and provide the completion times
  // of out-of-scope predecessors. Fails if `fixed` places an op that is in scope.
  absl::Status Prepare(const Problem& problem, const Schedule* fixed);
  // Undoes every placement: back to the state right after Prepare.
  absl::Status Restart() { return Prepare(*problem_, fixed_); }

  // When the inputs of `op` are available on `device`: the latest end of a placed
  // predecessor subtask plus the transfer cost if it ran in another memory domain.
  // Unplaced predecessors are ignored.
  double DataReady(const Problem& problem, OpId op, int device) const;
  // Insertion-based earliest start and finish of `task` on `device`.
  Placement EftOn(const Problem& problem, int task, int device) const;
  // The allowed device (no sibling on it) with the earliest finish; ties: lowest index.
  Placement BestEft(const Problem& problem, int task) const;
  // True when a subtask of `op` already runs on `device`.
  bool SiblingOn(OpId op, int device) const { return placed_end_[Index(op, device)] >= 0; }
  bool IsPlaced(int task) const { return task_device[static_cast<size_t>(task)] >= 0; }
  // The end of op's subtask on `device`, or -1 when none is placed there.
  double PlacedEnd(OpId op, int device) const { return placed_end_[Index(op, device)]; }

  // Ready-list bookkeeping for schedulers that pick among ready tasks: a task is ready
  // when every task of its in-scope predecessors is placed. InitReady counts them;
  // Place keeps the counts current.
  void InitReady(const Problem& problem);
  bool IsReady(int task) const {
    return task_device[static_cast<size_t>(task)] < 0 &&
           counts[static_cast<size_t>(graph.task(task).op)] == 0;
  }

  void Place(int task, const Placement& placement);
  // REQUIRES: `task` is the most recently placed task still placed.
  void Unplace(int task);

  ExpandedGraph graph;
  std::vector<DeviceTimeline> timelines;
  // Per task: device (-1 unplaced) and start time.
  std::vector<int> task_device;
  std::vector<double> task_start;
  // Scratch for the algorithms, sized by them.
  std::vector<double> rank, rank2, op_values, table;
  std::vector<int> order, ready, groups, group_begin, task_marks;
  std::vector<int> counts;  // per op: unplaced tasks of in-scope predecessors (InitReady)

 private:
  size_t Index(OpId op, int device) const {
    return static_cast<size_t>(op) * static_cast<size_t>(num_devices_) +
           static_cast<size_t>(device);
  }

  const Problem* problem_ = nullptr;
  const Schedule* fixed_ = nullptr;
  bool track_ready_ = false;
  int num_devices_ = 0;
  std::vector<double> placed_end_;      // [op * D + device]; -1: nothing there
  std::vector<int> timeline_position_;  // per task, for Unplace
};

}  // namespace psched::scheduler
