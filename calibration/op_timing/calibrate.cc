#include "calibration/op_timing/calibrate.h"

#include <pthreadpool.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "executor/common/pinned_worker.h"
#include "executor/cpu/cpu_kernel.h"
#include "executor/cpu/cpu_threadpool.h"
#include "executor/opencl/opencl_device.h"
#include "executor/opencl/opencl_kernels.h"
#include "executor/opencl/svm_arena.h"
#include "model/synthetic_weights.h"
#include "predictor/error_summary.h"
#include "spdlog/spdlog.h"

namespace psched::calibration {
namespace {

using Clock = std::chrono::steady_clock;
using predictor::host_model::CalibrationSample;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
double Micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

std::vector<float> RandomData(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

model::Graph WithWeights(const CalibrationCase& c, uint64_t seed) {
  model::Graph g = *c.graph;
  model::SynthesizeWeights(seed, &g);
  return g;
}

// Streams through `bytes` of scratch memory on the calling thread, pushing what the last
// run left in this core's private caches out to the shared cache.
void EvictPrivateCaches(size_t bytes) {
  if (bytes == 0) return;
  thread_local std::vector<uint8_t> scratch;
  if (scratch.size() != bytes) scratch.assign(bytes, 0);
  // One write per cache line; volatile so the loop is not elided.
  volatile uint8_t* data = scratch.data();
  for (size_t i = 0; i < bytes; i += 64) data[i] = static_cast<uint8_t>(data[i] + 1);
}

// Evicts the private caches of the calling thread and, with a pool, of every pool thread.
void EvictThreadCaches(size_t bytes, pthreadpool_t pool) {
  if (pool == nullptr || bytes == 0) {
    EvictPrivateCaches(bytes);
    return;
  }
  executor::cpu::ParallelFor(pool, pthreadpool_get_threads_count(pool),
                             [bytes](size_t) { EvictPrivateCaches(bytes); });
}

// Runs `timed_run` (one run of a case, returning how long it took in us) `runs` times after
// `warmup` untimed calls; the median (or with `fastest` the minimum).
template <typename TimedFn>
absl::StatusOr<double> MedianOfRuns(int warmup, int runs, bool fastest, TimedFn timed_run) {
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < warmup; ++i) {
    if (absl::StatusOr<double> us = timed_run(); !us.ok()) return us.status();
  }
  spdlog::debug("calibration: {} warm-up runs took {:.1f} ms", warmup,
                Micros(Clock::now() - start) / 1e3);
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) {
    absl::StatusOr<double> us = timed_run();
    if (!us.ok()) return us.status();
    times.push_back(*us);
  }
  if (fastest) return *std::min_element(times.begin(), times.end());
  return predictor::Median(std::move(times));
}

// MedianOfRuns of `run` by the host's clock. With `evict_bytes` > 0 the private caches (of
// `pool`'s threads too) are evicted before every run (not timed).
template <typename Fn>
absl::StatusOr<double> TimeRuns(int warmup, int runs, bool fastest, size_t evict_bytes,
                                pthreadpool_t pool, Fn run) {
  return MedianOfRuns(warmup, runs, fastest, [&]() -> absl::StatusOr<double> {
    EvictThreadCaches(evict_bytes, pool);
    const Clock::time_point run_start = Clock::now();
    if (absl::Status s = run(); !s.ok()) return s;
    return Micros(Clock::now() - run_start);
  });
}

// Whether op 0 is a concat the executors run in place: every input was produced straight
// into its channel slice of the output (executor/common/arena_plan.h), so the case is timed
// that way too and measures what a scheduled concat really costs. Constant or repeated
// inputs, and a concat along another axis than the channels, cannot be placed so.
bool IsInPlaceConcat(const model::Graph& graph) {
  const model::Op& op = graph.op(0);
  if (op.kind != model::OpKind::kConcat) return false;
  if (const auto* attrs = std::get_if<model::ConcatAttrs>(&op.attrs);
      attrs != nullptr && attrs->axis != -1) {
    return false;
  }
  std::set<model::TensorId> distinct;
  for (model::TensorId t : op.inputs) {
    if (graph.tensor(t).constant != model::kInvalidId || !distinct.insert(t).second) return false;
  }
  return true;
}

// The pixel stride a case writes its output at: that of the concat output the op writes inside
// in its model (the executors place it there, so its kernel stores strided pixels), else dense.
// An in-place concat's own output is dense: its inputs were written into it.
int64_t CaseOutputPixelStride(const CalibrationCase& c, const model::Shape& out_shape) {
  return c.config.output_pixel_stride > out_shape.c && !IsInPlaceConcat(*c.graph)
             ? c.config.output_pixel_stride
             : out_shape.c;
}

// One case made ready to run on a CPU device: its graph, buffers and bound kernel. Heap-held
// and never moved, since the kernel's views point into the buffers.
struct PreparedCpuCase {
  model::Graph graph;
  std::vector<float> output;
  std::map<model::TensorId, std::vector<float>> buffers;
  std::unique_ptr<executor::cpu::CpuKernel> kernel;
};

// Prepares one case for the calling thread and `pool` (null: the calling thread alone).
absl::StatusOr<std::unique_ptr<PreparedCpuCase>> PrepareCpuCase(const CalibrationCase& c,
                                                                const CalibrationOptions& options,
                                                                pthreadpool_t pool) {
  auto prepared = std::make_unique<PreparedCpuCase>();
  prepared->graph = WithWeights(c, options.seed);
  const model::Graph& graph = prepared->graph;
  const model::Shape& out_shape = graph.output_shape(0);
  const int64_t out_stride = CaseOutputPixelStride(c, out_shape);
  std::vector<float>& output = prepared->output;
  output.assign(static_cast<size_t>(out_shape.Elements() / out_shape.c * out_stride), 0.0f);
  const std::vector<model::TensorId> activation_inputs = graph.ActivationInputs(0);
  executor::cpu::KernelLayout layout;
  layout.output_pixel_stride = out_stride;
  std::vector<executor::TensorView> inputs;
  if (IsInPlaceConcat(graph)) {
    output = RandomData(output.size(), options.seed);
    int64_t channel = 0;
    for (model::TensorId t : activation_inputs) {
      const model::Shape& shape = graph.tensor(t).shape;
      inputs.push_back(executor::TensorView{output.data() + channel, shape, out_shape.c});
      layout.input_pixel_strides.push_back(out_shape.c);
      channel += shape.c;
    }
  } else {
    for (model::TensorId t : activation_inputs) {
      const model::Shape& shape = graph.tensor(t).shape;
      std::vector<float>& data = prepared->buffers[t];
      if (data.empty()) {
        data = RandomData(static_cast<size_t>(shape.Elements()),
                          options.seed + static_cast<uint64_t>(t));
      }
      inputs.push_back(executor::TensorView{data.data(), shape, shape.c});
    }
  }
  absl::StatusOr<std::unique_ptr<executor::cpu::CpuKernel>> kernel = executor::cpu::CreateCpuKernel(
      graph, 0, executor::WorkSlice{c.axis, c.begin, c.end}, layout, pool);
  if (!kernel.ok()) return kernel.status();
  if (absl::Status s = (*kernel)->Setup(inputs, {output.data(), out_shape, out_stride}); !s.ok()) {
    return s;
  }
  prepared->kernel = std::move(*kernel);
  return prepared;
}

// Times one case on the calling thread and `pool` (null: the calling thread alone).
absl::StatusOr<double> TimeCpuCase(const CalibrationCase& c, const CalibrationOptions& options,
                                   pthreadpool_t pool) {
  absl::StatusOr<std::unique_ptr<PreparedCpuCase>> prepared = PrepareCpuCase(c, options, pool);
  if (!prepared.ok()) return prepared.status();
  const int threads = pool != nullptr ? static_cast<int>(pthreadpool_get_threads_count(pool)) : 1;
  return TimeRuns(options.warmup_runs, options.runs, SampleIsFastestRun(options, threads),
                  options.evict_bytes, pool, [&] { return (*prepared)->kernel->Run(); });
}

// The OpenCL device for `selector_text` (CalibrationGpuSelector).
absl::StatusOr<std::unique_ptr<executor::opencl::OpenClDevice>> OpenGpu(
    const std::string& selector_text) {
  absl::StatusOr<executor::opencl::DeviceSelector> selector =
      executor::opencl::DeviceSelector::Parse(CalibrationGpuSelector(selector_text));
  if (!selector.ok()) return selector.status();
  return executor::opencl::OpenClDevice::Open(*selector);
}

// One case made ready to run on the OpenCL device (members destroyed kernel first).
struct PreparedGpuCase {
  model::Graph graph;
  std::unique_ptr<executor::opencl::SvmArena> arena;
  std::unique_ptr<executor::opencl::KernelFactory> factory;
  std::unique_ptr<executor::opencl::OpKernel> kernel;
};

absl::StatusOr<std::unique_ptr<PreparedGpuCase>> PrepareGpuCase(
    executor::opencl::OpenClDevice* device, const CalibrationCase& c,
    const CalibrationOptions& options) {
  auto prepared = std::make_unique<PreparedGpuCase>();
  prepared->graph = WithWeights(c, options.seed);
  const model::Graph& graph = prepared->graph;
  std::vector<executor::TensorPlacement> placements(graph.tensors.size());
  const auto output = static_cast<size_t>(graph.op(0).output);
  const model::Shape& out_shape = graph.tensors[output].shape;
  int64_t floats = 0;
  for (size_t t = 0; t < graph.tensors.size(); ++t) {
    if (graph.tensors[t].constant != model::kInvalidId) continue;
    placements[t].offset = floats;
    floats += graph.tensors[t].shape.Elements();
  }
  if (const int64_t stride = CaseOutputPixelStride(c, out_shape); stride != out_shape.c) {
    placements[output] = {floats, stride};
    floats += out_shape.Elements() / out_shape.c * stride;
  }
  const bool in_place_concat = IsInPlaceConcat(graph);
  if (in_place_concat) {
    int64_t channel = 0;
    for (model::TensorId t : graph.op(0).inputs) {
      placements[static_cast<size_t>(t)] = {placements[output].offset + channel, out_shape.c};
      channel += graph.tensor(t).shape.c;
    }
  }
  absl::StatusOr<std::unique_ptr<executor::opencl::SvmArena>> arena =
      executor::opencl::SvmArena::Create(device, static_cast<size_t>(floats));
  if (!arena.ok()) return arena.status();
  prepared->arena = std::move(*arena);
  // An in-place concat's inputs are slices of its output, whose content does not matter.
  for (const model::GraphIO& in : graph.inputs) {
    if (in_place_concat) break;
    const std::vector<float> data =
        RandomData(static_cast<size_t>(graph.tensor(in.tensor).shape.Elements()),
                   options.seed + static_cast<uint64_t>(in.tensor));
    if (absl::Status s = prepared->arena->Write(
            static_cast<size_t>(placements[static_cast<size_t>(in.tensor)].offset), data);
        !s.ok()) {
      return s;
    }
  }
  absl::StatusOr<std::unique_ptr<executor::opencl::KernelFactory>> factory =
      executor::opencl::KernelFactory::Create(device, &graph, prepared->arena.get(), placements);
  if (!factory.ok()) return factory.status();
  prepared->factory = std::move(*factory);
  absl::StatusOr<std::unique_ptr<executor::opencl::OpKernel>> kernel =
      prepared->factory->Create(0, executor::WorkSlice{c.axis, c.begin, c.end});
  if (!kernel.ok()) return kernel.status();
  prepared->kernel = std::move(*kernel);
  return prepared;
}

// Times one case through the OpenCL kernels by the device's clock: from its first launch's
// start to its last launch's end, as the runtime times a GPU subtask (last_device_us). The
// host's round trip around it (enqueue, the driver thread's wake-up, the wait for the queue
// to drain) is not the kernel's: in a run, kernels follow each other in the queue, and the
// costs between devices are fitted per edge (fit_run_costs.h). Timed by the host's clock,
// peleenet's many small kernels were predicted 25-35% slower than they ran.
absl::StatusOr<double> TimeGpuCase(executor::opencl::OpenClDevice* device, const CalibrationCase& c,
                                   const CalibrationOptions& options) {
  const Clock::time_point created = Clock::now();
  absl::StatusOr<std::unique_ptr<PreparedGpuCase>> prepared = PrepareGpuCase(device, c, options);
  if (!prepared.ok()) return prepared.status();
  spdlog::debug("calibration: gpu kernel for {} ready after {:.1f} ms", c.source,
                Micros(Clock::now() - created) / 1e3);
  // PoCL runs the kernels on threads of its own, whose caches this thread cannot evict.
  return MedianOfRuns(
      options.warmup_runs, options.runs, options.fastest_run, [&]() -> absl::StatusOr<double> {
        cl_event first = nullptr, last = nullptr;
        absl::Status s = (*prepared)->kernel->Enqueue(&last, &first);
        if (s.ok()) s = device->Finish();
        absl::StatusOr<double> us = s.ok() ? executor::opencl::EventSpanUs(first, last) : s;
        for (cl_event e : {first, last}) {
          if (e != nullptr) clReleaseEvent(e);
        }
        return us;
      });
}

// A device opened for timing: a worker pinned to its cores with its thread pool (CPU), or the
// OpenCL device (GPU). Used by one thread at a time.
struct OpenedDevice {
  const platform::DeviceSpec* spec = nullptr;
  int index = 0;    // in Calibrate's `devices`
  int threads = 1;  // XNNPACK threads (CPU); 1 on the GPU
  std::unique_ptr<executor::PinnedWorker> worker;
  std::unique_ptr<executor::cpu::CpuThreadpool> pool;
  std::unique_ptr<executor::opencl::OpenClDevice> gpu;
  // The cases measured alone, in order, with their median times.
  std::vector<std::pair<const CalibrationCase*, double>> measured;

