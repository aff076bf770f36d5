// psched_coexec_bench: measured latency of co-execution plans on this host, side by side with
// psched's executor alone (`executor N thread`: the CpuGraphExecutor, whose kernels are
// chosen per op as on a device of that many threads - executor/cpu/kernel_choice.h - so
// oneDNN convs on one x86 thread, XNNPACK on two), ONNX Runtime (CPU execution provider, 1
// and 2 threads, bench/coexec/ort_peer.py in a venv of its own) and PyTorch (2 threads,
// bench/coexec/torch_peer.py).
//
// Platform A: cpu.0 + cpu.1 (one core each). Platform B: cpu.0 + PoCL as the GPU, its
// dispatcher and worker thread pinned to core 1. Platform C: the daemon's default on this
// host, one `cpu` cluster device of both cores (a 2-thread XNNPACK pool); only its
// single-device plan runs, compared with the executor on both cores (the `cluster device /`
// line). Plans come from the `host` analytic profile
// (GPU dispatch overhead measured on the device). With ONNX Runtime, every psched
// configuration runs the complete model file the peer wrote (the same weights on both sides)
// and its output is checked against ONNX Runtime's. Every model's configurations are built
// first; then all of them, ONNX Runtime's included, are timed in the same interleaved rounds,
// each run after an idle pause (--settle-ms) so that no configuration runs beside threads the
// previous one left spinning. Every latency is the median of --runs runs after one warm-up,
// with its spread (min, max). Predicted is the schedule retimed as the run will go, each
// hand-off between devices costing by how long its waiter idled (scheduler::RetimeByWaits),
// plus the model's run overhead (calibrated host models: what a run cost outside every
// subtask); planned is the planner's own makespan plus the same
// overhead. Flags: a plan slower than the best single device of its platform, or
// more than 1.15x its prediction, and major page faults taken during its timed runs. With
// `exact` among --methods, the /exact column is the paper's measurement table: every plan's
// measured latency over the measured exact plan's on its platform.

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "bench/coexec/ort_peer_process.h"
#include "calibration/run_costs/run_breakdown.h"
#include "calibration/training/host_training.h"
#include "executor/cpu/cpu_graph_executor.h"
#include "executor/layout.h"
#include "executor/npy.h"
#include "executor/runtime/coexecution_runtime.h"
#include "executor/runtime/plan_from_schedule.h"
#include "executor/runtime/trace.h"
#include "executor/testing/tensor_compare.h"
#include "model/onnx_import.h"
#include "predictor/device_subset_model.h"
#include "predictor/profiles.h"
#include "scheduler/problem.h"
#include "scheduler/registry/registry.h"
#include "scheduler/retime.h"

namespace psched {
namespace {

using executor::runtime::CoExecutionRuntime;
using executor::runtime::PlatformDevices;

// One timed configuration of one model: a plan on a platform, or the executor alone.
struct Config {
  std::string platform = {};  // "A", "B", "C", or "-" for the executor or a peer alone
  std::string plan = {};
  bool single = false;  // a single-device plan
  // The plan's predicted latency: its schedule retimed with hand-offs by wait
  // (scheduler::RetimeByWaits) plus the model's run overhead; `planned_ms` the same from the
  // planner's own makespan (the constant sync cost on every edge between devices).
  double predicted_ms = 0;
  double planned_ms = 0;
  std::function<bool()> run = {};
  const CoExecutionRuntime* runtime = nullptr;  // for traces
  const scheduler::Schedule* schedule = nullptr;
  std::vector<std::string> device_names = {};
  // Times itself (the ONNX Runtime peer): returns ms, negative on failure.
  std::function<double()> self_timed = {};
  // psched's output for the bench input (NHWC), to check against ONNX Runtime's.
  std::function<absl::StatusOr<std::vector<std::vector<float>>>()> output = {};
  std::vector<double> ms = {};
  // --per-op-dir: microseconds of each op in each timed round (single-device plans only).
  bool per_op = false;
  std::vector<std::vector<double>> op_us = {};
  // --breakdown: one per timed round.
  std::vector<calibration::RunBreakdown> breakdowns = {};
  bool ok = true;
  std::string check = "-";  // relative L2 against ONNX Runtime, or why not
  // Major page faults the process took during the timed runs: a code or file page that had
  // been reclaimed read back from disk inside a run (the kernel's proactive reclaim, DAMON's
  // pageout, where enabled, takes idle file pages).
  long major_faults = 0;

