// CoExecutionRuntime: runs a graph under an ExecutionPlan across several devices that share
// one activation arena (the paper's Appendix: per-device ordered queues, dependency
// counters in shared memory, per-subtask timestamps).
//
// Create validates the plan, lays out the arena (two tensors share memory when
// the plan's dependencies and queue order finish every op touching one before any op touching the
// other starts - plan_order.h - so devices never race on it), and has each device compile its
// subtasks against fixed arena views. Run copies the inputs in, posts each device its whole queue,
// and lets the devices synchronise among themselves through one dependency counter per op in shared
// memory, counting that op's finished subtasks (a cin-split op counts once, when its last partial
// sum is in and its activation applied). A subtask waits only for predecessor ops that have work on
// another device - its own queue orders the rest. CPU devices wait by spinning briefly on the
// counter, then parking on it (futex), and publish with an atomic add that wakes parked waiters; a
// device that can_enqueue (the GPU) gets its whole queue up front, with the waits and completion
// signals as small kernels in its command queue (no time budget: once every host queue has ended
// the runtime raises a release word, and a wait kernel still short of its target then fails instead
// of spinning forever). Run returns once every queue has drained, then copies the outputs out. If a
// subtask fails, the counters are pushed past every target so all waiters, host or device, stop at
// once. When a device cannot share the arena coherently (coarse-grained SVM, mapped buffers), its
// subtasks take the arena in turns with everyone else (a reader-writer lock around each subtask).
//
// Devices are not owned and must outlive the runtime. Thread-safety: Run calls are
// serialized internally (one arena).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "executor/common/aligned_floats.h"
#include "executor/common/arena_plan.h"
#include "executor/common/tensor_view.h"
#include "executor/runtime/device.h"
#include "executor/runtime/execution_plan.h"
#include "model/graph.h"

namespace psched::executor::runtime {

struct SubtaskTiming {
  int device = 0;
  PlanStep step;
  int64_t start_ns = 0;  // since the start of Run
  int64_t end_ns = 0;
  // The device's own execution time (GPU event profiling); negative when it reports none.
  double device_us = -1;
  // A residual add that ran inside the previous step of its device, its conv
  // (RuntimeOptions::fuse_residual_adds): that step's time is both ops', this one's nothing.
  bool fused_away = false;
};

struct RuntimeOptions {
  // Allocates the shared arena of `floats` elements (64-byte aligned), e.g. in fine-grained
  // OpenCL SVM so a GPU device reads and writes it in place; the runtime keeps the returned
  // owner. Empty: the runtime allocates host memory itself.
  std::function<absl::StatusOr<SharedMemory<float>>(size_t floats)> allocate_arena;
  // Allocates the `count` int32 dependency counters, e.g. in fine-grained SVM with atomics so
  // a GPU device can wait and signal from its command queue; the runtime keeps the returned
  // owner. Empty: host memory (every device then synchronises on the host).
  std::function<absl::StatusOr<SharedMemory<int32_t>>(size_t count)> allocate_counters;
  // Where a device queue runs a whole conv and then the whole residual Add of its output, and
  // the add's other operand is complete before the conv starts, run the two as one subtask on
  // devices that can (Device::FusesResidualAdds; executor/common/residual_add_fusion.h). The add's
  // own step then takes no time and the conv's includes it.
  bool fuse_residual_adds = true;
  // A device thread that the plan leaves idle for a long time before a step whose input comes
  // from another device sleeps until shortly before the plan says the input is due, then
  // waits as usual (spin, then park): it is spinning when the input comes instead of parked, so
  // the step starts without a wake-up (35-200 us on a 2-vCPU x86 VM). A publisher wakes it
  // at once if the input comes sooner. Plans without predicted times (PlanStep) never sleep.
  bool predictive_wake = true;
};

// The shared arena Create would allocate for a plan, laid out without allocating it.
struct ArenaSize {
  int64_t floats = 0;  // activations, partial-sum buffers, XNNPACK's slack
  ArenaPlan layout;    // where each activation tensor lives
};

class CoExecutionRuntime {
 public:
  // How long a host waiter spins before it parks. A parked waiter resumes 35-45 us after the wake
  // on a 2-vCPU x86 VM (a halted virtual CPU woken by an interrupt), so a wait of a few tens of
  // microseconds - two devices finishing the slices of one split op at slightly different times,
  // the common case in partitioned plans - should end spinning: at 20 us, 35-45 us wake-ups were
  // 5-15% of a co-execution run of squeezenet_v1_1 or peleenet (docs/runtime-performance.md).
  // Longer waits still park, so an oversubscribed machine gets the core back for the work being
  // waited for after this long.
  static constexpr int64_t kSpinNs = 100'000;

