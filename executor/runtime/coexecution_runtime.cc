#include "executor/runtime/coexecution_runtime.h"

#include <algorithm>
#include <chrono>
#include <latch>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "executor/common/activation.h"
#include "executor/common/futex.h"
#include "executor/common/residual_add_fusion.h"
#include "executor/io_buffers.h"
#include "executor/runtime/plan_order.h"
#include "model/op_validation.h"
#include "sync/tsan.h"

namespace psched::executor::runtime {
namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Added to every counter on abort: past any target, so every waiter - a host thread or a wait
// kernel in a GPU queue - stops waiting at once (counters are zeroed before each run).
constexpr int32_t kAbortBump = 1 << 28;

// A predictive sleep (SleepUntilNearlyDue) ends this long plus a fifth of the predicted wait
// before the input is due: a sleeping thread resumes 35-200 us after its timer on
// a 2-vCPU x86 VM, and the plan's times are off by 5-15% (docs/evaluation.md). Waits predicted
// shorter than CoExecutionRuntime::kSpinNs plus this lead are left to it.
constexpr double kWakeLeadUs = 150;
constexpr double kLeadShare = 0.2;

// The step of a residual add that runs inside its conv's subtask: done once that one is.
class FusedAwaySubtask final : public Subtask {
 public:
  absl::Status Run() override { return absl::OkStatus(); }
};

}  // namespace

absl::StatusOr<std::unique_ptr<CoExecutionRuntime>> CoExecutionRuntime::Create(
    const model::Graph& graph, std::vector<Device*> devices, ExecutionPlan plan,
    const RuntimeOptions& options) {
  if (devices.empty() || std::find(devices.begin(), devices.end(), nullptr) != devices.end()) {
    return absl::InvalidArgumentError("the runtime needs at least one device and no null ones");
  }
  if (!graph.has_weights) {
    return absl::FailedPreconditionError(absl::StrCat("graph '", graph.name, "' has no weights"));
  }
  for (model::OpId id = 0; id < static_cast<model::OpId>(graph.ops.size()); ++id) {
    if (auto s = model::ValidateOp(graph, id); !s.ok()) return s;
  }
  if (auto s = ValidateExecutionPlan(graph, plan, static_cast<int>(devices.size())); !s.ok()) {
    return s;
  }
  std::unique_ptr<CoExecutionRuntime> rt(new CoExecutionRuntime());
  rt->devices_ = std::move(devices);
  rt->plan_ = std::move(plan);
  if (auto s = rt->Compile(graph, options); !s.ok()) return s;
  return rt;
}

CoExecutionRuntime::~CoExecutionRuntime() = default;

absl::StatusOr<ArenaSize> CoExecutionRuntime::ArenaSizeOf(const model::Graph& graph,
                                                           std::vector<Device*> devices,
                                                           ExecutionPlan plan,
                                                           const RuntimeOptions& options) {
  if (devices.empty() || std::find(devices.begin(), devices.end(), nullptr) != devices.end()) {
    return absl::InvalidArgumentError("the runtime needs at least one device and no null ones");
  }
  for (model::OpId id = 0; id < static_cast<model::OpId>(graph.ops.size()); ++id) {
    if (auto s = model::ValidateOp(graph, id); !s.ok()) return s;
  }
  if (auto s = ValidateExecutionPlan(graph, plan, static_cast<int>(devices.size())); !s.ok()) {
    return s;
  }
  CoExecutionRuntime rt;
  rt.devices_ = std::move(devices);
  rt.plan_ = std::move(plan);
  std::vector<int64_t> partial_offsets;
  const int64_t floats = rt.LayOutArena(graph, options, partial_offsets);
  return ArenaSize{floats, std::move(rt.arena_plan_)};
}

