#include "scheduler/problem.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "scheduler/device_capability.h"

namespace psched::scheduler {

namespace {

// The coarser of `alignment` and a cache line of f32 channels (their least common multiple).
int64_t CoutAlignment(int64_t alignment, const platform::Platform& platform) {
  const int64_t line = std::max(1, platform.cache_line_bytes / 4);
  return std::lcm(alignment, line);
}

}  // namespace

Problem::Problem(Problem&&) noexcept = default;
Problem& Problem::operator=(Problem&&) noexcept = default;
Problem::~Problem() = default;

bool Problem::IsPartitionable(OpId op) const {
  for (model::SplitAxis a : model::kAllSplitAxes) {
    if (a != model::SplitAxis::kNone && WorkSize(op, a) > 0) return true;
  }
  return false;
}

absl::Status Problem::Init(const platform::Platform& platform,
                           std::vector<std::vector<std::pair<int, double>>> preds,
                           std::vector<int64_t> work_size, int max_splits,
                           const predictor::LatencyModel* latency_model) {
  if (platform.devices.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("platform '", platform.name, "' has no devices"));
  }
  platform_ = platform;
  num_devices_ = platform.num_devices();
  num_ops_ = static_cast<int>(preds.size());
  if (max_splits < 0) {
    return absl::InvalidArgumentError(absl::StrCat("max_splits must be >= 0, got ", max_splits));
  }
  max_splits_ = max_splits == 0 ? num_devices_ : std::min(max_splits, num_devices_);
  for (const platform::DeviceSpec& d : platform.devices) domains_.push_back(d.memory_domain);
  int cross = 0;
  for (int a = 0; a < num_devices_; ++a) {
    for (int b = 0; b < num_devices_; ++b) cross += (a != b && !SameDomain(a, b)) ? 1 : 0;
  }
  cross_domain_fraction_ =
      num_devices_ > 1 ? static_cast<double>(cross) / (num_devices_ * (num_devices_ - 1)) : 0.0;
  sync_us_.assign(static_cast<size_t>(num_devices_ * num_devices_), 0.0);
  for (int a = 0; latency_model != nullptr && a < num_devices_; ++a) {
    for (int b = 0; b < num_devices_; ++b) {
      if (a == b) continue;
      const double us = latency_model->SyncUs(a, b);
      if (!std::isfinite(us) || us < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "latency model ", latency_model->Version(), " gives sync cost ", us, " us from device ",
            platform.devices[static_cast<size_t>(a)].name, " to ",
            platform.devices[static_cast<size_t>(b)].name, "; need a finite cost >= 0"));
      }
      sync_us_[static_cast<size_t>(a * num_devices_ + b)] = us;
      mean_sync_us_ += us / (num_devices_ * (num_devices_ - 1));
      max_sync_us_ = std::max(max_sync_us_, us);
    }
  }
  edges_free_ = cross == 0 && max_sync_us_ == 0;

  std::vector<std::vector<std::pair<int, double>>> succs(preds.size());
  pred_begin_.assign(1, 0);
  for (int op = 0; op < num_ops_; ++op) {
    for (const auto& [p, cost] : preds[static_cast<size_t>(op)]) {
      pred_ops_.push_back(p);
      pred_transfer_.push_back(cost);
      succs[static_cast<size_t>(p)].emplace_back(op, cost);
    }
    pred_begin_.push_back(static_cast<int>(pred_ops_.size()));
  }
  succ_begin_.assign(1, 0);
  for (int op = 0; op < num_ops_; ++op) {
    for (const auto& [s, cost] : succs[static_cast<size_t>(op)]) {
      succ_ops_.push_back(s);
      succ_transfer_.push_back(cost);
    }
    succ_begin_.push_back(static_cast<int>(succ_ops_.size()));
  }

  work_size_ = std::move(work_size);
  table_offset_.resize(work_size_.size());
  int64_t total = 0;
  for (size_t i = 0; i < work_size_.size(); ++i) {
    table_offset_[i] = total;
    if (work_size_[i] > 0) total += (work_size_[i] + 1) * num_devices_;
  }
  table_ = std::make_unique<std::atomic<double>[]>(static_cast<size_t>(total));
  for (int64_t i = 0; i < total; ++i) table_[static_cast<size_t>(i)].store(-1.0);
  return absl::OkStatus();
}