  double median_ms() const {
    if (ms.empty()) return 0;
    std::vector<double> sorted = ms;
    std::sort(sorted.begin(), sorted.end());
    return sorted[sorted.size() / 2];
  }
  double min_ms() const { return ms.empty() ? 0 : *std::min_element(ms.begin(), ms.end()); }
  double max_ms() const { return ms.empty() ? 0 : *std::max_element(ms.begin(), ms.end()); }
};

struct PlatformSetup {
  std::string name;
  predictor::Profile profile;
  std::unique_ptr<PlatformDevices> devices;
  bool single_only = false;  // plan each device alone, no co-execution methods
};

// The host profile without its gpu (the last device), in both the platform and the model.
bool DropGpu(predictor::Profile& profile, const std::string& name) {
  const auto* model = dynamic_cast<const predictor::AnalyticModel*>(profile.model.get());
  if (model == nullptr) {
    std::fprintf(stderr, "the host profile is not analytic; cannot derive %s\n", name.c_str());
    return false;
  }
  profile.platform.devices.pop_back();
  profile.platform.name = name;
  std::vector<predictor::AnalyticDeviceParams> cpus;
  for (size_t i = 0; i < profile.platform.devices.size(); ++i) {
    cpus.push_back(model->device(static_cast<int>(i)));
  }
  profile.model = std::make_shared<predictor::AnalyticModel>(name, std::move(cpus));
  return true;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// The configuration an op is compared by, as ort_peer.py's per_op_key computes it for ONNX
// Runtime's nodes: convs by kernel, stride (input/output rows), groups, channels and output
// size; fully-connected by features; other ops by kind and output (C x H x W).
std::string PerOpKey(const model::Graph& graph, model::OpId id) {
  const model::Op& op = graph.ops[static_cast<size_t>(id)];
  const model::Shape& y = graph.tensor(op.output).shape;
  const model::Shape& x = graph.tensor(op.inputs[0]).shape;
  if (const auto* conv = std::get_if<model::ConvAttrs>(&op.attrs)) {
    const std::string g =
        conv->groups == x.c && conv->groups > 1 ? "dw" : absl::StrCat(conv->groups);
    return absl::StrFormat(
        "conv%dx%d/s%d g%s %d>%d @%dx%d", conv->window.kernel_h, conv->window.kernel_w,
        static_cast<int>(std::nearbyint(static_cast<double>(x.h) / y.h)), g, x.c, y.c, y.h, y.w);
  }
  if (op.kind == model::OpKind::kFullyConnected) {
    return absl::StrCat("fc ", x.Elements(), ">", y.Elements());
  }
  std::string kind(model::OpKindName(op.kind));
  if (op.kind == model::OpKind::kGlobalAvgPool) kind = "globalaveragepool";
  if (op.kind == model::OpKind::kAvgPool) kind = "averagepool";
  kind.erase(std::remove(kind.begin(), kind.end(), '_'), kind.end());
  return absl::StrCat(kind, " ", y.c, "x", y.h, "x", y.w);
}

// Writes key,count,us (summed per-op medians) like ort_peer.py's profile command.
bool WritePerOpCsv(const std::string& path, const model::Graph& graph, const Config& c) {
  std::map<std::string, std::pair<int, double>> rows;
  for (model::OpId id = 0; id < static_cast<model::OpId>(c.op_us.size()); ++id) {
    auto& [count, us] = rows[PerOpKey(graph, id)];
    ++count;
    us += Median(c.op_us[static_cast<size_t>(id)]);
  }
  std::ofstream out(path);
  out << "key,count,us\n";
  for (const auto& [key, row] : rows) {
    out << key << "," << row.first << "," << absl::StrFormat("%.2f", row.second) << "\n";
  }
  return out.good();
}

// Median ms per model from the PyTorch peer; empty (and a note on stderr) when unavailable.
std::map<std::string, double> TorchPeer(const std::string& script,
                                        const std::vector<std::string>& paths, int runs) {
  std::map<std::string, double> result;
  const std::string cmd = absl::StrCat("/usr/bin/python3 ", script, " --threads 2 --runs ", runs,
                                       " ", absl::StrJoin(paths, " "));
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return result;
  char name[256];
  double ms = 0;
  while (std::fscanf(pipe, "%255s %lf", name, &ms) == 2) result[name] = ms;
  const int rc = pclose(pipe);
  if (rc != 0) std::fprintf(stderr, "torch peer: exit status %d (torch missing?)\n", rc);
  return result;
}

// What building, timing and reporting a model need from the command line.
struct BenchSettings {
  std::vector<std::string> methods;
  double iterative_timeout_s = 10;
  double exact_stage_s = 10;
  double settle_ms = 20;
  std::string ort_dir;
  std::string per_op_dir;
  std::string trace_dir;
  bool fuse_residual_adds = true;
  bool predictive_wake = true;
  bool breakdown = false;
};

// One model: its graph, input and every configuration built for it, alive until the report
// (configurations point into it, so it stays where it was built).
struct ModelBench {
  std::string name;
  model::Graph graph;
  model::Shape out_shape;
  std::vector<std::vector<float>> input;
  std::vector<std::vector<float>> ort_out;  // NCHW, by thread count - 1
  std::vector<std::unique_ptr<executor::cpu::CpuGraphExecutor>> executors;
  std::vector<std::unique_ptr<CoExecutionRuntime>> runtimes;
  std::deque<scheduler::Schedule> schedules;  // a deque: Config::schedule points into it
  std::vector<Config> configs;
};

// Builds every configuration of one model (the peer's, the executor's, each plan on each
// platform) and runs each once: the warm-up, and psched's output checked against ONNX
// Runtime's. A plan that cannot be built prints a `failed` row and is left out.
absl::StatusOr<std::unique_ptr<ModelBench>> BuildModelBench(const std::string& name,
                                                            const std::string& path,
                                                            std::vector<PlatformSetup>& platforms,
                                                            bench::OrtPeerProcess* ort_peer,
                                                            const BenchSettings& s) {
  auto mb = std::make_unique<ModelBench>();
  mb->name = name;
  // With the peer: the complete model it wrote, so both sides run the same weights.
  std::string model_path = path;
  if (ort_peer != nullptr) {
    const std::string full = absl::StrCat(s.ort_dir, "/", name, ".onnx");
    if (absl::Status st = ort_peer->Load(name, path, full); !st.ok()) return st;
    model_path = full;
    for (int threads : {1, 2}) {
      auto npy = executor::ReadNpy(absl::StrCat(full, ".", threads, ".npy"));
      if (!npy.ok()) return npy.status();
      mb->ort_out.push_back(std::move(npy->data));
    }
  }
  model::ImportOptions import;
  import.synthesize_weights = ort_peer == nullptr;
  import.seed = 1;
  auto graph = model::ImportOnnxFile(model_path, import);
  if (!graph.ok()) return graph.status();
  mb->graph = *std::move(graph);
  const model::Graph& g = mb->graph;
  mb->out_shape = g.tensor(g.outputs[0].tensor).shape;
  for (const model::GraphIO& in : g.inputs) {
    mb->input.emplace_back(static_cast<size_t>(g.tensor(in.tensor).shape.Elements()), 0.5f);
  }
  const std::vector<std::vector<float>>& input = mb->input;

  if (ort_peer != nullptr) {
    // Threads 0: ONNX Runtime's profiling session (--per-op-dir), timed in the same rounds.
    for (int threads : {1, 2, 0}) {
      if (threads == 0 && s.per_op_dir.empty()) continue;
      mb->configs.push_back(
          {.platform = "-",
           .plan = threads == 0 ? std::string("onnxruntime 1t profiled")
                                : absl::StrCat("onnxruntime ", threads, " thread"),
           .self_timed = [ort_peer, name, threads] {
             absl::StatusOr<double> ms = ort_peer->RunMs(name, std::max(threads, 1), threads == 0);
             if (!ms.ok()) std::fprintf(stderr, "%s\n", ms.status().ToString().c_str());
             return ms.ok() ? *ms : -1.0;
           }});
    }
  }
  for (int threads : {1, 2}) {
    std::vector<int> cores{0};
    if (threads == 2) cores.push_back(1);
    auto exec = executor::cpu::CpuGraphExecutor::Create(
        g, {.cores = cores, .threads = threads, .fuse_residual_adds = s.fuse_residual_adds});
    if (!exec.ok()) {
      std::fprintf(stderr, "%s: executor %d threads: %s\n", name.c_str(), threads,
                   exec.status().ToString().c_str());
      continue;
    }
    mb->executors.push_back(std::move(*exec));
    executor::cpu::CpuGraphExecutor* e = mb->executors.back().get();
    mb->configs.push_back({.platform = "-",
                           .plan = absl::StrCat("executor ", threads, " thread"),
                           .run = [e, &input] { return e->Run(input).ok(); },
                           .output = [e, &input] { return e->Run(input); }});
  }
  for (PlatformSetup& p : platforms) {
    auto problem = scheduler::Problem::FromGraph(g, p.profile.platform, *p.profile.model);
    if (!problem.ok()) {
      std::fprintf(stderr, "%s: %s\n", name.c_str(), problem.status().ToString().c_str());
      continue;
    }
    std::vector<std::string> plan_names;
    for (const auto& d : p.profile.platform.devices) plan_names.push_back("single:" + d.name);
    if (!p.single_only) plan_names.insert(plan_names.end(), s.methods.begin(), s.methods.end());
    for (const std::string& method : plan_names) {
      auto scheduler = scheduler::MakeScheduler(method);
      if (!scheduler.ok()) {
        std::fprintf(stderr, "%s\n", scheduler.status().ToString().c_str());
        continue;
      }
      scheduler::SchedulerOptions options;
      options.seed = 1;
      options.timeout = absl::Seconds(s.iterative_timeout_s);
      if (method.rfind("exact", 0) == 0) {
        options.params["stage_time_limit_s"] = absl::StrCat(s.exact_stage_s);
      }
      auto schedule = (*scheduler)->Plan(*problem, options);
      absl::StatusOr<executor::runtime::ExecutionPlan> plan =
          schedule.ok() ? executor::runtime::PlanFromSchedule(g, *schedule)
                        : absl::StatusOr<executor::runtime::ExecutionPlan>(schedule.status());
      executor::runtime::RuntimeOptions runtime_options = p.devices->runtime_options();
      runtime_options.fuse_residual_adds = s.fuse_residual_adds;
      runtime_options.predictive_wake = s.predictive_wake;
      absl::StatusOr<std::unique_ptr<CoExecutionRuntime>> rt =
          plan.ok() ? CoExecutionRuntime::Create(g, p.devices->devices(), *plan, runtime_options)
                    : absl::StatusOr<std::unique_ptr<CoExecutionRuntime>>(plan.status());
      if (!rt.ok()) {
        std::printf("%-20s %-4s %-22s failed: %s\n", name.c_str(), p.name.c_str(), method.c_str(),
                    rt.status().ToString().c_str());
        continue;
      }
      absl::StatusOr<scheduler::Schedule> retimed = scheduler::RetimeByWaits(*problem, *schedule);
      if (!retimed.ok()) {
        std::printf("%-20s %-4s %-22s failed: %s\n", name.c_str(), p.name.c_str(), method.c_str(),
                    retimed.status().ToString().c_str());
        continue;
      }
      const double overhead_us = p.profile.model->RunOverheadUs();
      const double planned_ms = (schedule->makespan_us() + overhead_us) / 1e3;
      mb->runtimes.push_back(std::move(*rt));
      mb->schedules.push_back(*std::move(retimed));
      CoExecutionRuntime* r = mb->runtimes.back().get();
      mb->configs.push_back(
          {.platform = p.name,
           .plan = method,
           .single = method.rfind("single:", 0) == 0,
           .predicted_ms = (mb->schedules.back().makespan_us() + overhead_us) / 1e3,
           .planned_ms = planned_ms,
           .run = [r, &input] { return r->Run(input).ok(); },
           .runtime = r,
           .schedule = &mb->schedules.back(),
           .device_names = p.devices->names(),
           .output = [r, &input] { return r->Run(input); },
           .per_op = !s.per_op_dir.empty() && ((p.name == "A" && method == "single:cpu.0") ||
                                               (p.name == "C" && method == "single:cpu"))});
    }
  }
  // Warm-up, and psched's output against ONNX Runtime's (same weights, same input).
  for (Config& c : mb->configs) {
    if (c.self_timed) {
      c.ok &= c.self_timed() >= 0;
      continue;
    }
    c.ok &= c.run();
    if (mb->ort_out.empty() || !c.output) continue;
    auto out = c.output();
    if (!out.ok()) {
      c.ok = false;
      continue;
    }
    const std::vector<float> nchw = executor::NhwcToNchw(mb->out_shape, (*out)[0]);
    c.check = mb->ort_out[0].size() == nchw.size()
                  ? absl::StrFormat("%.1e", executor::testing::RelativeL2(nchw, mb->ort_out[0]))
                  : std::string("size!");
  }
  return mb;
}

// The process's major page faults so far, all threads.
long MajorFaults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_majflt;
}

// One timed run of one configuration, after the idle pause.
void TimeOnce(ModelBench& mb, Config& c, const BenchSettings& s) {
  absl::SleepFor(absl::Milliseconds(s.settle_ms));
  if (c.self_timed) {
    const double ms = c.self_timed();
    c.ok &= ms >= 0;
    c.ms.push_back(ms);
    return;
  }
  const long faults_before = MajorFaults();
  const absl::Time start = absl::Now();
  c.ok &= c.run();
  c.ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - start));
  c.major_faults += MajorFaults() - faults_before;
  if (s.breakdown && c.runtime != nullptr && c.schedule != nullptr) {
    c.breakdowns.push_back(calibration::BreakDownRun(mb.graph, *c.schedule,
                                                     c.runtime->last_timings(), c.ms.back() * 1e3));
  }
  if (c.per_op) {
    c.op_us.resize(mb.graph.ops.size());
    for (const executor::runtime::SubtaskTiming& t : c.runtime->last_timings()) {
      c.op_us[static_cast<size_t>(t.step.op)].push_back((t.end_ns - t.start_ns) / 1e3);
    }
  }
}

