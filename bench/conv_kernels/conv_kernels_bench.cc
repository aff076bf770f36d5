// psched_conv_kernels_bench: every distinct conv configuration of the given models, alone, on
// one pinned core, through psched's own CPU kernel path (CreateCpuKernel, one thread) with
// XNNPACK and with oneDNN side by side in the same process. Rounds interleave every
// configuration and library; the table reports median microseconds, the spread (min and max
// over rounds), GFLOP/s, oneDNN's implementation and what ChooseConvLibrary picks. It
// settles whether a slow conv inside a model run is the kernel or the load around it, and
// its table is what executor/cpu/kernel_choice.cc's rule is derived from.
//
// Inputs are uniform in [-1, 1] (--input-scale scales them, e.g. 1e-39 for denormals).
// --axis spatial|cout|cin times the first half of each op's work instead (a co-execution
// subtask; cout slices write a strided part of the output, which oneDNN stages; cin slices add
// their partial sum into the output, which every run accumulates into). --concat-x K writes each
// output into a channel slice of a K times wider tensor, as a conv whose output the arena places
// inside a concat's (pixels K x cout floats apart); calibration times convs with dense outputs.
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_format.h"
#include "executor/cpu/cpu_kernel.h"
#include "executor/cpu/kernel_choice.h"
#include "executor/testing/graph_builder.h"
#include "executor/testing/tensor_compare.h"
#include "model/onnx_import.h"
#include "model/split.h"

namespace {

using psched::executor::TensorView;
using psched::executor::WorkSlice;
using psched::executor::cpu::CpuKernel;
using psched::executor::cpu::KernelLibrary;

struct Config {
  std::string key;  // "conv3x3/s1 p1 g1 32>64 @109x109"
  std::string models;
  double flops = 0;
  std::vector<float> input, out_xnn, out_dnnl;
  std::unique_ptr<CpuKernel> xnn, dnnl;
  KernelLibrary chosen = KernelLibrary::kXnnpack;
  int reps = 1;  // Runs per sample, so that a sample lasts at least ~0.5 ms
  std::vector<double> us_xnn, us_dnnl, cpu_xnn, cpu_dnnl;
};

std::string Key(const psched::model::Graph& g, psched::model::OpId id) {
  const auto& op = g.op(id);
  const auto& conv = std::get<psched::model::ConvAttrs>(op.attrs);
  const auto& x = g.tensor(g.ActivationInputs(id)[0]).shape;
  const auto& y = g.output_shape(id);
  const auto& w = conv.window;
  const std::string groups =
      conv.groups == x.c && conv.groups > 1 ? "dw" : absl::StrFormat("%d", conv.groups);
  return absl::StrFormat("conv%dx%d/s%d p%d%d%d%d g%s %d>%d @%dx%d", w.kernel_h, w.kernel_w,
                         w.stride_h, w.pad_top, w.pad_left, w.pad_bottom, w.pad_right, groups, x.c,
                         y.c, y.h, y.w);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double ThreadCpuUs() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) / 1e3;
}

// Wall-clock and this thread's CPU time per Run: on a loaded machine the difference is the
// time the thread was preempted, which grows with a call's length.
struct Sample {
  double wall_us = 0, cpu_us = 0;
};

