// The scheduling instance every method consumes (paper sec. 4.1).
//
// A Problem holds the operator DAG (ops in topological order, predecessor and successor
// lists in flat arrays), the devices, a transfer cost per edge (paid only when producer
// and consumer run in different memory domains), a synchronisation cost per ordered pair of
// devices (LatencyModel::SyncUs: paid by every edge between subtasks on different devices), and
// per op the workload size U_{i,a} of each split axis (0: axis not allowed). LatencyUs(op, axis,
// work, device) is the predicted latency of a subtask with `work` units; it is memoised in flat
// tables filled lazily on first use (the iterative search calls it millions of times), so the hot
// path is one indexed load.
//
// Spatial subtasks are predicted from their row count only: the subtask starting at row 0
// stands in for every range of that length (the halo differs by at most the top padding).
//
// Thread-safety: all const methods may be called concurrently; the memo slots are atomics
// and racing fills store the same value. A Problem built FromGraph refers to the
// LatencyModel it was given. REQUIRES: that model outlives the Problem.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/graph.h"
#include "model/split.h"
#include "platform/platform.h"
#include "predictor/latency_model.h"
#include "predictor/op_config.h"

namespace psched::scheduler {

using model::OpId;

struct ProblemOptions {
  // K: the most subtasks one op may be split into; 0 means |D| (the paper's default).
  int max_splits = 0;
  // Plans proposed by searches use multiples of this many work units per subtask (the
  // last subtask takes the remainder). 1 allows any integer division. Output channels also
  // align to the platform's cache line (Platform::cache_line_bytes), whichever is coarser.
  int64_t alignment = 1;
  // Predict every candidate configuration in FromGraph (PredictAll) instead of on first
  // use: cheaper for methods that visit many partitions (partition-only, PA-HEFT), dearer
  // for schedule-only methods that only need whole ops.
  bool predict_all = false;
};

// A task graph given by costs (psched-bench --taskgraph, tests, the exact solvers' proofs):
// every task has a whole-task cost per device and may also be split along up to three
// axes, each with its own cost table, so a task graph can carry the same partition-aware
// instance a model does.
struct TaskGraph {
  struct Edge {
    int from = 0;
    int to = 0;
    double transfer_us = 0;  // paid when the two tasks run in different memory domains
  };
  // One axis a task may be split along: U = cost.size() work units, and cost[u - 1][device]
  // is the latency of a subtask doing u of them. REQUIRES: axis != kNone.
  struct Split {
    model::SplitAxis axis = model::SplitAxis::kOutputChannels;
    std::vector<std::vector<double>> cost;
  };
  std::vector<std::string> names;          // one per task; empty: "t<index>"
  std::vector<std::vector<double>> cost;   // [task][device], microseconds
  std::vector<std::vector<Split>> splits;  // [task]: its split axes; may be shorter than cost
  std::vector<Edge> edges;                 // REQUIRES: from < to (tasks in topological order)
};

class Problem {
 public:
  static absl::StatusOr<Problem> FromGraph(const model::Graph& graph,
                                           const platform::Platform& platform,
                                           const predictor::LatencyModel& latency_model,
                                           ProblemOptions options = {});
  // `options` bound the split count and set the alignment grid of split tasks.
  static absl::StatusOr<Problem> FromTaskGraph(const TaskGraph& tasks,
                                               const platform::Platform& platform,
                                               ProblemOptions options = {});

  Problem(Problem&&) noexcept;
  Problem& operator=(Problem&&) noexcept;
  ~Problem();