// Writes op,name,configuration,measured_us,predicted_us: each op's median time in the timed
// rounds beside what the plan's retimed schedule gave its subtasks (a single-device plan: one
// each). The op whose run differs from its calibration anchor shows here, not in the sums.
bool WriteMeasuredVsPredictedCsv(const std::string& path, const model::Graph& graph,
                                 const Config& c) {
  std::vector<double> predicted_us(graph.ops.size(), 0.0);
  for (const scheduler::ScheduledSubtask& st : c.schedule->subtasks()) {
    predicted_us[static_cast<size_t>(st.op)] += st.end_us - st.start_us;
  }
  std::ofstream out(path);
  out << "op,name,configuration,measured_us,predicted_us\n";
  for (model::OpId id = 0; id < static_cast<model::OpId>(c.op_us.size()); ++id) {
    const auto i = static_cast<size_t>(id);
    out << absl::StrFormat("%d,\"%s\",\"%s\",%.2f,%.2f\n", id, graph.ops[i].name,
                           PerOpKey(graph, id), Median(c.op_us[i]), predicted_us[i]);
  }
  return static_cast<bool>(out);
}

// --per-op-dir: the per op times of the configurations that keep them, and ONNX Runtime's.
void WritePerOpFiles(const ModelBench& mb, bench::OrtPeerProcess* ort_peer,
                     const std::string& per_op_dir) {
  std::filesystem::create_directories(per_op_dir);
  for (const Config& c : mb.configs) {
    if (!c.per_op) continue;
    const std::string csv =
        absl::StrCat(per_op_dir, "/", mb.name, c.platform == "C" ? ".cluster.csv" : ".psched.csv");
    if (!WritePerOpCsv(csv, mb.graph, c)) std::fprintf(stderr, "cannot write %s\n", csv.c_str());
    const std::string ops_csv = absl::StrCat(per_op_dir, "/", mb.name, ".", c.platform, ".ops.csv");
    if (!WriteMeasuredVsPredictedCsv(ops_csv, mb.graph, c)) {
      std::fprintf(stderr, "cannot write %s\n", ops_csv.c_str());
    }
  }
  if (ort_peer != nullptr) {
    if (absl::Status st =
            ort_peer->WriteProfile(mb.name, absl::StrCat(per_op_dir, "/", mb.name, ".ort.csv"));
        !st.ok()) {
      std::fprintf(stderr, "%s\n", st.ToString().c_str());
    }
  }
}