Sample Time(CpuKernel& k, int reps) {
  const double cpu0 = ThreadCpuUs();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) {
    if (!k.Run().ok()) return {-1, -1};
  }
  const double wall =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  return {wall / reps, (ThreadCpuUs() - cpu0) / reps};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"psched conv kernels alone: XNNPACK vs oneDNN through CreateCpuKernel"};
  std::vector<std::string> models{"squeezenet_v1_1", "peleenet", "inceptionv3",
                                  "hrnet_w18_small_v1"};
  std::string models_dir = std::string(PSCHED_SHARED_DIR_DEFAULT) + "/models/graph-only";
  int rounds = 15;
  int core = 1;
  float input_scale = 1.0f;
  std::string only;
  std::string axis_name = "none";
  int concat_x = 1;
  app.add_option("--models", models, "model names (graph-only, synthetic weights)");
  app.add_option("--models-dir", models_dir);
  app.add_option("--rounds", rounds, "interleaved rounds")->check(CLI::PositiveNumber);
  app.add_option("--core", core, "CPU to pin to (-1: no pinning)");
  app.add_option("--input-scale", input_scale, "scale of the uniform [-1, 1] inputs");
  app.add_option("--only", only, "only configurations whose key contains this");
  app.add_option(
      "--axis", axis_name,
      "time the first half of each op along this split axis (spatial, cout, cin; none: whole)");
  app.add_option("--concat-x", concat_x,
                 "write each output into a channel slice of a tensor this many times wider (a "
                 "concat input placed in place)")
      ->check(CLI::Range(1, 16));
  CLI11_PARSE(app, argc, argv);
  const auto axis = psched::model::SplitAxisFromName(axis_name);
  if (!axis) {
    std::fprintf(stderr, "--axis must be none, spatial, cout or cin\n");
    return 1;
  }

  if (core >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0) {
      std::fprintf(stderr, "cannot pin to core %d\n", core);
      return 1;
    }
  }
  std::vector<psched::model::Graph> graphs;
  graphs.reserve(models.size());
  std::map<std::string, Config> configs;
  for (const std::string& name : models) {
    psched::model::ImportOptions options;
    options.synthesize_weights = true;
    auto graph = psched::model::ImportOnnxFile(models_dir + "/" + name + ".onnx", options);
    if (!graph.ok()) {
      std::fprintf(stderr, "%s: %s\n", name.c_str(), graph.status().ToString().c_str());
      return 1;
    }
    graphs.push_back(*std::move(graph));
    const psched::model::Graph& g = graphs.back();
    for (psched::model::OpId id = 0; id < static_cast<psched::model::OpId>(g.ops.size()); ++id) {
      if (g.op(id).kind != psched::model::OpKind::kConv2d) continue;
      const std::string key = Key(g, id);
      if (!only.empty() && key.find(only) == std::string::npos) continue;
      auto [it, fresh] = configs.try_emplace(key);
      Config& c = it->second;
      if (!fresh) {
        if (c.models.find(name) == std::string::npos) c.models += "," + name;
        continue;
      }
      c.key = key;
      c.models = name;
      const auto& x = g.tensor(g.ActivationInputs(id)[0]).shape;
      const auto& y = g.output_shape(id);
      const auto& conv = std::get<psched::model::ConvAttrs>(g.op(id).attrs);
      WorkSlice slice = WorkSlice::Whole();
      if (*axis != psched::model::SplitAxis::kNone) {
        const int64_t work = psched::model::WorkSize(g, id, *axis);
        if (work < 2) continue;
        slice = {*axis, 0, work / 2};
      }
      const double share = *axis == psched::model::SplitAxis::kNone
                               ? 1.0
                               : static_cast<double>(slice.end) /
                                     static_cast<double>(psched::model::WorkSize(g, id, *axis));
      c.flops = share * 2.0 * static_cast<double>(y.Elements()) * (x.c / conv.groups) *
                conv.window.kernel_h * conv.window.kernel_w;
      c.reps = std::max(1, static_cast<int>(2e7 / c.flops));
      c.input = psched::executor::testing::RandomVector(static_cast<size_t>(x.Elements()) + 16,
                                                        static_cast<uint32_t>(id), -input_scale,
                                                        input_scale);
      c.out_xnn.assign(static_cast<size_t>(y.Elements() * concat_x), 0.0f);
      c.out_dnnl.assign(c.out_xnn.size(), 0.0f);
      const int64_t out_stride = y.c * concat_x;
      const TensorView in{c.input.data(), x, x.c};
      const psched::executor::cpu::KernelLayout layout{.output_pixel_stride =
                                                           concat_x > 1 ? out_stride : 0};
      auto xnn = psched::executor::cpu::CreateCpuKernel(g, id, slice, layout, nullptr,
                                                        KernelLibrary::kXnnpack);
      auto dnnl = psched::executor::cpu::CreateCpuKernel(g, id, slice, layout, nullptr,
                                                         KernelLibrary::kOneDnn);
      if (!xnn.ok() || !(*xnn)->Setup({&in, 1}, {c.out_xnn.data(), y, out_stride}).ok()) {
        std::fprintf(stderr, "%s: XNNPACK kernel failed\n", key.c_str());
        return 1;
      }
      c.xnn = *std::move(xnn);
      if (dnnl.ok() && (*dnnl)->Setup({&in, 1}, {c.out_dnnl.data(), y, out_stride}).ok()) {
        c.dnnl = *std::move(dnnl);
      } else {
        std::fprintf(stderr, "%s: no oneDNN kernel: %s\n", key.c_str(),
                     dnnl.ok() ? "setup failed" : dnnl.status().ToString().c_str());
      }
      c.chosen = psched::executor::cpu::ChooseConvLibrary(g, id, slice, layout.output_pixel_stride);
    }
  }
  for (auto& [key, c] : configs) {  // warm-up
    Time(*c.xnn, 1);
    if (c.dnnl) Time(*c.dnnl, 1);
  }
  for (int r = 0; r < rounds; ++r) {
    for (auto& [key, c] : configs) {
      // Alternate which library goes first, so neither always inherits the other's caches.
      auto xnn = [&] {
        const Sample s = Time(*c.xnn, c.reps);
        c.us_xnn.push_back(s.wall_us);
        c.cpu_xnn.push_back(s.cpu_us);
      };
      if (r % 2 == 0) xnn();
      if (c.dnnl) {
        const Sample s = Time(*c.dnnl, c.reps);
        c.us_dnnl.push_back(s.wall_us);
        c.cpu_dnnl.push_back(s.cpu_us);
      }
      if (r % 2 == 1) xnn();
    }
  }
  // Medians over rounds; spread is (max - min) / median of the CPU times, in percent.
  std::printf("%-38s %-28s | %8s %8s %5s %6s | %8s %8s %5s %6s | %5s %6s %-19s %s\n",
              "conv configuration", "models", "xnn_wall", "xnn_cpu", "sprd%", "GF/s", "dnl_wall",
              "dnl_cpu", "sprd%", "GF/s", "x/d", "relL2", "onednn impl", "rule");
  double total_xnn = 0, total_dnnl = 0, total_chosen = 0;
  for (auto& [key, c] : configs) {
    auto spread = [](const std::vector<double>& v) {
      const double m = Median(v);
      return v.empty() || m <= 0 ? 0.0
                                 : 100 *
                                       (*std::max_element(v.begin(), v.end()) -
                                        *std::min_element(v.begin(), v.end())) /
                                       m;
    };
    const double xnn = Median(c.cpu_xnn);
    const double dnnl = c.dnnl ? Median(c.cpu_dnnl) : 0;
    const double rel = c.dnnl ? psched::executor::testing::RelativeL2(c.out_dnnl, c.out_xnn) : 0;
    std::printf(
        "%-38s %-28.28s | %8.1f %8.1f %5.0f %6.1f | %8.1f %8.1f %5.0f %6.1f | %5.2f %6.0e "
        "%-19s %s\n",
        key.c_str(), c.models.c_str(), Median(c.us_xnn), xnn, spread(c.cpu_xnn),
        c.flops / xnn / 1e3, c.dnnl ? Median(c.us_dnnl) : 0.0, dnnl, spread(c.cpu_dnnl),
        dnnl > 0 ? c.flops / dnnl / 1e3 : 0.0, dnnl > 0 ? xnn / dnnl : 0.0, rel,
        c.dnnl ? std::string(c.dnnl->library()).c_str() : "-",
        c.chosen == KernelLibrary::kOneDnn          ? "onednn"
        : c.chosen == KernelLibrary::kStreamingGemm ? "streaming-gemm (not timed here)"
                                                    : "xnnpack");
    total_xnn += xnn;
    total_dnnl += dnnl > 0 ? dnnl : xnn;
    // The streaming GEMM pays where the filter comes from memory, which this bench's warm
    // repeats do not show (psched_coexec_bench --per-op-dir times it in the model): counted
    // as oneDNN.
    total_chosen += c.chosen != KernelLibrary::kXnnpack && dnnl > 0 ? dnnl : xnn;
  }
  std::printf(
      "sum of CPU-time medians over %zu configurations: xnnpack %.0f us, onednn %.0f us, "
      "rule %.0f us\n",
      configs.size(), total_xnn, total_dnnl, total_chosen);
  return 0;
}