  bool is_cpu() const { return worker != nullptr; }

  absl::StatusOr<double> Time(const CalibrationCase& c, const CalibrationOptions& options) const {
    if (!is_cpu()) return TimeGpuCase(gpu.get(), c, options);
    absl::StatusOr<double> us;
    const absl::Status s = worker->Call([&] {
      us = TimeCpuCase(c, options, pool->get());
      return absl::OkStatus();
    });
    if (!s.ok()) return s;
    return us;
  }

  // Runs `c` back to back until `stop` is set; `ready` receives the status of its setup.
  // Blocks the calling thread (the worker's, for a CPU device).
  void RunBusy(const CalibrationCase& c, const CalibrationOptions& options,
               const std::atomic<bool>& stop, std::promise<absl::Status>& ready) const {
    if (!is_cpu()) {
      absl::StatusOr<std::unique_ptr<PreparedGpuCase>> prepared =
          PrepareGpuCase(gpu.get(), c, options);
      ready.set_value(prepared.status());
      while (prepared.ok() && !stop.load(std::memory_order_relaxed)) {
        if (!(*prepared)->kernel->Enqueue().ok() || !gpu->Finish().ok()) break;
      }
      return;
    }
    bool signalled = false;
    const absl::Status called = worker->Call([&] {
      absl::StatusOr<std::unique_ptr<PreparedCpuCase>> prepared =
          PrepareCpuCase(c, options, pool->get());
      ready.set_value(prepared.status());
      signalled = true;
      while (prepared.ok() && !stop.load(std::memory_order_relaxed)) {
        if (!(*prepared)->kernel->Run().ok()) break;
      }
      return absl::OkStatus();
    });
    if (!signalled) {
      ready.set_value(called.ok() ? absl::InternalError("busy loop did not start") : called);
    }
  }

