// psched_runtime_overhead_bench: what the co-execution runtime itself costs per subtask on CPU
// devices, measured on the machine it runs on.
//
// Runtime cost of a run = its wall time minus the time spent inside the subtasks' kernels
// (the runtime's own per-subtask timestamps), so it holds dispatch (hand-off to the device
// workers, the queue loop), dependency waits and completion (counter publish, wake-ups,
// timestamps) plus the per-run input/output copies; divided by the subtask count it is the
// cost per subtask. Three plans on a chain of --ops tiny 1x1 convolutions:
//   single   every op on cpu.0 (dispatch + completion, no cross-device wait),
//   pingpong ops alternate cpu.0 / cpu.1 (every subtask waits for the other core's work),
// and, per --models model, the single-device plan on cpu.0 against CpuGraphExecutor (the
// bare executor, XNNPACK on the same core, one thread), timed in interleaved rounds with the
// ratio taken per round. --busy N adds N spinning threads per core (oversubscription).
// Prints medians with the spread (min..max) of every figure.
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "executor/cpu/cpu_graph_executor.h"
#include "executor/runtime/coexecution_runtime.h"
#include "executor/runtime/cpu_device.h"
#include "executor/testing/graph_builder.h"
#include "executor/testing/oversubscription.h"
#include "model/onnx_import.h"

namespace psched {
namespace {

using executor::runtime::CoExecutionRuntime;
using executor::runtime::CpuDevice;
using executor::runtime::ExecutionPlan;
using Clock = std::chrono::steady_clock;

struct Spread {
  double median = 0, min = 0, max = 0;
};

Spread Summarise(std::vector<double> v) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return {n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]), v.front(), v.back()};
}