absl::StatusOr<Problem> Problem::FromGraph(const model::Graph& graph,
                                           const platform::Platform& platform,
                                           const predictor::LatencyModel& latency_model,
                                           ProblemOptions options) {
  if (latency_model.num_devices() != platform.num_devices()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "latency model ", latency_model.Version(), " predicts ", latency_model.num_devices(),
        " devices but platform '", platform.name, "' has ", platform.num_devices()));
  }
  if (options.alignment < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("alignment must be >= 1, got ", options.alignment));
  }
  if (platform.transfer_bytes_per_us <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("platform '", platform.name, "': transfer_bytes_per_us must be > 0"));
  }
  const int n = static_cast<int>(graph.ops.size());
  std::vector<std::vector<std::pair<int, double>>> preds(static_cast<size_t>(n));
  std::vector<int64_t> work_size(static_cast<size_t>(n) * 4, 0);
  Problem p;
  const model::ConcatAliasing aliasing = model::AliasConcatInputs(graph);
  for (OpId op = 0; op < n; ++op) {
    for (OpId pred : graph.Predecessors(op)) {
      if (pred < 0 || pred >= op) {
        return absl::InvalidArgumentError(
            absl::StrCat("graph '", graph.name, "': op ", op, " (", graph.op(op).name,
                         ") reads the output of op ", pred, ": ops are not in topological order"));
      }
      const double bytes = 4.0 * static_cast<double>(graph.output_shape(pred).Elements());
      preds[static_cast<size_t>(op)].emplace_back(pred, bytes / platform.transfer_bytes_per_us);
    }
    for (model::SplitAxis a : model::kAllSplitAxes) {
      work_size[static_cast<size_t>(op) * 4 + static_cast<size_t>(a)] =
          model::WorkSize(graph, op, a);
    }
    p.op_names_.push_back(graph.op(op).name);
    p.whole_configs_.push_back(predictor::WholeOpConfig(graph, op, aliasing));
    for (model::SplitAxis a : model::kAllSplitAxes) {
      for (const platform::DeviceSpec& d : platform.devices) {
        p.unsupported_.push_back(!DeviceRunsOp(d.kind, graph, op) ||
                                 !DeviceRunsSplit(d.kind, graph, op, a));
      }
    }
  }
  if (absl::Status s = p.Init(platform, std::move(preds), std::move(work_size), options.max_splits,
                              &latency_model);
      !s.ok()) {
    return s;
  }
  p.alignment_ = options.alignment;
  p.cout_alignment_ = CoutAlignment(options.alignment, platform);
  p.latency_model_ = &latency_model;
  if (options.predict_all) p.PredictAll();
  return p;
}

