// CalibrateRunCosts: the run-cost step of host calibration, after the per-op model is trained -
// probe plans made with that model on the host-thread devices, run them, fit the costs
// (fit_run_costs.h) that the host model then carries (calibration/run_costs/run_costs.h).
//
// The probes, per graph: every device alone and, with two or more devices, one plan per
// `methods` over all of them (default the co-execution methods pschedd serves and
// psched_coexec_bench measures: HEFT moves whole ops between devices and waits long, partition-only
// splits every op evenly and waits briefly, PA-HEFT and the iterative search mix both). Graphs
// without weights get synthetic ones. Plans come from the caller's `plan` function (the scheduler
// registry), so this library does not depend on every scheduling method.
//
// The costs are fitted to the quieter half of the probes' rounds (quiet_rounds.h), so a
// disturbance of the machine during the probes does not set the level of every prediction.
//
// Blocks the calling thread for the probes' runs (about a minute for four mid-sized CNNs on
// two cores with the default 15 rounds, at least `probe.min_s` per set of probes); the devices
// must not run anything else meanwhile.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "calibration/run_costs/probe_subsets.h"
#include "calibration/run_costs/run_costs.h"
#include "calibration/run_costs/run_probes.h"
#include "model/graph.h"
#include "platform/platform.h"
#include "predictor/latency_model.h"
#include "scheduler/problem.h"
#include "scheduler/schedule.h"

namespace psched::calibration {

// How long psched-calibrate and pschedd run the probes at least (ProbeOptions::min_s): four
// mid-sized CNNs' probes take a minute on two cores and a GPU, but 2 s on one cluster device.
inline constexpr double kHostRunCostMinSeconds = 20;

struct RunCostOptions {
  std::vector<std::string> methods = {"heft", "partition-only", "pa-heft", "iterative"};
  ProbeOptions probe;
  uint64_t seed = 1;  // synthetic weights
};

// `platform` lists the probed devices, `devices` runs them (same order), `model` predicts them
// (device i of the model is device i of the platform). InvalidArgument for no graphs, a device
// count that differs between the three, or more than one GPU; planning and runtime errors
// otherwise, naming the probe.
absl::StatusOr<calibration::RunCosts> CalibrateRunCosts(
    std::span<const model::Graph> graphs, const platform::Platform& platform,
    std::span<executor::runtime::Device* const> devices,
    const executor::runtime::RuntimeOptions& runtime_options, const predictor::LatencyModel& model,
    const PlanFn& plan, const RunCostOptions& options = {});

// The step as psched-calibrate and pschedd's Calibrate take it: the CPU devices of `platform`
// (those with `usable` set; all when it is empty) on runtime devices of their own, made as
// pschedd makes them (executor::runtime::PlatformDevices: a cluster runs every subtask on one
// pinned thread per core) but not a daemon's serving ones, whose queues a probe would interleave
// with; `model` predicts every device of `platform`. Then, with a usable GPU, the GPU beside the
// first CPU device (its driver pinned to a core of another CPU device): the GPU's in-run factor,
// and one sync cost for an edge between the GPU and any CPU device in either direction - its waits
// and signals run in its own queue, so they cost something else than a hand-off between host
// threads. A platform without a usable CPU device gives empty costs.
absl::StatusOr<calibration::RunCosts> CalibrateHostRunCosts(
    std::span<const model::Graph> graphs, const platform::Platform& platform,
    const std::vector<bool>& usable, std::shared_ptr<const predictor::LatencyModel> model,
    const PlanFn& plan, const RunCostOptions& options = {});

}  // namespace psched::calibration