double Us(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

// A chain of `n` 1x1 convolutions over a 1x1x16 tensor: kernels of a few hundred
// multiply-adds, so nearly all of a run beyond them is the runtime's own cost.
model::Graph Chain(int n) {
  executor::testing::GraphBuilder b("chain");
  model::TensorId t = b.AddInput({1, 1, 16});
  for (int i = 0; i < n; ++i) {
    t = b.AddOp(model::OpKind::kConv2d, {t}, {1, 1, 16},
                executor::testing::RandomConv(b, 16, 16, 1, 1, 1, 0, 1, static_cast<uint32_t>(i)));
  }
  b.MarkOutput(t);
  return b.Build();
}

// One timed Run: wall time and the part of it inside subtasks, in microseconds.
// `handoff_us`: from Run's start of dispatch to the first subtask's start (waking the device
// workers); `between_us`: gaps between a device's consecutive subtasks (dependency waits,
// completion, the queue loop); the rest of the runtime cost is input/output copies and the
// caller's wake-up at the end.
struct RunCost {
  double wall_us = 0, kernels_us = 0, handoff_us = 0, between_us = 0;
};

bool TimedRun(CoExecutionRuntime& rt, const std::vector<std::vector<float>>& input, RunCost* cost) {
  const auto t0 = Clock::now();
  const bool ok = rt.Run(input).ok();
  cost->wall_us = Us(Clock::now() - t0);
  cost->kernels_us = cost->between_us = 0;
  int64_t first_start = INT64_MAX;
  const std::vector<executor::runtime::SubtaskTiming>& timings = rt.last_timings();
  for (size_t i = 0; i < timings.size(); ++i) {
    const executor::runtime::SubtaskTiming& t = timings[i];
    cost->kernels_us += (t.end_ns - t.start_ns) / 1e3;
    first_start = std::min(first_start, t.start_ns);
    if (i > 0 && timings[i - 1].device == t.device) {
      cost->between_us += (t.start_ns - timings[i - 1].end_ns) / 1e3;
    }
  }
  cost->handoff_us = timings.empty() ? 0 : first_start / 1e3;
  return ok;
}

void PrintSpread(const char* label, const Spread& s, const char* unit) {
  std::printf("  %-44s %10.3f %10.3f %10.3f %s\n", label, s.median, s.min, s.max, unit);
}

int Main(int argc, char** argv) {
  CLI::App app{"psched co-execution runtime cost per subtask"};
  int ops = 400;
  int rounds = 200;
  int busy = 0;
  std::vector<std::string> models{"squeezenet_v1_1", "peleenet"};
  std::string models_dir = std::string(PSCHED_SHARED_DIR_DEFAULT) + "/models/graph-only";
  int model_rounds = 30;
  app.add_option("--ops", ops, "ops in the chain")->check(CLI::Range(2, 100000));
  app.add_option("--rounds", rounds, "timed chain runs per plan")->check(CLI::PositiveNumber);
  app.add_option("--models", models, "graph-only models: single-device plan vs bare executor")
      ->expected(0, 1000);
  app.add_option("--models-dir", models_dir);
  app.add_option("--model-rounds", model_rounds, "interleaved rounds per model")
      ->check(CLI::PositiveNumber);
  app.add_option("--busy", busy, "spinning threads per core besides the devices")
      ->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);

  auto cpu0 = CpuDevice::Create("cpu.0", {0});
  auto cpu1 = CpuDevice::Create("cpu.1", {1});
  if (!cpu0.ok() || !cpu1.ok()) {
    std::fprintf(stderr, "devices: %s %s\n", cpu0.status().ToString().c_str(),
                 cpu1.status().ToString().c_str());
    return 1;
  }
  const executor::testing::Oversubscription load({0, 1}, busy);
  std::printf("runtime cost per subtask, %d busy thread(s) per core\n", busy);

  const model::Graph chain = Chain(ops);
  const std::vector<std::vector<float>> chain_input{std::vector<float>(16, 0.5f)};
  ExecutionPlan single = executor::runtime::SingleDevicePlan(chain, 2);
  ExecutionPlan pingpong;
  pingpong.device_steps.resize(2);
  for (model::OpId id = 0; id < static_cast<model::OpId>(chain.ops.size()); ++id) {
    pingpong.device_steps[static_cast<size_t>(id % 2)].push_back({id});
  }
  std::vector<executor::runtime::Device*> devices{cpu0->get(), cpu1->get()};
  std::printf("\nchain of %d 1x1 convs, %d rounds (interleaved)      %10s %10s %10s\n", ops, rounds,
              "median", "min", "max");
  std::vector<std::unique_ptr<CoExecutionRuntime>> chain_rts;
  for (const ExecutionPlan* plan : {&single, &pingpong}) {
    auto rt = CoExecutionRuntime::Create(chain, devices, *plan);
    if (!rt.ok()) {
      std::fprintf(stderr, "chain: %s\n", rt.status().ToString().c_str());
      return 1;
    }
    chain_rts.push_back(std::move(*rt));
  }
  std::vector<std::vector<double>> per_subtask(2), kernel_us(2), between(2), handoff(2);
  for (int round = -1; round < rounds; ++round) {
    for (size_t p = 0; p < chain_rts.size(); ++p) {
      RunCost cost;
      if (!TimedRun(*chain_rts[p], chain_input, &cost)) {
        std::fprintf(stderr, "chain run failed\n");
        return 1;
      }
      if (round < 0) continue;  // warm-up
      per_subtask[p].push_back((cost.wall_us - cost.kernels_us) / ops);
      kernel_us[p].push_back(cost.kernels_us / ops);
      between[p].push_back(cost.between_us / ops);
      handoff[p].push_back(cost.handoff_us);
    }
  }
  const char* names[] = {"single cpu.0", "pingpong cpu.0/cpu.1"};
  for (size_t p = 0; p < 2; ++p) {
    std::printf("  %s\n", names[p]);
    PrintSpread("runtime us per subtask (wall - kernels)", Summarise(per_subtask[p]), "us");
    PrintSpread("  of it: between subtasks, us per subtask", Summarise(between[p]), "us");
    PrintSpread("  of it: hand-off to the workers, us per run", Summarise(handoff[p]), "us");
    PrintSpread("kernel us per subtask", Summarise(kernel_us[p]), "us");
  }

  for (const std::string& name : models) {
    if (name.empty()) continue;  // `--models` alone: the chain only
    model::ImportOptions import;
    import.synthesize_weights = true;
    import.seed = 1;
    auto graph = model::ImportOnnxFile(models_dir + "/" + name + ".onnx", import);
    if (!graph.ok()) {
      std::fprintf(stderr, "%s: %s\n", name.c_str(), graph.status().ToString().c_str());
      return 1;
    }
    auto exec = executor::cpu::CpuGraphExecutor::Create(*graph, {{0}, 1});
    auto rt = CoExecutionRuntime::Create(*graph, {cpu0->get()},
                                         executor::runtime::SingleDevicePlan(*graph));
    if (!exec.ok() || !rt.ok()) {
      std::fprintf(stderr, "%s: %s %s\n", name.c_str(), exec.status().ToString().c_str(),
                   rt.status().ToString().c_str());
      return 1;
    }
    const model::Shape in_shape = graph->tensor(graph->inputs[0].tensor).shape;
    const std::vector<std::vector<float>> input{
        std::vector<float>(static_cast<size_t>(in_shape.Elements()), 0.5f)};
    std::vector<double> exec_ms, rt_ms, ratio, cost_us, handoff_us, between_us;
    for (int round = -1; round < model_rounds; ++round) {
      // Alternate which side goes first so drift and cache state favour neither.
      double e = 0;
      RunCost cost;
      for (int side = 0; side < 2; ++side) {
        if ((side == 0) == (round % 2 == 0)) {
          const auto t0 = Clock::now();
          if (!(*exec)->Run(input).ok()) return 1;
          e = Us(Clock::now() - t0) / 1e3;
        } else if (!TimedRun(**rt, input, &cost)) {
          return 1;
        }
      }
      if (round < 0) continue;
      exec_ms.push_back(e);
      rt_ms.push_back(cost.wall_us / 1e3);
      ratio.push_back(cost.wall_us / 1e3 / e);
      cost_us.push_back((cost.wall_us - cost.kernels_us) / static_cast<double>(graph->ops.size()));
      handoff_us.push_back(cost.handoff_us);
      between_us.push_back(cost.between_us / static_cast<double>(graph->ops.size()));
    }
    std::printf("\n%s: %zu ops, %d interleaved rounds, core 0, 1 thread  %10s %10s %10s\n",
                name.c_str(), graph->ops.size(), model_rounds, "median", "min", "max");
    PrintSpread("bare executor (CpuGraphExecutor::Run)", Summarise(exec_ms), "ms");
    PrintSpread("runtime, single-device plan", Summarise(rt_ms), "ms");
    PrintSpread("ratio runtime / executor (per round)", Summarise(ratio), "x");
    PrintSpread("runtime us per subtask (all of wall - kernels)", Summarise(cost_us), "us");
    PrintSpread("  of it: between subtasks, us per subtask", Summarise(between_us), "us");
    PrintSpread("  of it: hand-off to the worker, us per run", Summarise(handoff_us), "us");
  }
  return 0;
}

}  // namespace
}  // namespace psched

int main(int argc, char** argv) { return psched::Main(argc, argv); }