// --breakdown: where each plan's time went, medians over the rounds; cross-device delays per
// run, pooled for percentiles.
void PrintBreakdowns(const ModelBench& mb) {
  for (const Config& c : mb.configs) {
    if (c.breakdowns.empty()) continue;
    namespace rc = calibration;
    const rc::RunBreakdown b = rc::MedianBreakdown(c.breakdowns);
    std::string kernels;
    for (size_t d = 0; d < b.measured_kernel_us.size(); ++d) {
      absl::StrAppendFormat(&kernels, " %s %.0f/%.0f", c.device_names[d], b.measured_kernel_us[d],
                            b.predicted_kernel_us[d]);
      // The share of the device's predicted time that ran beside another device's work: what
      // its co-run factor applies to (scheduler/co_run_overlap.h).
      if (b.predicted_kernel_us[d] > 0 && b.predicted_overlapped_us[d] > 0) {
        absl::StrAppendFormat(&kernels, " (%.0f%% beside)",
                              100 * b.predicted_overlapped_us[d] / b.predicted_kernel_us[d]);
      }
    }
    // Percentiles of the delays, and their medians by direction and by whether the waiting
    // device had been idle past a host waiter's spin (it then parks and must be woken).
    constexpr double kSpinUs = CoExecutionRuntime::kSpinNs / 1e3;
    std::vector<double> cd;
    std::map<std::tuple<int, int, bool>, std::vector<double>> by_kind;
    for (const rc::CrossDelay& x : b.cross_delays) {
      cd.push_back(x.delay_us);
      by_kind[{x.from_device, x.to_device, x.idle_us >= kSpinUs}].push_back(x.delay_us);
    }
    std::sort(cd.begin(), cd.end());
    double cross_us = 0;
    for (double us : cd) cross_us += us;
    const double rounds = static_cast<double>(c.breakdowns.size());
    std::string delays =
        cd.empty() ? std::string()
                   : absl::StrFormat(" [p10 %.1f p50 %.1f p90 %.1f max %.0f]", cd[cd.size() / 10],
                                     cd[cd.size() / 2], cd[cd.size() * 9 / 10], cd.back());
    for (auto& [kind, v] : by_kind) {
      const auto [from, to, long_idle] = kind;
      std::sort(v.begin(), v.end());
      absl::StrAppendFormat(&delays, " %s>%s idle%s%.0f: %.1f x p50 %.1f",
                            c.device_names[static_cast<size_t>(from)],
                            c.device_names[static_cast<size_t>(to)], long_idle ? ">=" : "<",
                            kSpinUs, static_cast<double>(v.size()) / rounds, v[v.size() / 2]);
    }
    std::printf(
        "breakdown %s %s %s: predicted %.0f replay %.0f trace-end %.0f wall %.0f us | first "
        "start %.0f, cross delay %.0f (%.0f waits%s), local delay %.0f, after %.0f | kernels "
        "meas/pred%s | whole %.0f/%.0f slices %.0f/%.0f | inputs local %.0f/%.0f mixed "
        "%.0f/%.0f remote %.0f/%.0f\n",
        mb.name.c_str(), c.platform.c_str(), c.plan.c_str(), b.predicted_us, b.replay_us,
        b.trace_end_us, b.wall_us, b.first_start_us, cross_us / rounds,
        static_cast<double>(cd.size()) / rounds, delays.c_str(), b.local_delay_us,
        b.wall_us - b.trace_end_us, kernels.c_str(), b.measured_whole_us, b.predicted_whole_us,
        b.measured_slice_us, b.predicted_slice_us, b.measured_by_locality[0],
        b.predicted_by_locality[0], b.measured_by_locality[1], b.predicted_by_locality[1],
        b.measured_by_locality[2], b.predicted_by_locality[2]);
  }
}