  // The busy loop this device runs while another one is timed: the convolution it measured
  // slowest (at most kMaxBusyCaseUs, so stopping is prompt), else its slowest measured case.
  const CalibrationCase* BusyCase() const {
    constexpr double kMaxBusyCaseUs = 20e3;
    const CalibrationCase* best = nullptr;
    double best_us = 0;
    bool best_conv = false;
    for (const auto& [c, us] : measured) {
      const bool conv = c->config.kind == model::OpKind::kConv2d;
      if (us > kMaxBusyCaseUs) continue;
      if (best == nullptr || (conv && !best_conv) || (conv == best_conv && us > best_us)) {
        best = c;
        best_us = us;
        best_conv = conv;
      }
    }
    return best;
  }
};

// Keeps the given devices busy (OpenedDevice::RunBusy, one thread each) until destroyed.
class BusyLoad {
 public:
  BusyLoad() = default;
  BusyLoad(const BusyLoad&) = delete;
  BusyLoad& operator=(const BusyLoad&) = delete;
  ~BusyLoad() {
    stop_.store(true);
    for (std::thread& t : threads_) t.join();
  }

  // Starts `device` on `c` and waits until its kernel is ready; the setup error otherwise.
  absl::Status Add(const OpenedDevice& device, const CalibrationCase& c,
                   const CalibrationOptions& options) {
    auto ready = std::make_shared<std::promise<absl::Status>>();
    std::future<absl::Status> started = ready->get_future();
    threads_.emplace_back(
        [this, &device, &c, options, ready] { device.RunBusy(c, options, stop_, *ready); });
    return started.get();
  }