int64_t CoExecutionRuntime::LayOutArena(const model::Graph& graph, const RuntimeOptions& options,
                                        std::vector<int64_t>& partial_offsets) {
  ops_ = std::vector<OpState>(graph.ops.size());
  for (size_t d = 0; d < plan_.device_steps.size(); ++d) {
    for (const PlanStep& step : plan_.device_steps[d]) {
      OpState& s = ops_[static_cast<size_t>(step.op)];
      ++s.num_subtasks;
      s.cin_split |= step.slice.axis == model::SplitAxis::kInputChannels;
    }
  }
  // The activations, then one partial-sum buffer per cin slice but the op's first, which adds
  // into the output itself: no two slices ever add into the same memory. Tensors share memory,
  // keeping the working set in cache as the bare executor does, when the plan finishes every op
  // touching one before any op touching the other starts (plan_order.h); a cin-split op's output
  // is zeroed when a run starts, so it is live from the start.
  std::vector<model::TensorId> zeroed_at_start;
  for (model::OpId id = 0; id < static_cast<model::OpId>(graph.ops.size()); ++id) {
    if (ops_[static_cast<size_t>(id)].cin_split) zeroed_at_start.push_back(graph.op(id).output);
  }
  // A residual add run inside its conv's subtask writes its output while the conv runs.
  fused_residuals_ = FusedResiduals(graph, options.fuse_residual_adds);
  predictive_wake_ = options.predictive_wake;
  std::vector<ExtraWriter> early_writes;
  for (size_t d = 0; d < fused_residuals_.size(); ++d) {
    const std::vector<PlanStep>& steps = plan_.device_steps[d];
    for (size_t i = 0; i < steps.size(); ++i) {
      if (fused_residuals_[d][i] != model::kInvalidId) {
        early_writes.push_back({graph.op(steps[i + 1].op).output, steps[i].op});
      }
    }
  }
  arena_plan_ = PlanArena(graph, PlanOrder(graph, plan_), zeroed_at_start, early_writes);
  int64_t floats = arena_plan_.size;
  partial_offsets.assign(ops_.size(), -1);
  for (model::OpId id = 0; id < static_cast<model::OpId>(graph.ops.size()); ++id) {
    const OpState& s = ops_[static_cast<size_t>(id)];
    if (!s.cin_split) continue;
    floats = (floats + 15) / 16 * 16;  // 64-byte aligned
    partial_offsets[static_cast<size_t>(id)] = floats;
    floats += (s.num_subtasks - 1) * graph.output_shape(id).Elements();
  }
  return floats;
}