  int num_ops() const { return num_ops_; }
  int num_devices() const { return num_devices_; }
  int max_splits() const { return max_splits_; }
  int64_t alignment() const { return alignment_; }
  // The alignment of subtasks split along `axis`: alignment(), for output channels also a
  // multiple of the floats in a cache line (devices writing the two sides of a split inside one
  // line would pass it back and forth on every pixel: 1.35-1.5x slower slices, measured).
  int64_t alignment(model::SplitAxis axis) const {
    return axis == model::SplitAxis::kOutputChannels ? cout_alignment_ : alignment_;
  }
  const platform::Platform& platform() const { return platform_; }
  const std::string& op_name(OpId op) const { return op_names_[static_cast<size_t>(op)]; }
  // Whether `device` has a kernel for the subtasks of `op` split along `axis` (kNone: the
  // whole op; device_capability.h); always true for task graphs.
  bool DeviceRuns(OpId op, int device, model::SplitAxis axis = model::SplitAxis::kNone) const {
    return unsupported_.empty() || !unsupported_[UnsupportedSlot(op, axis, device)];
  }

  // Predecessors / successors of an op, ascending, with the transfer cost of each edge.
  std::span<const OpId> preds(OpId op) const { return Slice(pred_ops_, pred_begin_, op); }
  std::span<const double> pred_transfer_us(OpId op) const {
    return Slice(pred_transfer_, pred_begin_, op);
  }
  std::span<const OpId> succs(OpId op) const { return Slice(succ_ops_, succ_begin_, op); }
  std::span<const double> succ_transfer_us(OpId op) const {
    return Slice(succ_transfer_, succ_begin_, op);
  }
  // Mean cost of an edge over ordered pairs of distinct devices: the "average communication
  // cost" of list schedulers. 0 when all devices share a domain and sync costs nothing.
  double MeanTransferUs(double transfer_us) const {
    return transfer_us * cross_domain_fraction_ + mean_sync_us_;
  }
  bool SameDomain(int device_a, int device_b) const {
    return domains_[static_cast<size_t>(device_a)] == domains_[static_cast<size_t>(device_b)];
  }
  // What an edge costs between two devices: nothing on the same device; else the pair's sync
  // cost, plus the transfer when they are in different memory domains.
  double EdgeCostUs(double transfer_us, int from_device, int to_device) const {
    if (from_device == to_device) return 0.0;
    return SyncUs(from_device, to_device) +
           (SameDomain(from_device, to_device) ? 0.0 : transfer_us);
  }
  double SyncUs(int from_device, int to_device) const {
    return sync_us_[static_cast<size_t>(from_device * num_devices_ + to_device)];
  }
  // The hand-off as it will cost in a run, given how long the waiting device had been idle
  // when the input came (LatencyModel::HandOffUs); SyncUs for a task graph. For predicting a
  // fixed plan (RetimeByWaits), not for planning.
  double HandOffUs(int from_device, int to_device, double idle_us) const {
    return latency_model_ != nullptr ? latency_model_->HandOffUs(from_device, to_device, idle_us)
                                     : SyncUs(from_device, to_device);
  }
  // How much longer `device`'s subtasks take while another device runs too
  // (LatencyModel::CoRunFactor); 1 for a task graph. For predicting a fixed plan.
  double CoRunFactor(int device) const {
    return latency_model_ != nullptr ? latency_model_->CoRunFactor(device) : 1.0;
  }
  // What a subtask of `device` waits after the device's previous one when no other device holds
  // it, `synced` one with an input from another device (LatencyModel::SubtaskGapUs); 0 for a
  // task graph. For predicting a fixed plan.
  double SubtaskGapUs(int device, bool synced) const {
    return latency_model_ != nullptr ? latency_model_->SubtaskGapUs(device, synced) : 0.0;
  }
  // What the last of an op's cin slices to finish pays on `device` to add the other slices'
  // `partials` partial sums into the op's output and apply its activation (the runtime does it
  // there, CoExecutionRuntime::CompletesOp): `partials` x the output's elements at the model's
  // measured PartialSumNs of the device, or without one `partials` element-wise adds of the
  // output as the model predicts them. 0 for a task graph. For predicting a fixed plan, not for
  // planning.
  double CombineUs(OpId op, int device, int partials) const;
  // True when an edge costs nothing whatever devices its ends run on: every device in one
  // domain and no sync cost. Exact solvers then skip per-device ready times.
  bool EdgesFree() const { return edges_free_; }
  // True when this edge costs nothing between any two devices.
  bool EdgeFree(double transfer_us) const {
    return max_sync_us_ == 0 && (cross_domain_fraction_ == 0 || transfer_us == 0);
  }

