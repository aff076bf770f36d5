#include "scheduler/partition_aware/stage_heft.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace psched::scheduler::partition_aware {

void StageHeft::Prepare(const Problem& problem, std::span<const OpId> ops, const Schedule& fixed) {
  problem_ = &problem;
  devices_ = problem.num_devices();
  const size_t n = static_cast<size_t>(problem.num_ops());
  if (local_.size() != n) local_.assign(n, -1);
  for (OpId op : ops_) local_[static_cast<size_t>(op)] = -1;
  ops_.assign(ops.begin(), ops.end());
  for (size_t l = 0; l < ops_.size(); ++l) local_[static_cast<size_t>(ops_[l])] = static_cast<int>(l);
  have_reference_ = false;

  // Completion of earlier subtasks per (op, device), for the stage's external inputs.
  std::vector<double> fixed_end(n * static_cast<size_t>(devices_), -1.0);
  for (const ScheduledSubtask& s : fixed.subtasks()) {
    double& e = fixed_end[static_cast<size_t>(s.op) * static_cast<size_t>(devices_) + static_cast<size_t>(s.device)];
    e = std::max(e, s.end_us);
  }
  const size_t count = ops_.size();
  external_ready_.assign(count * static_cast<size_t>(devices_), 0.0);
  pred_begin_.assign(1, 0);
  succ_begin_.assign(1, 0);
  pred_local_.clear();
  pred_transfer_.clear();
  succ_local_.clear();
  succ_mean_transfer_.clear();
  double earliest = std::numeric_limits<double>::infinity();
  for (size_t l = 0; l < count; ++l) {
    const OpId op = ops_[l];
    const auto preds = problem.preds(op);
    const auto transfer = problem.pred_transfer_us(op);
    bool entry = true;
    for (size_t k = 0; k < preds.size(); ++k) {
      const int pl = local_[static_cast<size_t>(preds[k])];
      if (pl >= 0) {
        entry = false;
        pred_local_.push_back(pl);
        pred_transfer_.push_back(transfer[k]);
        continue;
      }
      for (int e = 0; e < devices_; ++e) {
        const double end = fixed_end[static_cast<size_t>(preds[k]) * static_cast<size_t>(devices_) + static_cast<size_t>(e)];
        if (end < 0) continue;
        for (int d = 0; d < devices_; ++d) {
          double& ready = external_ready_[At(static_cast<int>(l), d)];
          ready = std::max(ready, end + problem.EdgeCostUs(transfer[k], e, d));
        }
      }
    }
    if (entry) {
      double ready = std::numeric_limits<double>::infinity();
      for (int d = 0; d < devices_; ++d) ready = std::min(ready, external_ready_[At(static_cast<int>(l), d)]);
      earliest = std::min(earliest, ready);
    }
    pred_begin_.push_back(static_cast<int>(pred_local_.size()));
    const auto succs = problem.succs(op);
    const auto succ_transfer = problem.succ_transfer_us(op);
    for (size_t k = 0; k < succs.size(); ++k) {
      const int sl = local_[static_cast<size_t>(succs[k])];
      if (sl < 0) continue;
      succ_local_.push_back(sl);
      succ_mean_transfer_.push_back(problem.MeanTransferUs(succ_transfer[k]));
    }
    succ_begin_.push_back(static_cast<int>(succ_local_.size()));
  }
  // Only earlier intervals that end after the first possible start can delay the stage.
  base_busy_.resize(static_cast<size_t>(devices_));
  for (auto& b : base_busy_) b.clear();
  for (const ScheduledSubtask& s : fixed.subtasks()) {
    if (s.end_us > earliest) base_busy_[static_cast<size_t>(s.device)].emplace_back(s.start_us, s.end_us);
  }
  timelines_.resize(static_cast<size_t>(devices_));
}

void StageHeft::Expand(std::span<const PartitionPlan> plans) {
  tasks_.clear();
  cost_.clear();
  mean_cost_.clear();
  task_begin_.clear();
  for (size_t l = 0; l < ops_.size(); ++l) {
    const OpId op = ops_[l];
    const PartitionPlan& plan = plans[static_cast<size_t>(op)];
    task_begin_.push_back(static_cast<int>(tasks_.size()));
    int64_t begin = 0;
    for (size_t q = 0; q < plan.work.size(); ++q) {
      const int64_t w = plan.work[q];
      if (w == 0) continue;
      tasks_.push_back(Task{static_cast<int>(l), static_cast<int>(q), plan.axis, begin, begin + w});
      double sum = 0;
      for (int d = 0; d < devices_; ++d) {
        const double c = problem_->LatencyUs(op, plan.axis, w, d);
        cost_.push_back(c);
        sum += c;
      }
      mean_cost_.push_back(sum / devices_);
      begin += w;
    }
  }
  task_begin_.push_back(static_cast<int>(tasks_.size()));
}