absl::Status CoExecutionRuntime::Compile(const model::Graph& graph, const RuntimeOptions& options) {
  std::vector<int64_t> partial_offsets;
  const int64_t floats = LayOutArena(graph, options, partial_offsets);
  // Which devices run a part of each op: a successor on another device must wait for it.
  std::vector<std::vector<bool>> runs_on(ops_.size(), std::vector<bool>(devices_.size()));
  for (size_t d = 0; d < plan_.device_steps.size(); ++d) {
    for (const PlanStep& step : plan_.device_steps[d]) {
      runs_on[static_cast<size_t>(step.op)][d] = true;
    }
  }
  if (auto s = AllocateArena(static_cast<size_t>(floats), options); !s.ok()) return s;
  arena_floats_ = static_cast<size_t>(floats);
  for (Device* device : devices_) {
    if (auto s = device->BindArena(arena_, static_cast<size_t>(floats), arena_plan_.tensors);
        !s.ok()) {
      return s;
    }
  }
  auto view = [&](model::TensorId t) {
    const TensorPlacement& p = arena_plan_.tensors[static_cast<size_t>(t)];
    return TensorView{arena_ + p.offset, graph.tensor(t).shape, p.pixel_stride};
  };
  for (const model::GraphIO& io : graph.inputs) inputs_.push_back(view(io.tensor));
  for (const model::GraphIO& io : graph.outputs) {
    if (arena_plan_.tensors[static_cast<size_t>(io.tensor)].offset < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph output '", io.name, "' is a constant, not an activation"));
    }
    outputs_.push_back(view(io.tensor));
  }

  if (auto s = AllocateCounters(options); !s.ok()) return s;
  for (Device* device : devices_) {
    if (auto s = device->BindCounters(counters_, ops_.size() + 1); !s.ok()) return s;
  }
  waiters_ = std::make_unique<std::atomic<int32_t>[]>(ops_.size());
  for (model::OpId id = 0; id < static_cast<model::OpId>(graph.ops.size()); ++id) {
    OpState& s = ops_[static_cast<size_t>(id)];
    s.done_target = s.cin_split ? 1 : s.num_subtasks;
    s.activation = graph.op(id).activation;
    s.output = view(graph.op(id).output);
    if (s.cin_split) {
      const model::Shape& shape = s.output.shape;
      for (int32_t k = 1; k < s.num_subtasks; ++k) {
        s.partials.push_back(
            {arena_ + partial_offsets[static_cast<size_t>(id)] + (k - 1) * shape.Elements(), shape,
             shape.c});
      }
    }
  }
  queues_.resize(plan_.device_steps.size());
  std::vector<size_t> cin_slices_placed(ops_.size(), 0);
  for (size_t d = 0; d < plan_.device_steps.size(); ++d) {
    for (size_t i = 0; i < plan_.device_steps[d].size(); ++i) {
      const PlanStep& step = plan_.device_steps[d][i];
      OpState& s = ops_[static_cast<size_t>(step.op)];
      std::vector<TensorView> in_views;
      for (model::TensorId t : graph.ActivationInputs(step.op)) in_views.push_back(view(t));
      TensorView target = s.output;
      if (step.slice.axis == model::SplitAxis::kInputChannels) {
        const size_t k = cin_slices_placed[static_cast<size_t>(step.op)]++;
        if (k > 0) target = s.partials[k - 1];
      }
      absl::StatusOr<std::unique_ptr<Subtask>> subtask;
      const model::TensorId residual = fused_residuals_[d][i];
      const bool fused_away = i > 0 && fused_residuals_[d][i - 1] != model::kInvalidId;
      if (residual != model::kInvalidId) {
        const model::OpId add = plan_.device_steps[d][i + 1].op;
        in_views.push_back(target);
        in_views.push_back(view(residual));
        subtask = devices_[d]->CompileResidualAddedConv(graph, step.op, add, in_views,
                                                        view(graph.op(add).output));
      } else if (fused_away) {
        subtask = std::make_unique<FusedAwaySubtask>();
      } else {
        subtask = devices_[d]->Compile(graph, step.op, step.slice, in_views, target);
      }
      if (!subtask.ok()) {
        return absl::Status(
            subtask.status().code(),
            absl::StrCat("device ", devices_[d]->name(), ": ", subtask.status().message()));
      }
      Queued q{.step = step,
               .subtask = std::move(*subtask),
               .waits = {},
               .timing_index = timings_.size()};
      for (model::OpId pred : graph.Predecessors(step.op)) {
        std::vector<bool> elsewhere = runs_on[static_cast<size_t>(pred)];
        elsewhere[d] = false;
        if (std::find(elsewhere.begin(), elsewhere.end(), true) != elsewhere.end()) {
          q.waits.push_back(
              {static_cast<size_t>(pred), ops_[static_cast<size_t>(pred)].done_target});
        }
      }
      // A cin slice's completion is decided on the host (the last one combines the partials).
      q.enqueue = q.subtask->can_enqueue() && step.slice.axis != model::SplitAxis::kInputChannels;
      q.exclusive = q.subtask->takes_arena_turns();
      turn_taking_ |= q.exclusive;
      queues_[d].push_back(std::move(q));
      timings_.push_back({.device = static_cast<int>(d), .step = step, .fused_away = fused_away});
    }
  }
  // A host thread may park on an op's counter: a queue that signals it must wake it.
  std::vector<bool> host_waited(ops_.size());
  for (const std::vector<Queued>& queue : queues_) {
    for (const Queued& q : queue) {
      if (q.enqueue) continue;
      for (const CounterWait& w : q.waits) host_waited[w.counter] = true;
    }
  }
  for (std::vector<Queued>& queue : queues_) {
    for (Queued& q : queue) q.wake_host = host_waited[static_cast<size_t>(q.step.op)];
  }
  for (size_t d = 0; d < queues_.size(); ++d) {
    if (!queues_[d].empty()) working_devices_.push_back(d);
  }
  if constexpr (sync::kTsan) PlanQueueAnnotations();
  return absl::OkStatus();
}