  // U_{i,a}; 0 when `op` cannot be split along `axis`. kNone gives 1.
  int64_t WorkSize(OpId op, model::SplitAxis axis) const {
    return work_size_[static_cast<size_t>(op) * 4 + static_cast<size_t>(axis)];
  }
  bool IsPartitionable(OpId op) const;

  // Predicted latency of a subtask with `work` units of `op` split along `axis`, on
  // `device`, in microseconds; 0 for work == 0.
  // REQUIRES: 0 <= work <= WorkSize(op, axis), WorkSize(op, axis) > 0.
  double LatencyUs(OpId op, model::SplitAxis axis, int64_t work, int device) const {
    const size_t slot = Slot(op, axis, work, device);
    const double v = table_[slot].load(std::memory_order_relaxed);
    return v >= 0.0 ? v : Fill(op, axis, work, device, slot);
  }

  // Predicts every candidate configuration at once - per op and split axis, every work size a
  // plan can give a subtask: multiples of the alignment and the remainders U - k * alignment
  // (all of 1..U when the alignment is 1) - on every device, one LatencyModel::PredictBatch
  // per (op, axis, device), and stores them in the tables LatencyUs reads. Returns how many
  // configurations were predicted (per device). A no-op for FromTaskGraph problems.
  int64_t PredictAll() const;

 private:
  Problem() = default;
  size_t Slot(OpId op, model::SplitAxis axis, int64_t work, int device) const {
    return static_cast<size_t>(
        table_offset_[static_cast<size_t>(op) * 4 + static_cast<size_t>(axis)] +
        work * num_devices_ + device);
  }
  template <typename T>
  static std::span<const T> Slice(const std::vector<T>& v, const std::vector<int>& begin, OpId op) {
    const size_t i = static_cast<size_t>(op);
    return std::span<const T>(v.data() + begin[i], static_cast<size_t>(begin[i + 1] - begin[i]));
  }
  size_t UnsupportedSlot(OpId op, model::SplitAxis axis, int device) const {
    return (static_cast<size_t>(op) * 4 + static_cast<size_t>(axis)) *
               static_cast<size_t>(num_devices_) +
           static_cast<size_t>(device);
  }
  double Fill(OpId op, model::SplitAxis axis, int64_t work, int device, size_t slot) const;
  absl::Status Init(const platform::Platform& platform,
                    std::vector<std::vector<std::pair<int, double>>> preds,
                    std::vector<int64_t> work_size, int max_splits,
                    const predictor::LatencyModel* latency_model);

  int num_ops_ = 0;
  int num_devices_ = 0;
  int max_splits_ = 0;
  int64_t alignment_ = 1;
  int64_t cout_alignment_ = 1;
  platform::Platform platform_;
  std::vector<int> domains_;
  double cross_domain_fraction_ = 0;
  std::vector<double> sync_us_;  // [from * D + to]; 0 on the diagonal
  double mean_sync_us_ = 0;      // over ordered pairs of distinct devices
  double max_sync_us_ = 0;
  bool edges_free_ = true;
  std::vector<std::string> op_names_;
  std::vector<int> pred_begin_, succ_begin_;
  std::vector<OpId> pred_ops_, succ_ops_;
  std::vector<double> pred_transfer_, succ_transfer_;
  std::vector<int64_t> work_size_;                // [op * 4 + axis]
  std::vector<int64_t> table_offset_;             // [op * 4 + axis] -> start of (U + 1) x D slots
  std::unique_ptr<std::atomic<double>[]> table_;  // < 0: not yet predicted
  // FromGraph only: the configs subtasks derive from, and the model predicting them.
  std::vector<predictor::OpConfig> whole_configs_;
  // [(op * 4 + axis) * D + device]: no kernel there (device_capability.h).
  std::vector<bool> unsupported_;
  const predictor::LatencyModel* latency_model_ = nullptr;
};

}  // namespace psched::scheduler