// The model's rows of the table (and its traces, breakdowns and cluster line).
void Report(const ModelBench& mb, const std::map<std::string, double>& torch_ms,
            const BenchSettings& s) {
  const std::vector<Config>& configs = mb.configs;
  auto median_of = [&](const std::string& plan) {
    for (const Config& c : configs) {
      if (c.platform == "-" && c.plan == plan) return c.median_ms();
    }
    return 0.0;
  };
  const double one_core_ms = median_of("executor 1 thread");
  const double two_core_ms = median_of("executor 2 thread");
  const double ort1_ms = median_of("onnxruntime 1 thread");
  const double ort2_ms = median_of("onnxruntime 2 thread");
  auto ratio = [](double ms, double base) {
    return base > 0 ? absl::StrFormat("%.2f", ms / base) : std::string("-");
  };
  // The paper's measurement table: each plan against the measured exact plan of its
  // platform (with --methods ... exact).
  std::map<std::string, double> exact_ms;
  for (const Config& c : configs) {
    if (c.plan == "exact") exact_ms[c.platform] = c.median_ms();
  }
  std::map<std::string, double> best_single_ms;
  for (const Config& c : configs) {
    if (c.single) {
      auto [it, fresh] = best_single_ms.emplace(c.platform, c.median_ms());
      if (!fresh) it->second = std::min(it->second, c.median_ms());
    }
  }
  const char* model = mb.name.c_str();
  for (const Config& c : configs) {
    const double ms = c.median_ms();
    const std::string predicted =
        c.predicted_ms > 0 ? absl::StrFormat("%.2f", c.predicted_ms) : std::string("-");
    const std::string planned =
        c.planned_ms > 0 ? absl::StrFormat("%.2f", c.planned_ms) : std::string("-");
    const auto best = best_single_ms.find(c.platform);
    const bool slower_than_single =
        !c.single && c.platform != "-" && best != best_single_ms.end() && ms > best->second;
    const bool over_prediction = c.predicted_ms > 0 && ms > 1.15 * c.predicted_ms;
    const auto exact = exact_ms.find(c.platform);
    const std::string faults =
        c.major_faults > 0 ? absl::StrFormat("  MAJOR-FAULTS=%d", c.major_faults) : "";
    std::printf("%-20s %-4s %-22s %9.2f %9.2f %9.2f %9s %9s %7s %7s %7s %7s %9s%s%s%s%s\n", model,
                c.platform.c_str(), c.plan.c_str(), ms, c.min_ms(), c.max_ms(), predicted.c_str(),
                planned.c_str(), ratio(ms, one_core_ms).c_str(), ratio(ms, ort1_ms).c_str(),
                ratio(ms, ort2_ms).c_str(),
                ratio(ms, exact == exact_ms.end() ? 0.0 : exact->second).c_str(), c.check.c_str(),
                slower_than_single ? "  SLOWER-THAN-BEST-SINGLE" : "",
                over_prediction ? "  OVER-1.15x-PREDICTED" : "", faults.c_str(),
                c.ok ? "" : "  RUN-FAILED");
    if (c.plan == "executor 2 thread") {
      if (auto it = torch_ms.find(mb.name); it != torch_ms.end()) {
        std::printf("%-20s %-4s %-22s %9.2f %9s %9s %9s %9s %7s %7s %7s %7s %9s\n", model, "-",
                    "pytorch 2 threads", it->second, "-", "-", "-", "-",
                    ratio(it->second, one_core_ms).c_str(), ratio(it->second, ort1_ms).c_str(),
                    ratio(it->second, ort2_ms).c_str(), "-", "-");
      }
    }
    if (!s.trace_dir.empty() && c.runtime != nullptr) {
      std::string plan_name = c.plan;
      std::replace(plan_name.begin(), plan_name.end(), ':', '-');
      const std::string path =
          absl::StrCat(s.trace_dir, "/", mb.name, ".", c.platform, ".", plan_name, ".json");
      if (absl::Status st = executor::runtime::WriteChromeTrace(path, mb.graph, *c.runtime,
                                                                c.device_names, c.schedule);
          !st.ok()) {
        std::fprintf(stderr, "%s\n", st.ToString().c_str());
      }
    }
  }
  PrintBreakdowns(mb);
  for (const Config& c : configs) {
    if (c.platform == "C" && c.plan == "single:cpu" && two_core_ms > 0) {
      std::printf("%-20s cluster device / executor 2 thread = %s (median %.2f / %.2f ms)\n", model,
                  ratio(c.median_ms(), two_core_ms).c_str(), c.median_ms(), two_core_ms);
    }
  }
  std::fflush(stdout);
}