absl::StatusOr<Problem> Problem::FromTaskGraph(const TaskGraph& tasks,
                                               const platform::Platform& platform,
                                               ProblemOptions options) {
  const int n = static_cast<int>(tasks.cost.size());
  if (options.alignment < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("alignment must be >= 1, got ", options.alignment));
  }
  if (!tasks.names.empty() && tasks.names.size() != tasks.cost.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("task graph has ", tasks.names.size(), " names for ", n, " tasks"));
  }
  std::vector<std::vector<std::pair<int, double>>> preds(static_cast<size_t>(n));
  for (size_t e = 0; e < tasks.edges.size(); ++e) {
    const TaskGraph::Edge& edge = tasks.edges[e];
    if (edge.from < 0 || edge.from >= n || edge.to < 0 || edge.to >= n) {
      return absl::InvalidArgumentError(absl::StrCat("task graph edge ", e, " (", edge.from, " -> ",
                                                     edge.to, ") names a task outside [0, ", n,
                                                     ")"));
    }
    if (edge.from >= edge.to) {
      return absl::InvalidArgumentError(
          absl::StrCat("task graph edge ", e, " (", edge.from, " -> ", edge.to,
                       ") does not go forward: tasks must be listed in topological order"));
    }
    if (!std::isfinite(edge.transfer_us) || edge.transfer_us < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("task graph edge ", e, " (", edge.from, " -> ", edge.to,
                       ") has transfer cost ", edge.transfer_us, "; need a finite cost >= 0"));
    }
    auto& list = preds[static_cast<size_t>(edge.to)];
    for (const auto& [from, cost] : list) {
      if (from == edge.from) {
        return absl::InvalidArgumentError(
            absl::StrCat("task graph edge ", edge.from, " -> ", edge.to, " is listed twice"));
      }
    }
    list.emplace_back(edge.from, edge.transfer_us);
  }
  for (auto& list : preds) std::sort(list.begin(), list.end());
  if (tasks.splits.size() > tasks.cost.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "task graph has split tables for ", tasks.splits.size(), " tasks, but ", n, " tasks"));
  }
  std::vector<int64_t> work_size(static_cast<size_t>(n) * 4, 0);
  for (int t = 0; t < n; ++t) work_size[static_cast<size_t>(t) * 4] = 1;
  for (size_t t = 0; t < tasks.splits.size(); ++t) {
    for (const TaskGraph::Split& split : tasks.splits[t]) {
      const size_t axis = static_cast<size_t>(split.axis);
      if (split.axis == model::SplitAxis::kNone || split.cost.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "task ", t, ": a split needs a split axis and at least one work unit, got axis ",
            std::string(model::SplitAxisName(split.axis)), " with ", split.cost.size(), " units"));
      }
      if (work_size[t * 4 + axis] != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("task ", t, ": split axis ", std::string(model::SplitAxisName(split.axis)),
                         " is given twice"));
      }
      work_size[t * 4 + axis] = static_cast<int64_t>(split.cost.size());
    }
  }
  Problem p;
  if (absl::Status s = p.Init(platform, std::move(preds), std::move(work_size), options.max_splits,
                              /*latency_model=*/nullptr);
      !s.ok()) {
    return s;
  }
  p.alignment_ = options.alignment;
  p.cout_alignment_ = CoutAlignment(options.alignment, platform);
  for (int t = 0; t < n; ++t) {
    const std::vector<double>& row = tasks.cost[static_cast<size_t>(t)];
    if (static_cast<int>(row.size()) != p.num_devices_) {
      return absl::InvalidArgumentError(
          absl::StrCat("task ", t, " has ", row.size(), " costs for ", p.num_devices_, " devices"));
    }
    for (int d = 0; d < p.num_devices_; ++d) {
      const double c = row[static_cast<size_t>(d)];
      if (!std::isfinite(c) || c < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("task ", t, " device ", d, ": cost ", c, " is not a finite value >= 0"));
      }
      // Slot of (kNone, work 1, d); work 0 is the zero slot.
      p.table_[static_cast<size_t>(p.table_offset_[static_cast<size_t>(t) * 4] + p.num_devices_ +
                                   d)]
          .store(c);
      p.table_[static_cast<size_t>(p.table_offset_[static_cast<size_t>(t) * 4] + d)].store(0.0);
    }
    p.op_names_.push_back(tasks.names.empty() ? absl::StrCat("t", t)
                                              : tasks.names[static_cast<size_t>(t)]);
    if (static_cast<size_t>(t) >= tasks.splits.size()) continue;
    for (const TaskGraph::Split& split : tasks.splits[static_cast<size_t>(t)]) {
      const int64_t offset =
          p.table_offset_[static_cast<size_t>(t) * 4 + static_cast<size_t>(split.axis)];
      for (int d = 0; d < p.num_devices_; ++d) p.table_[static_cast<size_t>(offset + d)].store(0.0);
      for (size_t u = 0; u < split.cost.size(); ++u) {
        const std::vector<double>& costs = split.cost[u];
        if (static_cast<int>(costs.size()) != p.num_devices_) {
          return absl::InvalidArgumentError(absl::StrCat(
              "task ", t, " split ", std::string(model::SplitAxisName(split.axis)), " work ", u + 1,
              " has ", costs.size(), " costs for ", p.num_devices_, " devices"));
        }
        for (int d = 0; d < p.num_devices_; ++d) {
          const double c = costs[static_cast<size_t>(d)];
          if (!std::isfinite(c) || c < 0) {
            return absl::InvalidArgumentError(absl::StrCat(
                "task ", t, " split ", std::string(model::SplitAxisName(split.axis)), " work ",
                u + 1, " device ", d, ": cost ", c, " is not a finite value >= 0"));
          }
          p.table_[static_cast<size_t>(offset + static_cast<int64_t>(u + 1) * p.num_devices_ + d)]
              .store(c);
        }
      }
    }
  }
  return p;
}