int CoExecutionRuntime::fused_residual_adds() const {
  int n = 0;
  for (const std::vector<model::TensorId>& queue : fused_residuals_) {
    n += static_cast<int>(queue.size()) -
         static_cast<int>(std::count(queue.begin(), queue.end(), model::kInvalidId));
  }
  return n;
}

std::vector<std::vector<model::TensorId>> CoExecutionRuntime::FusedResiduals(
    const model::Graph& graph, bool fuse) const {
  // Where every op's steps are: (device, index in its queue).
  std::vector<std::vector<std::pair<size_t, size_t>>> steps_of(graph.ops.size());
  for (size_t d = 0; d < plan_.device_steps.size(); ++d) {
    for (size_t i = 0; i < plan_.device_steps[d].size(); ++i) {
      steps_of[static_cast<size_t>(plan_.device_steps[d][i].op)].push_back({d, i});
    }
  }
  auto is_ancestor = [&](model::OpId a, model::OpId b) {
    std::vector<bool> seen(graph.ops.size());
    std::vector<model::OpId> pending{b};
    while (!pending.empty()) {
      const model::OpId x = pending.back();
      pending.pop_back();
      for (model::OpId p : graph.Predecessors(x)) {
        if (p == a) return true;
        if (!seen[static_cast<size_t>(p)]) {
          seen[static_cast<size_t>(p)] = true;
          pending.push_back(p);
        }
      }
    }
    return false;
  };
  std::vector<std::vector<model::TensorId>> fused(plan_.device_steps.size());
  for (size_t d = 0; d < plan_.device_steps.size(); ++d) {
    const std::vector<PlanStep>& steps = plan_.device_steps[d];
    fused[d].assign(steps.size(), model::kInvalidId);
    if (!fuse || !devices_[d]->FusesResidualAdds()) continue;
    for (size_t i = 0; i + 1 < steps.size(); ++i) {
      const PlanStep& conv = steps[i];
      const PlanStep& add = steps[i + 1];
      if (conv.slice.axis != model::SplitAxis::kNone || add.slice.axis != model::SplitAxis::kNone) {
        continue;
      }
      const std::optional<model::TensorId> residual = FusableResidual(graph, conv.op, add.op);
      if (!residual) continue;
      // The residual must be complete when the conv starts: a graph input, the output of an
      // ancestor (the conv waits for all of it), or of an op whose steps all run earlier in
      // this queue.
      const model::OpId producer = graph.tensor(*residual).producer;
      auto earlier_here = [&](const std::pair<size_t, size_t>& at) {
        return at.first == d && at.second < i;
      };
      const bool ready = producer == model::kInvalidId || is_ancestor(producer, conv.op) ||
                         std::all_of(steps_of[static_cast<size_t>(producer)].begin(),
                                     steps_of[static_cast<size_t>(producer)].end(), earlier_here);
      if (!ready) continue;
      fused[d][i] = *residual;
      ++i;
    }
  }
  return fused;
}

void CoExecutionRuntime::PlanQueueAnnotations() {
  seen_through_queues_.assign(ops_.size(), {});
  for (size_t k = 0; k < ops_.size(); ++k) {
    std::set<const void*> seen;
    std::vector<bool> visited(ops_.size());
    std::vector<size_t> pending{k};
    visited[k] = true;
    while (!pending.empty()) {
      const size_t op = pending.back();
      pending.pop_back();
      // Once op's counter is met, each queue has run its enqueued subtasks up to op's last.
      for (const std::vector<Queued>& queue : queues_) {
        size_t end = 0;
        for (size_t i = 0; i < queue.size(); ++i) {
          if (queue[i].enqueue && static_cast<size_t>(queue[i].step.op) == op) end = i + 1;
        }
        for (size_t i = 0; i < end; ++i) {
          if (!queue[i].enqueue) continue;
          seen.insert(&queue[i]);
          for (const CounterWait& w : queue[i].waits) {
            seen.insert(&counters_[w.counter]);
            if (!visited[w.counter]) {
              visited[w.counter] = true;
              pending.push_back(w.counter);
            }
          }
        }
      }
    }
    seen_through_queues_[k].assign(seen.begin(), seen.end());
  }
}