 private:
  std::atomic<bool> stop_ = false;
  std::vector<std::thread> threads_;
};

// The prior prediction above which `c` is skipped. A priority model's case gets ten times the
// limit: its largest ops are the ones its plans rely on most, and without a sample of their own
// the model extrapolates them from smaller slices (hrnet's 3x3 stride-2 512>1024 conv on PoCL,
// 36 ms, was predicted 23 ms from its quarter slices and made hrnet on the GPU 1.16x its
// prediction). The limit stays for the other models, whose largest convs run for seconds there.
double MaxCaseMs(const CalibrationCase& c, const CalibrationOptions& options) {
  return c.priority ? kPriorityCaseLimitFactor * options.max_case_ms : options.max_case_ms;
}

// Times `cases` on `device` in order until `budget_s` is spent; appends the samples (with
// `co_running` set) and, for solo runs, records the measured cases on the device.
void RunDevice(OpenedDevice& device, const std::vector<const CalibrationCase*>& cases,
               double budget_s, bool co_running, const CalibrationOptions& options,
               DeviceOutcome& outcome, std::vector<CalibrationSample>& samples) {
  const std::string& name = device.spec->name;
  const Clock::time_point start = Clock::now();
  int& done = co_running ? outcome.co_run_cases : outcome.cases_done;
  auto notify = [&](const CalibrationSample* sample, bool finished) {
    if (!options.progress) return;
    options.progress(CalibrationProgress{name, done, outcome.cases_skipped,
                                         Seconds(Clock::now() - start), budget_s, sample, finished,
                                         co_running});
  };
  notify(nullptr, false);
  for (const CalibrationCase* c : cases) {
    if (Seconds(Clock::now() - start) >= budget_s) break;
    if (!co_running && options.prior != nullptr && options.max_case_ms > 0 &&
        device.index < options.prior->num_devices() &&
        options.prior->PredictUs(c->config, device.index) > 1e3 * MaxCaseMs(*c, options)) {
      ++outcome.cases_skipped;
      continue;
    }
    absl::StatusOr<double> us = device.Time(*c, options);
    if (!us.ok() || !(*us > 0)) {
      spdlog::debug("calibration: {} skips {}: {}", name, c->source,
                    us.ok() ? std::string("zero time") : std::string(us.status().message()));
      if (!co_running) ++outcome.cases_skipped;
      continue;
    }
    samples.push_back(CalibrationSample{name, c->config, *us, options.runs, c->source,
                                        device.threads, device.is_cpu() ? "xnnpack" : "opencl",
                                        co_running});
    if (!co_running) device.measured.emplace_back(c, *us);
    ++done;
    notify(&samples.back(), false);
  }
  outcome.elapsed_s += Seconds(Clock::now() - start);
  notify(nullptr, true);
}

// Opens `spec` for timing; the reason it cannot be used otherwise.
absl::StatusOr<OpenedDevice> Open(const platform::DeviceSpec& spec, int index,
                                  std::span<const CalibrationCase> cases,
                                  const CalibrationOptions& options) {
  OpenedDevice device;
  device.spec = &spec;
  device.index = index;
  if (spec.kind == platform::DeviceKind::kCpu) {
    // One XNNPACK thread per core of the device, each pinned to its core, as the runtime's
    // CpuDevice runs it: a cluster's samples are its own, per thread count.
    device.threads = static_cast<int>(spec.cpu_cores.size());
    absl::StatusOr<std::unique_ptr<executor::PinnedWorker>> worker =
        executor::PinnedWorker::Start(spec.cpu_cores);
    if (!worker.ok()) return worker.status();
    device.worker = std::move(*worker);
    absl::Status ready = device.worker->Call([&] {
      auto created = executor::cpu::CpuThreadpool::Create(device.threads, spec.cpu_cores);
      if (!created.ok()) return created.status();
      device.pool = std::move(*created);
      return absl::OkStatus();
    });
    if (!ready.ok()) return ready;
    return device;
  }
  absl::StatusOr<std::unique_ptr<executor::opencl::OpenClDevice>> gpu = OpenGpu(spec.opencl_device);
  if (!gpu.ok()) return gpu.status();
  device.gpu = std::move(*gpu);
  // Builds the device's program outside the budget: the first factory compiles it.
  if (!cases.empty()) {
    CalibrationOptions once = options;
    once.warmup_runs = 0;
    once.runs = 1;
    (void)TimeGpuCase(device.gpu.get(), cases.front(), once);
  }
  return device;
}

}  // namespace