double Problem::CombineUs(OpId op, int device, int partials) const {
  if (latency_model_ == nullptr || partials <= 0) return 0.0;
  const predictor::OpConfig& whole = whole_configs_[static_cast<size_t>(op)];
  if (const double ns = latency_model_->PartialSumNs(device); ns > 0) {
    return partials * static_cast<double>(whole.output.Elements()) * ns / 1e3;
  }
  predictor::OpConfig add;
  add.kind = model::OpKind::kAdd;
  add.inputs = {whole.output, whole.output};
  add.output = whole.output;
  add.activation = whole.activation;
  predictor::ComputeCost(add);
  const double us = latency_model_->PredictUs(add, device);
  return std::isfinite(us) ? partials * std::max(0.0, us) : 0.0;
}

double Problem::Fill(OpId op, model::SplitAxis axis, int64_t work, int device, size_t slot) const {
  double v = 0.0;
  if (work > 0) {
    const predictor::OpConfig config =
        predictor::SubtaskConfig(whole_configs_[static_cast<size_t>(op)], axis, 0, work);
    v = std::max(0.0, latency_model_->PredictUs(config, device));
    if (unsupported_[UnsupportedSlot(op, axis, device)]) v = kUnsupportedUs;
  }
  table_[slot].store(v, std::memory_order_relaxed);
  return v;
}

int64_t Problem::PredictAll() const {
  if (latency_model_ == nullptr) return 0;
  int64_t predicted = 0;
  std::vector<int64_t> works;
  std::vector<predictor::OpConfig> configs;
  std::vector<double> out;
  for (OpId op = 0; op < num_ops_; ++op) {
    for (model::SplitAxis axis : model::kAllSplitAxes) {
      const int64_t total = WorkSize(op, axis);
      if (total <= 0) continue;
      works.clear();
      const int64_t alignment = this->alignment(axis);
      for (int64_t w = 1; w <= total; ++w) {
        if (w % alignment == 0 || (total - w) % alignment == 0) works.push_back(w);
      }
      configs.clear();
      for (int64_t w : works) {
        configs.push_back(
            predictor::SubtaskConfig(whole_configs_[static_cast<size_t>(op)], axis, 0, w));
      }
      out.resize(works.size());
      for (int d = 0; d < num_devices_; ++d) {
        latency_model_->PredictBatch(configs, d, out);
        table_[Slot(op, axis, 0, d)].store(0.0, std::memory_order_relaxed);
        for (size_t i = 0; i < works.size(); ++i) {
          const bool unsupported = unsupported_[UnsupportedSlot(op, axis, d)];
          table_[Slot(op, axis, works[i], d)].store(
              unsupported ? kUnsupportedUs : std::max(0.0, out[i]), std::memory_order_relaxed);
        }
      }
      predicted += static_cast<int64_t>(works.size());
    }
  }
  return predicted;
}

}  // namespace psched::scheduler