absl::Status CoExecutionRuntime::AllocateArena(size_t floats, const RuntimeOptions& options) {
  if (options.allocate_arena) {
    auto memory = options.allocate_arena(floats);
    if (!memory.ok()) return memory.status();
    arena_ = memory->data;
    arena_owner_ = std::move(memory->owner);
  } else {
    owned_arena_ = AllocateAlignedFloats(floats);
    arena_ = owned_arena_.get();
  }
  if (arena_ == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate a ", floats * sizeof(float), "-byte shared arena"));
  }
  std::fill_n(arena_, floats, 0.0f);
  return absl::OkStatus();
}

absl::Status CoExecutionRuntime::AllocateCounters(const RuntimeOptions& options) {
  // One per op, then the release word (set once every host queue has ended).
  const size_t count = ops_.size() + 1;
  if (options.allocate_counters) {
    absl::StatusOr<SharedMemory<int32_t>> memory = options.allocate_counters(count);
    if (!memory.ok()) return memory.status();
    counters_ = memory->data;
    counters_owner_ = std::move(memory->owner);
  } else {
    owned_counters_.assign(count, 0);
    counters_ = owned_counters_.data();
  }
  if (counters_ == nullptr) {
    return absl::ResourceExhaustedError("cannot allocate the dependency counters");
  }
  return absl::OkStatus();
}

void CoExecutionRuntime::Abort(absl::Status status) {
  {
    std::lock_guard<std::mutex> lock(error_mu_);
    if (error_.ok()) {
      error_ = std::move(status);
    } else {
      error_ =
          absl::Status(error_.code(), absl::StrCat(error_.message(), "; then ", status.message()));
    }
  }
  if (aborted_.exchange(true)) return;
  for (size_t op = 0; op <= ops_.size(); ++op) {
    counter(op).fetch_add(kAbortBump);
    FutexWakeAll(&counters_[op]);
  }
}

// Returns once the 32-bit `word` holds at least `target`: spins briefly (on dedicated cores
// most waits end within microseconds), then parks until a publisher wakes it - a busy machine
// needs this core for the work being waited for.
void CoExecutionRuntime::WaitAtLeast(int32_t* word, std::atomic<int32_t>& parked, int32_t target) {
  const std::atomic_ref<int32_t> value(*word);
  if (value.load(std::memory_order_acquire) >= target) return;
  const int64_t spin_until = NowNs() + kSpinNs;
  for (int spins = 1;; ++spins) {
    CpuRelax();
    if (value.load(std::memory_order_acquire) >= target) return;
    if (spins % 64 == 0 && NowNs() > spin_until) break;
  }
  ParkUntil(word, parked, target, kNoDeadline);
}

// Announcing the waiter in `parked` before re-reading the word (both sequentially consistent,
// as the publisher's write and its read of `parked`) means either the waiter sees the new value
// or the publisher sees the waiter and wakes the futex.
bool CoExecutionRuntime::ParkUntil(int32_t* word, std::atomic<int32_t>& parked, int32_t target,
                                   int64_t deadline_ns) {
  const std::atomic_ref<int32_t> value(*word);
  for (;;) {
    const int64_t left = deadline_ns == kNoDeadline ? 0 : deadline_ns - NowNs();
    if (deadline_ns != kNoDeadline && left <= 0) return false;
    parked.fetch_add(1);
    const int32_t now = value.load();
    const bool met = now >= target;
    if (!met) {
      if (deadline_ns == kNoDeadline) {
        FutexWait(word, now);
      } else {
        FutexWaitFor(word, now, left);
      }
    }
    parked.fetch_sub(1);
    if (met) return true;
  }
}