void StageHeft::Rank() {
  // As scheduler::UpwardRanks restricted to the stage.
  rank_.resize(tasks_.size());
  op_rank_.assign(ops_.size(), 0.0);
  for (int l = static_cast<int>(ops_.size()) - 1; l >= 0; --l) {
    double tail = 0;
    for (int k = succ_begin_[static_cast<size_t>(l)]; k < succ_begin_[static_cast<size_t>(l) + 1]; ++k) {
      tail = std::max(tail, succ_mean_transfer_[static_cast<size_t>(k)] +
                                op_rank_[static_cast<size_t>(succ_local_[static_cast<size_t>(k)])]);
    }
    double best = 0;
    for (int t = task_begin_[static_cast<size_t>(l)]; t < task_begin_[static_cast<size_t>(l) + 1]; ++t) {
      rank_[static_cast<size_t>(t)] = mean_cost_[static_cast<size_t>(t)] + tail;
      best = std::max(best, rank_[static_cast<size_t>(t)]);
    }
    op_rank_[static_cast<size_t>(l)] = best;
  }
  // As scheduler::OrderByDecreasingRank: larger rank first, lower task index on ties.
  order_.resize(tasks_.size());
  std::iota(order_.begin(), order_.end(), 0);
  std::sort(order_.begin(), order_.end(), [this](int a, int b) {
    const double ra = rank_[static_cast<size_t>(a)];
    const double rb = rank_[static_cast<size_t>(b)];
    return ra != rb ? ra > rb : a < b;
  });
}

void StageHeft::PlaceFrom(size_t from) {
  for (int d = 0; d < devices_; ++d) {
    DeviceTimeline& t = timelines_[static_cast<size_t>(d)];
    t.Clear();
    for (const auto& [start, end] : base_busy_[static_cast<size_t>(d)]) t.Insert(start, end);
  }
  placed_end_.assign(ops_.size() * static_cast<size_t>(devices_), -1.0);
  task_device_.assign(tasks_.size(), -1);
  task_start_.assign(tasks_.size(), 0.0);
  makespan_ = 0;
  for (size_t k = 0; k < order_.size(); ++k) {
    const int t = order_[k];
    const Task& task = tasks_[static_cast<size_t>(t)];
    const double* cost = cost_.data() + static_cast<size_t>(t) * static_cast<size_t>(devices_);
    int device = -1;
    double start = 0;
    if (k < from) {
      device = reference_[k].device;
      start = reference_[k].start;
    } else {
      double best_end = 0;
      for (int d = 0; d < devices_; ++d) {
        if (placed_end_[At(task.local, d)] >= 0) continue;  // a sibling runs there
        double ready = external_ready_[At(task.local, d)];
        for (int k2 = pred_begin_[static_cast<size_t>(task.local)]; k2 < pred_begin_[static_cast<size_t>(task.local) + 1]; ++k2) {
          const int p = pred_local_[static_cast<size_t>(k2)];
          for (int e = 0; e < devices_; ++e) {
            const double end = placed_end_[At(p, e)];
            if (end >= 0) ready = std::max(ready, end + problem_->EdgeCostUs(pred_transfer_[static_cast<size_t>(k2)], e, d));
          }
        }
        const double s = timelines_[static_cast<size_t>(d)].EarliestStart(ready, cost[d]);
        if (device < 0 || s + cost[d] < best_end) {
          device = d;
          start = s;
          best_end = s + cost[d];
        }
      }
    }
    const double end = start + cost[device];
    timelines_[static_cast<size_t>(device)].Insert(start, end);
    placed_end_[At(task.local, device)] = end;
    task_device_[static_cast<size_t>(t)] = device;
    task_start_[static_cast<size_t>(t)] = start;
    makespan_ = std::max(makespan_, end);
  }
}

double StageHeft::Run(std::span<const PartitionPlan> plans, OpId changed) {
  Expand(plans);
  Rank();
  size_t prefix = 0;
  if (changed >= 0 && have_reference_) {
    const int changed_local = local_[static_cast<size_t>(changed)];
    const size_t limit = std::min(order_.size(), reference_.size());
    while (prefix < limit) {
      const Task& task = tasks_[static_cast<size_t>(order_[prefix])];
      const Placed& ref = reference_[prefix];
      if (task.local == changed_local || task.local != ref.local || task.slot != ref.slot) break;
      ++prefix;
    }
  }
  reused_ += static_cast<int64_t>(prefix);
  PlaceFrom(prefix);
  return makespan_;
}

void StageHeft::MarkReference() {
  reference_.resize(order_.size());
  for (size_t k = 0; k < order_.size(); ++k) {
    const int t = order_[k];
    reference_[k] = Placed{tasks_[static_cast<size_t>(t)].local, tasks_[static_cast<size_t>(t)].slot,
                           task_device_[static_cast<size_t>(t)], task_start_[static_cast<size_t>(t)]};
  }
  have_reference_ = true;
}

void StageHeft::Emit(Schedule& out) const {
  for (size_t t = 0; t < tasks_.size(); ++t) {
    const Task& task = tasks_[t];
    const int device = task_device_[t];
    const double start = task_start_[t];
    out.Add(ScheduledSubtask{ops_[static_cast<size_t>(task.local)], task.slot, device, task.axis, task.begin,
                             task.end, start, start + cost_[t * static_cast<size_t>(devices_) + static_cast<size_t>(device)]});
  }
}

}  // namespace psched::scheduler::partition_aware
