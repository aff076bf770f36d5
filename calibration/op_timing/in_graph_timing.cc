#include "calibration/op_timing/in_graph_timing.h"

#include <algorithm>
#include <random>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "executor/cpu/cpu_graph_executor.h"
#include "model/synthetic_weights.h"
#include "predictor/op_config.h"

namespace psched::calibration {

using predictor::host_model::CalibrationSample;

absl::StatusOr<std::vector<CalibrationSample>> TimeOpsInGraph(const platform::DeviceSpec& device,
                                                              const model::Graph& graph,
                                                              const InGraphOptions& options) {
  if (device.kind != platform::DeviceKind::kCpu || device.cpu_cores.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("TimeOpsInGraph: device '", device.name,
                                                   "' is not a CPU device with cores to pin to"));
  }
  if (options.runs < 1 || options.warmup_runs < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("TimeOpsInGraph: need runs >= 1 and warmup_runs >= 0, got ", options.runs,
                     " and ", options.warmup_runs));
  }
  model::Graph weighted = graph;
  model::SynthesizeWeights(options.seed, &weighted);
  absl::StatusOr<std::unique_ptr<executor::cpu::CpuGraphExecutor>> executor =
      executor::cpu::CpuGraphExecutor::Create(
          weighted,
          executor::cpu::CpuExecutorOptions{.cores = device.cpu_cores,
                                            .threads = static_cast<int>(device.cpu_cores.size()),
                                            // Every op is a sample of its own.
                                            .fuse_residual_adds = false});
  if (!executor.ok()) return executor.status();
  std::mt19937_64 rng(options.seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<std::vector<float>> inputs((*executor)->num_inputs());
  for (size_t i = 0; i < inputs.size(); ++i) {
    inputs[i].resize(static_cast<size_t>((*executor)->input_shape(i).Elements()));
    for (float& x : inputs[i]) x = dist(rng);
  }
  const size_t num_ops = graph.ops.size();
  std::vector<std::vector<double>> spans_us(num_ops);
  for (int run = 0; run < options.warmup_runs + options.runs; ++run) {
    absl::StatusOr<std::vector<std::vector<float>>> out = (*executor)->Run(inputs);
    if (!out.ok()) return out.status();
    if (run < options.warmup_runs) continue;
    const auto& timings = (*executor)->last_op_timings();
    for (size_t op = 0; op < num_ops && op < timings.size(); ++op) {
      spans_us[op].push_back(static_cast<double>(timings[op].end_ns - timings[op].start_ns) / 1e3);
    }
  }
  std::vector<CalibrationSample> samples;
  const model::ConcatAliasing aliasing = model::AliasConcatInputs(graph);
  for (size_t op = 0; op < num_ops; ++op) {
    std::vector<double>& v = spans_us[op];
    if (v.empty()) continue;
    std::sort(v.begin(), v.end());
    const size_t mid = v.size() / 2;
    const double median = v.size() % 2 == 1 ? v[mid] : 0.5 * (v[mid - 1] + v[mid]);
    if (!(median > 0)) continue;
    const auto id = static_cast<model::OpId>(op);
    samples.push_back(CalibrationSample{
        device.name, predictor::WholeOpConfig(graph, id, aliasing), median, options.runs,
        absl::StrCat(graph.name, "/op ", id, " '", graph.op(id).name, "' in-graph"),
        static_cast<int>(device.cpu_cores.size()), "xnnpack"});
  }
  return samples;
}

}  // namespace psched::calibration