bool CoExecutionRuntime::WaitOnHost(std::span<const CounterWait> waits) {
  for (const CounterWait& w : waits) {
    WaitAtLeast(&counters_[w.counter], waiters_[w.counter], w.target);
    if constexpr (sync::kTsan) {
      for (const void* p : seen_through_queues_[w.counter]) sync::HappensAfter(p);
    }
  }
  return !aborted_.load();
}

// The input is due when the plan has the step start, on the device's measured clock: the plan's
// time since the device's first step, scaled by how far behind or ahead of the plan the device
// is at its previous step (which just ended). A run 10% slower than predicted so far gets its
// inputs about 10% later.
void CoExecutionRuntime::SleepUntilNearlyDue(const Queued& q, const PlanProgress& progress) {
  if (q.waits.empty() || q.step.predicted_start_us < 0 || progress.prev_end_us < 0 ||
      progress.origin_us < 0) {
    return;
  }
  const CounterWait* unmet = nullptr;
  for (const CounterWait& w : q.waits) {
    if (counter(w.counter).load(std::memory_order_acquire) < w.target) {
      unmet = &w;
      break;
    }
  }
  if (unmet == nullptr) return;
  const int64_t now_ns = NowNs();
  const double elapsed_us = static_cast<double>(now_ns - progress.origin_ns) / 1e3;
  const double planned_us = progress.prev_end_us - progress.origin_us;
  const double scale = planned_us > 0 ? std::clamp(elapsed_us / planned_us, 0.5, 2.0) : 1.0;
  const double wait_us = (q.step.predicted_start_us - progress.origin_us) * scale - elapsed_us;
  const double sleep_us = wait_us * (1 - kLeadShare) - kWakeLeadUs;
  if (sleep_us * 1e3 < static_cast<double>(kSpinNs)) return;
  predictive_sleeps_.fetch_add(1);
  // Parked as a waiter, so a publisher that comes early wakes it.
  ParkUntil(&counters_[unmet->counter], waiters_[unmet->counter], unmet->target,
            now_ns + static_cast<int64_t>(sleep_us * 1e3));
}

void CoExecutionRuntime::Publish(model::OpId op) {
  counter(static_cast<size_t>(op)).fetch_add(1);
  if (waiters_[static_cast<size_t>(op)].load() > 0)
    FutexWakeAll(&counters_[static_cast<size_t>(op)]);
}

bool CoExecutionRuntime::CompletesOp(model::OpId op) {
  OpState& s = ops_[static_cast<size_t>(op)];
  if (!s.cin_split) return true;
  if (s.cin_slices_done.fetch_add(1) + 1 != s.num_subtasks) return false;
  // Last partial sum: add the other slices' partials into the output, then the activation.
  for (const TensorView& partial : s.partials) AddContiguousInto(partial.data, s.output);
  ApplyActivationInPlace(s.activation, s.output);
  return true;
}

absl::Status CoExecutionRuntime::RunOnHost(const Queued& q, int64_t start_ns) {
  std::shared_lock<std::shared_mutex> shared;
  std::unique_lock<std::shared_mutex> exclusive;
  if (turn_taking_) {
    if (q.exclusive) {
      exclusive = std::unique_lock<std::shared_mutex>(arena_turn_);
    } else {
      shared = std::shared_lock<std::shared_mutex>(arena_turn_);
    }
  }
  SubtaskTiming& timing = timings_[q.timing_index];
  timing.start_ns = NowNs() - start_ns;
  absl::Status status = q.subtask->Run();
  // Still holding the turn: the last cin slice applies the activation in the arena.
  const bool publish = status.ok() && CompletesOp(q.step.op);
  timing.end_ns = NowNs() - start_ns;
  if (publish) Publish(q.step.op);
  return status;
}