  static absl::StatusOr<std::unique_ptr<CoExecutionRuntime>> Create(
      const model::Graph& graph, std::vector<Device*> devices, ExecutionPlan plan,
      const RuntimeOptions& options = {});
  ~CoExecutionRuntime();
  // The arena Create(graph, devices, plan, options) would allocate, computed without
  // allocating it or compiling a kernel: what a caller checks against a memory budget first.
  // The same errors as Create for an invalid graph or plan.
  static absl::StatusOr<ArenaSize> ArenaSizeOf(const model::Graph& graph,
                                               std::vector<Device*> devices, ExecutionPlan plan,
                                               const RuntimeOptions& options = {});

  // One NHWC buffer per graph input / output in graph order.
  absl::Status Run(std::span<const float* const> inputs_nhwc, std::span<float* const> outputs_nhwc);
  absl::StatusOr<std::vector<std::vector<float>>> Run(
      const std::vector<std::vector<float>>& inputs_nhwc);

  // Per-subtask timestamps of the last Run, device by device in queue order.
  const std::vector<SubtaskTiming>& last_timings() const { return timings_; }
  // Floats in the shared arena (activations, partial-sum buffers, XNNPACK's slack).
  size_t arena_floats() const { return arena_floats_; }
  // Residual adds that run inside their conv's subtask.
  int fused_residual_adds() const;
  // Waits that began with a predictive sleep (RuntimeOptions::predictive_wake), over every Run.
  int64_t predictive_sleeps() const { return predictive_sleeps_.load(); }

 private:
  struct OpState {
    int32_t num_subtasks = 0;
    // What the op's counter reads once the op is complete: its subtask count, or 1 for a
    // cin split (only the slice that completes the sum signals).
    int32_t done_target = 0;
    bool cin_split = false;
    model::Activation activation;
    TensorView output;
    // cin split: where slices 2..k add their partial sums (dense, the output's shape).
    std::vector<TensorView> partials;
    std::atomic<int32_t> cin_slices_done{0};  // during Run
  };
  struct Queued {
    PlanStep step;
    std::unique_ptr<Subtask> subtask;
    // Predecessor ops with work on another device (the device's own order covers the rest).
    std::vector<CounterWait> waits;
    bool enqueue = false;    // runs from the device's command queue
    bool exclusive = false;  // takes the arena for itself while it runs
    bool wake_host = false;  // a host thread may park on this op's counter
    size_t timing_index = 0;
  };