// Measured over predicted latency of every plan that has a prediction: per model the median
// over its plans, then the median over models, each with its spread (min, max).
void ReportPredictionRatios(const std::vector<std::unique_ptr<ModelBench>>& benches) {
  std::vector<double> model_medians;
  std::printf("\nmeasured / predicted (median over runs / plan prediction)\n");
  for (const auto& mb : benches) {
    std::vector<double> ratios;
    for (const Config& c : mb->configs) {
      if (c.predicted_ms > 0 && c.ok && !c.ms.empty())
        ratios.push_back(c.median_ms() / c.predicted_ms);
    }
    if (ratios.empty()) continue;
    const double median = Median(ratios);
    model_medians.push_back(median);
    std::printf("%-20s %.3f (min %.3f, max %.3f) over %zu plans\n", mb->name.c_str(), median,
                *std::min_element(ratios.begin(), ratios.end()),
                *std::max_element(ratios.begin(), ratios.end()), ratios.size());
  }
  if (model_medians.empty()) return;
  std::printf("%-20s %.3f (min %.3f, max %.3f) over %zu models\n", "median over models",
              Median(model_medians), *std::min_element(model_medians.begin(), model_medians.end()),
              *std::max_element(model_medians.begin(), model_medians.end()), model_medians.size());
}