void CoExecutionRuntime::RunQueue(int device, int64_t start_ns) {
  Device* dev = devices_[static_cast<size_t>(device)];
  auto fail = [&](const absl::Status& status) {
    Abort(
        absl::Status(status.code(), absl::StrCat("device ", dev->name(), ": ", status.message())));
  };
  // A queue posted before Run copied the inputs starts once they are in the arena.
  WaitAtLeast(&inputs_copied_, inputs_waiters_, 1);
  bool enqueued_any = false;
  // Where the run is against the plan on this device: from its first step's start, as measured
  // and as predicted (the run's start before it: the plan's time 0), to its previous step's
  // predicted end.
  PlanProgress progress{.origin_ns = start_ns, .origin_us = 0, .prev_end_us = 0};
  bool first = true;
  for (Queued& q : queues_[static_cast<size_t>(device)]) {
    if (aborted_.load()) break;
    if (q.enqueue) {
      enqueued_any = true;
      sync::HappensBefore(&q);  // for PlanQueueAnnotations
      if (absl::Status s =
              q.subtask->Enqueue(q.waits, static_cast<size_t>(q.step.op), ops_.size(), q.wake_host);
          !s.ok()) {
        fail(s);
        break;
      }
      continue;
    }
    if (predictive_wake_) SleepUntilNearlyDue(q, progress);
    if (!WaitOnHost(q.waits)) break;
    if (std::exchange(first, false)) {
      progress.origin_ns = NowNs();
      progress.origin_us = q.step.predicted_start_us;
    }
    progress.prev_end_us = q.step.predicted_end_us;
    absl::Status status = RunOnHost(q, start_ns);
    RecordDeviceTiming(q, start_ns);
    if (!status.ok()) {
      fail(status);
      break;
    }
  }
  // The last host queue to end raises the release word: no host thread will add to a counter
  // in this run any more, so a wait kernel still short of its target could never be met.
  if (host_queues_running_.fetch_sub(1) == 1) {
    counter(ops_.size()).store(1);
    FutexWakeAll(&counters_[ops_.size()]);
  }
  if (!enqueued_any) return;
  // Even after an abort: nothing may still be running on the arena when Run returns.
  if (absl::Status s = dev->Finish(); !s.ok()) fail(s);
  for (Queued& q : queues_[static_cast<size_t>(device)]) {
    if (!q.enqueue) continue;
    if (absl::Status s = q.subtask->CollectEnqueued(); !s.ok()) {
      // After an abort the queue ran on unfinished inputs and its waits were pushed past their
      // targets, which is expected; the first error already says why.
      if (!aborted_.load()) fail(s);
      continue;
    }
    RecordDeviceTiming(q, start_ns);
  }
}

void CoExecutionRuntime::RecordDeviceTiming(const Queued& q, int64_t start_ns) {
  SubtaskTiming& timing = timings_[q.timing_index];
  timing.device_us = q.subtask->last_device_us().value_or(-1.0);
  if (std::optional<TimeSpan> span = q.subtask->last_span()) {
    timing.start_ns = span->start_ns - start_ns;
    timing.end_ns = span->end_ns - start_ns;
  }
}

void CoExecutionRuntime::CopyInputs(std::span<const float* const> inputs_nhwc, Device* across) {
  std::vector<FloatCopy> copies;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    copies.push_back({inputs_nhwc[i], inputs_[i].data, inputs_[i].shape.Elements()});
  }
  CopyInParts(copies, [across](size_t parts, absl::FunctionRef<void(size_t)> part) {
    if (across != nullptr) {
      across->ParallelFor(parts, part);
    } else {
      for (size_t p = 0; p < parts; ++p) part(p);
    }
  });
  std::atomic_ref<int32_t>(inputs_copied_).store(1);
  if (inputs_waiters_.load() > 0) FutexWakeAll(&inputs_copied_);
}

