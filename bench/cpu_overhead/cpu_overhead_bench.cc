// Measures what psched's CPU executor costs on top of XNNPACK.
//
// For one model it compiles a CpuGraphExecutor and then, alternating to share any drift in
// machine load, times (a) a full executor Run (input copy, hand-off to the pinned worker,
// every kernel, output copy) and (b) a bare loop on the same worker calling
// xnn_run_operator on the very same created operators, with the few ops XNNPACK has no
// operator for (concat copies, flatten, ...) run through their kernels in both. Prints
// medians and the overhead in percent.
#include <xnnpack.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "executor/cpu/cpu_graph_executor.h"
#include "model/onnx_import.h"

namespace {

using psched::executor::cpu::CpuGraphExecutor;
using psched::executor::cpu::CpuKernel;
using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"psched CPU executor overhead vs bare XNNPACK operators"};
  std::string model_path =
      std::string(PSCHED_SHARED_DIR_DEFAULT) + "/models/graph-only/inceptionv3.onnx";
  int iterations = 10;
  int warmup = 2;
  int core = 0;
  int threads = 1;
  app.add_option("--model", model_path, "ONNX model (graph-only models get synthetic weights)");
  app.add_option("--iterations", iterations, "timed inferences per side")
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "untimed inferences per side first")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--core", core, "CPU the worker is pinned to (-1: no pinning)");
  app.add_option("--threads", threads, "XNNPACK threadpool size")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  psched::model::ImportOptions import_options;
  import_options.synthesize_weights = true;
  auto graph = psched::model::ImportOnnxFile(model_path, import_options);
  if (!graph.ok()) {
    std::fprintf(stderr, "import failed: %s\n", graph.status().ToString().c_str());
    return 1;
  }
  std::vector<int> cores;
  if (core >= 0) cores.push_back(core);
  auto exec = CpuGraphExecutor::Create(*graph, {.cores = cores, .threads = threads});
  if (!exec.ok()) {
    std::fprintf(stderr, "compile failed: %s\n", exec.status().ToString().c_str());
    return 1;
  }
  std::vector<std::vector<float>> inputs;
  for (size_t i = 0; i < (*exec)->num_inputs(); ++i) {
    inputs.emplace_back(static_cast<size_t>((*exec)->input_shape(i).Elements()), 0.5f);
  }
  std::vector<std::vector<float>> outputs;
  std::vector<const float*> in_ptrs;
  std::vector<float*> out_ptrs;
  for (const auto& v : inputs) in_ptrs.push_back(v.data());
  for (size_t i = 0; i < (*exec)->num_outputs(); ++i) {
    outputs.emplace_back(static_cast<size_t>((*exec)->output_shape(i).Elements()));
    out_ptrs.push_back(outputs.back().data());
  }

  int bare_ops = 0, kernel_ops = 0;
  auto bare_run = [&](std::span<const std::unique_ptr<CpuKernel>> kernels,
                      pthreadpool_t threadpool) -> absl::Status {
    bare_ops = kernel_ops = 0;
    for (const std::unique_ptr<CpuKernel>& kernel : kernels) {
      if (xnn_operator_t op = kernel->xnnpack_operator(); op != nullptr) {
        if (xnn_run_operator(op, threadpool) != xnn_status_success) {
          return absl::InternalError("xnn_run_operator failed");
        }
        ++bare_ops;
      } else {
        if (auto s = kernel->Run(); !s.ok()) return s;
        ++kernel_ops;
      }
    }
    return absl::OkStatus();
  };

  std::vector<double> exec_ms, bare_ms;
  for (int i = 0; i < warmup + iterations; ++i) {
    // Alternate which side goes first so drift and cache state favour neither.
    for (int side = 0; side < 2; ++side) {
      const bool executor_side = (side == 0) == (i % 2 == 0);
      const auto t0 = Clock::now();
      const absl::Status s =
          executor_side ? (*exec)->Run(in_ptrs, out_ptrs) : (*exec)->CallOnWorker(bare_run);
      const double ms = Ms(Clock::now() - t0);
      if (!s.ok()) {
        std::fprintf(stderr, "%s run failed: %s\n", executor_side ? "executor" : "bare",
                     s.ToString().c_str());
        return 1;
      }
      if (i >= warmup) (executor_side ? exec_ms : bare_ms).push_back(ms);
    }
  }
  const double e = Median(exec_ms), b = Median(bare_ms);
  std::printf(
      "model %s: %zu ops (%d XNNPACK operators, %d hand-written kernels), core %d, "
      "%d XNNPACK thread(s), %d iterations\n",
      graph->name.c_str(), graph->ops.size(), bare_ops, kernel_ops, core, threads, iterations);
  std::printf("%-34s %12s %12s %12s\n", "", "median ms", "min ms", "max ms");
  std::printf("%-34s %12.2f %12.2f %12.2f\n", "psched CpuGraphExecutor::Run", e,
              *std::min_element(exec_ms.begin(), exec_ms.end()),
              *std::max_element(exec_ms.begin(), exec_ms.end()));
  std::printf("%-34s %12.2f %12.2f %12.2f\n", "bare xnn_run_operator loop", b,
              *std::min_element(bare_ms.begin(), bare_ms.end()),
              *std::max_element(bare_ms.begin(), bare_ms.end()));
  const double e_min = *std::min_element(exec_ms.begin(), exec_ms.end());
  const double b_min = *std::min_element(bare_ms.begin(), bare_ms.end());
  std::printf("overhead: %+.2f %% of the median, %+.2f %% of the minimum (target <= 5 %%)\n",
              100.0 * (e - b) / b, 100.0 * (e_min - b_min) / b_min);
  return 0;
}