int Main(int argc, char** argv) {
  // Before OpenCL loads: PoCL keeps one worker thread, the "GPU" of platform B.
  setenv("POCL_MAX_PTHREAD_COUNT", "1", 0);
  CLI::App app{"psched co-execution benchmark"};
  std::vector<std::string> models{"squeezenet_v1_1", "peleenet", "inceptionv3",
                                  "hrnet_w18_small_v1"};
  std::string models_dir = std::string(PSCHED_SHARED_DIR_DEFAULT) + "/models/graph-only";
  std::vector<std::string> methods{"heft", "partition-only", "iterative"};
  int runs = 5;
  double iterative_timeout_s = 10;
  double exact_stage_s = 10;
  bool torch = true;
  bool ort = true;
  std::string ort_venv = PSCHED_ORT_VENV_DEFAULT;
  std::string ort_dir = PSCHED_ORT_WORK_DIR_DEFAULT;
  std::string opencl = "pthread";
  app.add_option("--models", models,
                 "model names (graph-only models in --models-dir, synthetic weights) or paths of "
                 "ONNX files (ending in .onnx; reported by their file name without it)");
  app.add_option("--models-dir", models_dir);
  app.add_option("--methods", methods, "co-execution methods besides single:<device>");
  app.add_option("--runs", runs, "timed runs per configuration (median reported)");
  double settle_ms = 20;
  app.add_option("--settle-ms", settle_ms,
                 "idle pause before each timed run, so that threads the previous configuration "
                 "left spinning (ONNX Runtime's pool, pthreadpool, PoCL) have stopped")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--timeout", iterative_timeout_s, "planning timeout per stage, seconds");
  app.add_option("--exact-stage-s", exact_stage_s,
                 "time limit per stage of the exact method (--methods ... exact), seconds")
      ->check(CLI::PositiveNumber);
  app.add_option("--opencl", opencl, "OpenCL device selector for platform B's GPU");
  std::string trace_dir;
  app.add_option("--trace-dir", trace_dir,
                 "write each plan's last run as Chrome trace JSON <model>.<platform>.<plan>.json "
                 "(measured beside predicted subtasks)");
  app.add_flag("!--no-torch", torch, "skip the PyTorch peer");
  app.add_flag("!--no-ort", ort,
               "skip the ONNX Runtime peer (psched then synthesizes the weights itself)");
  app.add_option("--ort-venv", ort_venv, "venv of the ONNX Runtime peer (created when missing)");
  app.add_option("--ort-dir", ort_dir, "where the peer writes the complete models and outputs");
  std::string per_op_dir;
  app.add_option("--per-op-dir", per_op_dir,
                 "write per op configuration times of platform A's single:cpu.0 plan "
                 "(<model>.psched.csv), of platform C's 2-core cluster (<model>.cluster.csv) "
                 "and of ONNX Runtime with 1 thread (<model>.ort.csv), which "
                 "bench/coexec/per_op_table.py joins; and each op of the first two measured "
                 "beside its prediction (<model>.A.ops.csv, <model>.C.ops.csv)");
  bool back_to_back = false;
  app.add_flag("--back-to-back", back_to_back,
               "time each configuration's runs one after another instead of in interleaved rounds "
               "(a model served repeatedly: its weights stay in the shared cache)");
  bool fuse_residual_adds = true;
  app.add_flag("!--no-fused-adds", fuse_residual_adds,
               "run residual adds as ops of their own instead of inside the conv before them "
               "(executor/common/residual_add_fusion.h), in the executor and the runtime");
  bool predictive_wake = true;
  app.add_flag("!--no-predictive-wake", predictive_wake,
               "device threads wait for an input from another device without first sleeping "
               "until shortly before the plan has it due (RuntimeOptions::predictive_wake)");
  bool breakdown = false;
  app.add_flag("--breakdown", breakdown,
               "per plan, where the time went against the prediction (medians over the rounds): "
               "kernels, delays between subtasks (cross-device, by direction and idle time before "
               "the input, and local), the run's fixed costs");
  std::vector<std::string> host_model_paths;
  app.add_option("--host-model", host_model_paths,
                 "psched-calibrate --out JSON (one or more): plan every platform with a calibrated "
                 "host model (GBDT or analytic fit per device and op family, co-run contention) "
                 "of its devices - cpu.0, cpu.1, gpu; C's 2-core cluster when a file has `cpu` - "
                 "from the first file that has them all, instead of the `host` analytic profile");
  CLI11_PARSE(app, argc, argv);
  const BenchSettings settings{.methods = methods,
                               .iterative_timeout_s = iterative_timeout_s,
                               .exact_stage_s = exact_stage_s,
                               .settle_ms = settle_ms,
                               .ort_dir = ort_dir,
                               .per_op_dir = per_op_dir,
                               .trace_dir = trace_dir,
                               .fuse_residual_adds = fuse_residual_adds,
                               .predictive_wake = predictive_wake,
                               .breakdown = breakdown};
  if (!trace_dir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(trace_dir, error);
    if (error) {
      std::fprintf(stderr, "--trace-dir %s: cannot create it: %s\n", trace_dir.c_str(),
                   error.message().c_str());
      return 1;
    }
  }
  // The calibrated host models and their device names, in the order given.
  std::vector<calibration::LoadedHostModel> calibrated;
  for (const std::string& path : host_model_paths) {
    std::ifstream in(path);
    const nlohmann::json json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    auto loaded = calibration::HostModelFromJson(
        json.is_object() && json.contains("params") ? json["params"] : json);
    if (!loaded.ok()) {
      std::fprintf(stderr, "--host-model %s: %s\n", path.c_str(),
                   loaded.status().ToString().c_str());
      return 1;
    }
    calibrated.push_back(*std::move(loaded));
  }
  // The profile's latency model replaced by the first calibrated model's view of its devices.
  // A platform no file covers keeps its prior when `optional`.
  auto calibrate = [&](predictor::Profile& profile, bool optional = false) -> bool {
    if (calibrated.empty()) return true;
    for (const calibration::LoadedHostModel& host : calibrated) {
      std::vector<int> indices;
      for (const platform::DeviceSpec& d : profile.platform.devices) {
        auto it = std::find(host.device_names.begin(), host.device_names.end(), d.name);
        if (it == host.device_names.end()) break;
        indices.push_back(static_cast<int>(it - host.device_names.begin()));
      }
      if (indices.size() < profile.platform.devices.size()) continue;
      auto subset = predictor::DeviceSubsetModel::Create(host.model, std::move(indices));
      if (!subset.ok()) {
        std::fprintf(stderr, "--host-model: %s\n", subset.status().ToString().c_str());
        return false;
      }
      profile.model = *std::move(subset);
      return true;
    }
    if (optional) return true;
    std::fprintf(stderr, "no --host-model has every device of platform %s\n",
                 profile.platform.name.c_str());
    return false;
  };

  // B first: PoCL's worker thread starts when the device opens and is pinned to core 1.
  predictor::Profile profile_b = predictor::HostProfile(1, opencl);
  auto devices_b = PlatformDevices::Create(profile_b.platform, {.gpu_core = 1});
  std::vector<PlatformSetup> platforms;
  predictor::Profile profile_a = predictor::HostProfile(2, opencl);
  if (!DropGpu(profile_a, "host-cpu")) return 1;  // cpu.0 + cpu.1
  auto devices_a = PlatformDevices::Create(profile_a.platform);
  if (!devices_a.ok()) {
    std::fprintf(stderr, "platform A: %s\n", devices_a.status().ToString().c_str());
    return 1;
  }
  if (!calibrate(profile_a)) return 1;
  platforms.push_back({"A", profile_a, std::move(*devices_a)});
  // C: one device for the 2-core cluster, as topology discovery gives pschedd here. Its
  // prediction is the prior unless the calibration has a `cpu` device (--devices cpu=0+1).
  predictor::Profile profile_c = predictor::HostProfile({{.name = "cpu", .cores = {0, 1}}});
  if (!DropGpu(profile_c, "host-cluster")) return 1;
  if (!calibrate(profile_c, /*optional=*/true)) return 1;
  auto devices_c = PlatformDevices::Create(profile_c.platform);
  if (!devices_c.ok()) {
    std::fprintf(stderr, "platform C: %s\n", devices_c.status().ToString().c_str());
    return 1;
  }
  platforms.push_back({"C", profile_c, std::move(*devices_c), /*single_only=*/true});
  if (devices_b.ok()) {
    const std::optional<double> overhead = (*devices_b)->gpu_dispatch_overhead_us();
    profile_b = predictor::HostProfile(1, opencl, {.gpu_dispatch_us = overhead});
    if (!calibrate(profile_b)) return 1;
    std::printf(
        "platform B gpu: '%s', dispatch+sync overhead %.1f us (planned with it), %d "
        "driver threads pinned to core 1\n",
        (*devices_b)->gpu()->info().name.c_str(), overhead.value_or(-1),
        (*devices_b)->gpu()->pinned_driver_threads());
    platforms.push_back({"B", profile_b, std::move(*devices_b)});
  } else {
    std::printf("platform B skipped: %s\n", devices_b.status().ToString().c_str());
  }
  std::printf("latency model: %s\n", calibrated.empty()
                                         ? "`host` analytic profile"
                                         : absl::StrCat("calibrated host models from ",
                                                        absl::StrJoin(host_model_paths, ", "))
                                               .c_str());

  std::vector<std::string> paths;
  for (std::string& m : models) {
    if (m.ends_with(".onnx")) {
      paths.push_back(m);
      m = std::filesystem::path(m).stem().string();
    } else {
      paths.push_back(models_dir + "/" + m + ".onnx");
    }
  }
  std::map<std::string, double> torch_ms;
  if (torch) torch_ms = TorchPeer(PSCHED_TORCH_PEER, paths, runs);
  std::unique_ptr<bench::OrtPeerProcess> ort_peer;
  if (ort) {
    std::filesystem::create_directories(ort_dir);
    auto started = bench::OrtPeerProcess::Start(PSCHED_ORT_VENV_SCRIPT, ort_venv, PSCHED_ORT_PEER);
    if (started.ok()) {
      ort_peer = std::move(*started);
    } else {
      std::printf("ONNX Runtime peer skipped: %s\n", started.status().ToString().c_str());
    }
  }

  std::printf("\n%-20s %-4s %-22s %9s %9s %9s %9s %9s %7s %7s %7s %7s %9s\n", "model", "plat",
              "plan", "median_ms", "min_ms", "max_ms", "pred_ms", "planned", "/exe1", "/ort1",
              "/ort2", "/exact", "vs_ort");
  std::vector<std::unique_ptr<ModelBench>> benches;
  for (size_t mi = 0; mi < models.size(); ++mi) {
    std::fprintf(stderr, "building %s (%zu of %zu)\n", models[mi].c_str(), mi + 1, models.size());
    auto mb = BuildModelBench(models[mi], paths[mi], platforms, ort_peer.get(), settings);
    if (!mb.ok()) {
      std::fprintf(stderr, "%s: %s\n", models[mi].c_str(), mb.status().ToString().c_str());
      return 1;
    }
    benches.push_back(*std::move(mb));
  }
  // Every model's configurations are timed in the same rounds, so a disturbance of the machine
  // (a shared VM: seconds at a time) falls on a few rounds of every model, not on all rounds
  // of one, and the medians step over it.
  if (back_to_back) {
    for (auto& mb : benches) {
      for (Config& c : mb->configs) {
        for (int round = 0; round < runs; ++round) TimeOnce(*mb, c, settings);
      }
    }
  } else {
    for (int round = 0; round < runs; ++round) {
      std::fprintf(stderr, "timing round %d of %d\n", round + 1, runs);
      for (auto& mb : benches) {
        for (Config& c : mb->configs) TimeOnce(*mb, c, settings);
      }
    }
  }
  for (const auto& mb : benches) {
    if (!settings.per_op_dir.empty()) WritePerOpFiles(*mb, ort_peer.get(), settings.per_op_dir);
    Report(*mb, torch_ms, settings);
  }
  ReportPredictionRatios(benches);
  return 0;
}

}  // namespace
}  // namespace psched

int main(int argc, char** argv) { return psched::Main(argc, argv); }