absl::Status CoExecutionRuntime::Run(std::span<const float* const> inputs_nhwc,
                                     std::span<float* const> outputs_nhwc) {
  if (absl::Status s = CheckIoPointers(inputs_.size(), outputs_.size(), inputs_nhwc, outputs_nhwc);
      !s.ok()) {
    return s;
  }
  std::lock_guard<std::mutex> run_lock(run_mu_);
  error_ = absl::OkStatus();
  aborted_.store(false);
  counter(ops_.size()).store(0);
  for (size_t op = 0; op < ops_.size(); ++op) {
    OpState& s = ops_[op];
    counter(op).store(0);
    s.cin_slices_done.store(0);
    if (s.cin_split) {
      // Partial sums accumulate into the output and the partial buffers.
      for (int64_t h = 0; h < s.output.shape.h; ++h) {
        for (int64_t w = 0; w < s.output.shape.w; ++w) {
          std::fill_n(s.output.pixel(h, w), s.output.shape.c, 0.0f);
        }
      }
      for (const TensorView& partial : s.partials) {
        std::fill_n(partial.data, partial.shape.Elements(), 0.0f);
      }
    }
  }
  host_queues_running_.store(static_cast<int>(working_devices_.size()));
  std::atomic_ref<int32_t>(inputs_copied_).store(0);
  const int64_t start_ns = NowNs();
  std::latch done(static_cast<std::ptrdiff_t>(working_devices_.size()));
  auto queue_of = [this, start_ns, &done](size_t d) {
    return [this, d, start_ns, &done] {
      RunQueue(static_cast<int>(d), start_ns);
      done.count_down();
    };
  };
  // The calling thread runs the queue of the device whose core it is on, if that device is
  // idle (Device::TryRunHere), after handing the others theirs: one wake-up of a parked device
  // thread less at the start and none for the caller at the end.
  size_t here = devices_.size();
  for (size_t d : working_devices_) {
    if (devices_[d]->CallerOnItsCores()) {
      here = d;
      break;
    }
  }
  // The other devices' threads wake (tens of microseconds where idle cores halt) while the caller
  // copies the inputs, not after.
  for (size_t d : working_devices_) {
    if (d != here) devices_[d]->Post(queue_of(d));
  }
  bool ran_here = false;
  if (here < devices_.size()) {
    Device* dev = devices_[here];
    // Copying across the device's cores also wakes the threads of a cluster device's pool
    // (parked since the last run), which its first kernel would otherwise wait for.
    ran_here = dev->TryRunHere([&] {
      CopyInputs(inputs_nhwc, dev);
      queue_of(here)();
    });
  }
  if (!ran_here) {
    CopyInputs(inputs_nhwc, nullptr);
    if (here < devices_.size()) devices_[here]->Post(queue_of(here));
  }
  if (ran_here) {
    // Done with its own queue, the caller waits for the other devices, which in a balanced
    // plan end within tens of microseconds: spin before parking, as WaitOnHost does. (A caller
    // that ran no queue waits the whole run and parks at once, leaving the cores to the
    // devices.)
    const int64_t spin_until = NowNs() + kSpinNs;
    while (!done.try_wait() && NowNs() < spin_until) CpuRelax();
  }
  done.wait();
  if (!error_.ok()) return error_;
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const TensorView& v = outputs_[i];
    float* dst = outputs_nhwc[i];
    for (int64_t h = 0; h < v.shape.h; ++h) {
      for (int64_t w = 0; w < v.shape.w; ++w) dst = std::copy_n(v.pixel(h, w), v.shape.c, dst);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::vector<float>>> CoExecutionRuntime::Run(
    const std::vector<std::vector<float>>& inputs_nhwc) {
  std::vector<model::Shape> input_shapes, output_shapes;
  for (const TensorView& i : inputs_) input_shapes.push_back(i.shape);
  for (const TensorView& o : outputs_) output_shapes.push_back(o.shape);
  return executor::RunWithOwnedBuffers(
      input_shapes, output_shapes, inputs_nhwc,
      [this](std::span<const float* const> in, std::span<float* const> out) {
        return Run(in, out);
      });
}

}  // namespace psched::executor::runtime