std::string CalibrationGpuSelector(const std::string& selector_text) {
  if (!selector_text.empty()) return selector_text;
  const std::vector<executor::opencl::DeviceInfo> devices =
      executor::opencl::ListDevices().value_or(std::vector<executor::opencl::DeviceInfo>{});
  const bool has_gpu = std::any_of(devices.begin(), devices.end(),
                                   [](const executor::opencl::DeviceInfo& d) { return d.is_gpu; });
  return has_gpu || devices.empty() ? selector_text : "0";
}

bool SampleIsFastestRun(const CalibrationOptions& options, int threads) {
  return options.fastest_run || threads > 1;
}

absl::StatusOr<CalibrationRun> Calibrate(std::span<const platform::DeviceSpec> devices,
                                         std::span<const CalibrationCase> cases,
                                         const CalibrationOptions& options) {
  if (devices.empty()) return absl::InvalidArgumentError("Calibrate: no devices");
  if (!(options.budget_s > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("Calibrate: budget_s must be > 0, got ", options.budget_s));
  }
  if (options.runs < 1 || options.warmup_runs < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Calibrate: need runs >= 1 and warmup_runs >= 0, got ", options.runs, " and ",
                     options.warmup_runs));
  }
  std::set<std::string> names;
  for (const platform::DeviceSpec& d : devices) {
    if (!names.insert(d.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("Calibrate: device '", d.name, "' listed twice"));
    }
    if (d.kind == platform::DeviceKind::kCpu && d.cpu_cores.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("Calibrate: CPU device '", d.name, "' has no cores to pin to"));
    }
  }
  CalibrationRun run;
  run.samples.platform = options.platform;
  std::vector<OpenedDevice> opened;
  for (size_t i = 0; i < devices.size(); ++i) {
    DeviceOutcome outcome;
    outcome.device = devices[i].name;
    absl::StatusOr<OpenedDevice> device = Open(devices[i], static_cast<int>(i), cases, options);
    if (device.ok()) {
      opened.push_back(std::move(*device));
    } else {
      outcome.skipped = true;
      outcome.reason = std::string(device.status().message());
      spdlog::warn("calibration: skipping device '{}': {}", devices[i].name, outcome.reason);
    }
    run.devices.push_back(std::move(outcome));
  }
  // With another device to load, the end of each budget re-times cases under co-run load.
  const double co_run_share = opened.size() >= 2 ? std::clamp(options.co_run_share, 0.0, 0.9) : 0;
  std::vector<const CalibrationCase*> all;
  for (const CalibrationCase& c : cases) all.push_back(&c);
  for (OpenedDevice& device : opened) {
    RunDevice(device, all, options.budget_s * (1 - co_run_share), false, options,
              run.devices[static_cast<size_t>(device.index)], run.samples.samples);
  }
  if (co_run_share <= 0) return run;
  for (OpenedDevice& device : opened) {
    DeviceOutcome& outcome = run.devices[static_cast<size_t>(device.index)];
    BusyLoad load;
    absl::Status loaded = absl::OkStatus();
    for (const OpenedDevice& other : opened) {
      const CalibrationCase* busy = other.BusyCase();
      if (&other == &device || busy == nullptr) continue;
      loaded = load.Add(other, *busy, options);
      if (!loaded.ok()) break;
      spdlog::debug("calibration: {} busy with {} while {} is timed", other.spec->name,
                    busy->source, device.spec->name);
    }
    if (!loaded.ok()) {
      spdlog::warn("calibration: no co-run samples for '{}': the busy loop failed: {}",
                   device.spec->name, std::string(loaded.message()));
      continue;
    }
    std::vector<const CalibrationCase*> again;
    for (const auto& [c, us] : device.measured) again.push_back(c);
    RunDevice(device, again, options.budget_s * co_run_share, true, options, outcome,
              run.samples.samples);
  }
  return run;
}

}  // namespace psched::calibration
