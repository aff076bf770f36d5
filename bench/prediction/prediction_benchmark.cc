// Prediction cost of the latency models (paper sec. 5.4: 18.2 us per configuration; all of
// Inception-v3's candidate configurations on three devices in 135 ms). Targets for the GBDT
// models: <= 20 us per configuration and <= 50 ms for the whole prediction step of
// inceptionv3 (Problem::PredictAll: every candidate subtask configuration on every device).
//
//   build/bench/prediction/prediction_benchmark [--benchmark_repetitions=5]
// reads ../shared/models/graph-only/inceptionv3.onnx (PSCHED_SHARED_DIR overrides ../shared).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "model/onnx_import.h"
#include "predictor/op_config.h"
#include "predictor/profiles.h"
#include "scheduler/problem.h"

namespace psched {
namespace {

const model::Graph& InceptionV3() {
  static const model::Graph graph = [] {
    const char* dir = std::getenv("PSCHED_SHARED_DIR");
    const std::string path =
        std::string(dir != nullptr ? dir : "/work/shared") + "/models/graph-only/inceptionv3.onnx";
    absl::StatusOr<model::Graph> g = model::ImportOnnxFile(path, model::ImportOptions{});
    if (!g.ok()) {
      std::fprintf(stderr, "%s\n", std::string(g.status().message()).c_str());
      std::exit(1);
    }
    return *std::move(g);
  }();
  return graph;
}

const predictor::Profile& ProfileNamed(const std::string& name) {
  static std::map<std::string, predictor::Profile> profiles;
  auto it = profiles.find(name);
  if (it == profiles.end()) it = profiles.emplace(name, *predictor::LoadProfile(name)).first;
  return it->second;
}

// Inceptionv3's subtask configurations: every op whole, and every conv and FC cut at a
// quarter, half and three quarters of each split axis (a mix of families and shapes).
std::vector<predictor::OpConfig> Configs() {
  const model::Graph& g = InceptionV3();
  std::vector<predictor::OpConfig> configs;
  const model::ConcatAliasing aliasing = model::AliasConcatInputs(g);
  for (model::OpId op = 0; op < static_cast<model::OpId>(g.ops.size()); ++op) {
    const predictor::OpConfig whole = predictor::WholeOpConfig(g, op, aliasing);
    configs.push_back(whole);
    for (model::SplitAxis axis : model::kAllSplitAxes) {
      const int64_t u = model::WorkSize(g, op, axis);
      if (axis == model::SplitAxis::kNone || u < 4) continue;
      for (int64_t w : {u / 4, u / 2, 3 * u / 4}) {
        configs.push_back(predictor::SubtaskConfig(whole, axis, 0, w));
      }
    }
  }
  return configs;
}

// One configuration on one device per iteration, cycling through devices and configurations.
void BM_PredictOneConfiguration(benchmark::State& state, const std::string& platform) {
  const predictor::Profile& profile = ProfileNamed(platform);
  const std::vector<predictor::OpConfig> configs = Configs();
  const int devices = profile.model->num_devices();
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        profile.model->PredictUs(configs[i % configs.size()], static_cast<int>(i % devices)));
    ++i;
  }
  state.counters["configs"] = static_cast<double>(configs.size());
}

// The whole prediction step of inceptionv3: a fresh problem, every candidate configuration
// on every device.
void BM_PredictAllInceptionV3(benchmark::State& state, const std::string& platform) {
  const predictor::Profile& profile = ProfileNamed(platform);
  const int64_t alignment = state.range(0);
  int64_t configs = 0;
  for (auto _ : state) {
    absl::StatusOr<scheduler::Problem> problem = scheduler::Problem::FromGraph(
        InceptionV3(), profile.platform, *profile.model, scheduler::ProblemOptions{0, alignment});
    configs = problem->PredictAll();
    benchmark::DoNotOptimize(problem->LatencyUs(0, model::SplitAxis::kNone, 1, 0));
  }
  state.counters["configs"] = static_cast<double>(configs);
  state.counters["predictions"] = static_cast<double>(configs * profile.model->num_devices());
  state.counters["time_per_prediction"] = benchmark::Counter(
      static_cast<double>(configs * profile.model->num_devices()),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

BENCHMARK_CAPTURE(BM_PredictOneConfiguration, pixel4_measured, std::string("pixel4-measured"));
BENCHMARK_CAPTURE(BM_PredictOneConfiguration, pixel4_analytic, std::string("pixel4"));
BENCHMARK_CAPTURE(BM_PredictAllInceptionV3, pixel4_measured, std::string("pixel4-measured"))
    ->Arg(1)
    ->Arg(8)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PredictAllInceptionV3, pixel4_analytic, std::string("pixel4"))
    ->Arg(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace psched

BENCHMARK_MAIN();