  CoExecutionRuntime() = default;
  absl::Status Compile(const model::Graph& graph, const RuntimeOptions& options);
  // Counts each op's subtasks, decides the fused residual adds and lays out the arena
  // (arena_plan_, one partial-sum buffer per cin slice but the first at `partial_offsets`);
  // returns the arena's floats. Allocates nothing of the arena's size.
  int64_t LayOutArena(const model::Graph& graph, const RuntimeOptions& options,
                      std::vector<int64_t>& partial_offsets);
  // Per device and queue step, the residual a conv step adds inside its subtask when `fuse`
  // (RuntimeOptions::fuse_residual_adds) and its next step is a residual add that can run
  // there; kInvalidId for every other step.
  std::vector<std::vector<model::TensorId>> FusedResiduals(const model::Graph& graph,
                                                           bool fuse) const;
  absl::Status AllocateArena(size_t floats, const RuntimeOptions& options);
  absl::Status AllocateCounters(const RuntimeOptions& options);
  // TSan builds only: fills seen_through_queues_.
  void PlanQueueAnnotations();
  void RunQueue(int device, int64_t start_ns);
  // Where a device's queue is against its plan: when its first step started (the run's start
  // until then) and the plan's time for it (0 until then), and the predicted end of its
  // previous step. Negative plan times: the plan has none.
  struct PlanProgress {
    int64_t origin_ns = 0;
    double origin_us = 0;
    double prev_end_us = 0;
  };
  // Before the waits of `q` (RuntimeOptions::predictive_wake): sleeps until shortly before its
  // input is due, when the plan has the device idle long enough before it.
  void SleepUntilNearlyDue(const Queued& q, const PlanProgress& progress);
  // Copies the inputs into the arena - across `across`'s cores when set (called in a job it
  // runs) - and lets the queues waiting for them start.
  void CopyInputs(std::span<const float* const> inputs_nhwc, Device* across);
  // Spins briefly, then parks on the counters (futex) until every wait is met. False when the
  // run was aborted meanwhile.
  bool WaitOnHost(std::span<const CounterWait> waits);
  // Spins briefly, then parks (ParkUntil, no deadline) until *word >= target.
  static void WaitAtLeast(int32_t* word, std::atomic<int32_t>& parked, int32_t target);
  // Parks on `word`, counted in `parked`, until *word >= target (true) or NowNs() passes
  // `deadline_ns` (false; kNoDeadline: never).
  static constexpr int64_t kNoDeadline = -1;
  static bool ParkUntil(int32_t* word, std::atomic<int32_t>& parked, int32_t target,
                        int64_t deadline_ns);
  // Adds op's completion to its counter and wakes the host threads parked on it.
  void Publish(model::OpId op);
  // Counts a finished subtask of `op`; true when the op is now complete (for a cin split, the
  // last partial sum is in and the activation applied).
  bool CompletesOp(model::OpId op);
  // Runs `q` on the calling thread, records its host timestamps and publishes its completion,
  // taking turns on the arena when a device needs them.
  absl::Status RunOnHost(const Queued& q, int64_t start_ns);
  // Takes the device's own timestamps and execution time of `q`'s last run, where it has any.
  void RecordDeviceTiming(const Queued& q, int64_t start_ns);
  void Abort(absl::Status status);
  std::atomic_ref<int32_t> counter(size_t op) const {
    return std::atomic_ref<int32_t>(counters_[op]);
  }

  std::vector<Device*> devices_;
  ExecutionPlan plan_;
  ArenaPlan arena_plan_;
  AlignedFloats owned_arena_;  // null when the caller allocated it
  float* arena_ = nullptr;
  size_t arena_floats_ = 0;
  std::shared_ptr<void> arena_owner_;     // an allocator's arena
  std::shared_ptr<void> counters_owner_;  // an allocator's counters
  std::vector<int32_t> owned_counters_;   // empty when an allocator provided them
  int32_t* counters_ = nullptr;           // one per op, then the release word
  // Host threads parked on each op's counter (WaitOnHost); a publisher wakes only when > 0.
  std::unique_ptr<std::atomic<int32_t>[]> waiters_;
  // A device that enqueues waits and signals in its command queue orders host threads through
  // kernels ThreadSanitizer cannot see. For a TSan build (sync/tsan.h), by op: what a host
  // thread that saw the op's counter met may take as done before - each enqueued subtask up to
  // the op's last one in every queue (the dispatcher's work before enqueueing it) and the
  // counters those waited for, transitively. Empty in other builds.
  std::vector<std::vector<const void*>> seen_through_queues_;
  // 1 once Run has copied this run's inputs into the arena (the other devices' queues are
  // posted before), and the device threads parked on it (WaitAtLeast).
  int32_t inputs_copied_ = 0;
  std::atomic<int32_t> inputs_waiters_{0};
  // Devices whose queue loop has not ended in this Run; the last one sets the release word.
  std::atomic<int> host_queues_running_{0};
  std::vector<TensorView> inputs_, outputs_;
  std::vector<std::vector<model::TensorId>> fused_residuals_;  // FusedResiduals
  std::vector<OpState> ops_;
  std::vector<std::vector<Queued>> queues_;
  // The devices whose queue has work: only they take part in a Run (an idle device's thread is
  // not woken for an empty queue, nor does the run wait for it).
  std::vector<size_t> working_devices_;
  std::vector<SubtaskTiming> timings_;
  // Held shared by subtasks that use the arena in place, exclusively by one that unmaps it;
  // only used when some subtask takes_arena_turns().
  std::shared_mutex arena_turn_;
  bool turn_taking_ = false;
  std::mutex run_mu_;  // serializes Run
  std::mutex error_mu_;
  absl::Status error_;
  std::atomic<bool> aborted_{false};
  bool predictive_wake_ = true;
  std::atomic<int64_t> predictive_sleeps_{0};
};

}  // namespace psched::executor::runtime
