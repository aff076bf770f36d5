#include "executor/calibration/calibrate.h"

#include <pthreadpool.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <set>
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
#include "spdlog/spdlog.h"

namespace psched::executor::calibration {
namespace {

using Clock = std::chrono::steady_clock;
using predictor::calibration::CalibrationSample;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
double Micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t mid = v.size() / 2;
  return v.size() % 2 == 1 ? v[mid] : 0.5 * (v[mid - 1] + v[mid]);
}

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

void EvictOnPoolThread(void* bytes, size_t) { EvictPrivateCaches(*static_cast<size_t*>(bytes)); }

// Evicts the private caches of the calling thread and, with a pool, of every pool thread.
void EvictThreadCaches(size_t bytes, pthreadpool_t pool) {
  if (pool == nullptr || bytes == 0) {
    EvictPrivateCaches(bytes);
    return;
  }
  pthreadpool_parallelize_1d(pool, EvictOnPoolThread, &bytes, pthreadpool_get_threads_count(pool),
                             0);
}

// Times `run` `runs` times after `warmup` untimed calls; the median in microseconds. With
// `evict_bytes` > 0 the private caches (of `pool`'s threads too) are evicted before every run
// (not timed).
template <typename Fn>
absl::StatusOr<double> TimeRuns(int warmup, int runs, size_t evict_bytes, pthreadpool_t pool,
                                Fn run) {
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < warmup; ++i) {
    if (absl::Status s = run(); !s.ok()) return s;
  }
  spdlog::debug("calibration: {} warm-up runs took {:.1f} ms", warmup,
                Micros(Clock::now() - start) / 1e3);
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) {
    EvictThreadCaches(evict_bytes, pool);
    const Clock::time_point run_start = Clock::now();
    if (absl::Status s = run(); !s.ok()) return s;
    times.push_back(Micros(Clock::now() - run_start));
  }
  return Median(std::move(times));
}

// Whether op 0 is a concat the executors run in place: every input was produced straight
// into its channel slice of the output (executor/common/arena_plan.h), so the case is timed
// that way too and measures what a scheduled concat really costs. Constant or repeated
// inputs cannot be placed so.
bool IsInPlaceConcat(const model::Graph& graph) {
  const model::Op& op = graph.op(0);
  if (op.kind != model::OpKind::kConcat) return false;
  std::set<model::TensorId> distinct;
  for (model::TensorId t : op.inputs) {
    if (graph.tensor(t).constant != model::kInvalidId || !distinct.insert(t).second) return false;
  }
  return true;
}

// Times one case on the calling thread and `pool` (null: the calling thread alone).
absl::StatusOr<double> TimeCpuCase(const CalibrationCase& c, const CalibrationOptions& options,
                                   pthreadpool_t pool) {
  const model::Graph graph = WithWeights(c, options.seed);
  const model::Shape& out_shape = graph.output_shape(0);
  std::vector<float> output(static_cast<size_t>(out_shape.Elements()), 0.0f);
  const std::vector<model::TensorId> activation_inputs = graph.ActivationInputs(0);
  cpu::KernelLayout layout;
  std::map<model::TensorId, std::vector<float>> buffers;
  std::vector<TensorView> inputs;
  if (IsInPlaceConcat(graph)) {
    output = RandomData(output.size(), options.seed);
    int64_t channel = 0;
    for (model::TensorId t : activation_inputs) {
      const model::Shape& shape = graph.tensor(t).shape;
      inputs.push_back(TensorView{output.data() + channel, shape, out_shape.c});
      layout.input_pixel_strides.push_back(out_shape.c);
      channel += shape.c;
    }
  } else {
    for (model::TensorId t : activation_inputs) {
      const model::Shape& shape = graph.tensor(t).shape;
      std::vector<float>& data = buffers[t];
      if (data.empty()) {
        data = RandomData(static_cast<size_t>(shape.Elements()),
                          options.seed + static_cast<uint64_t>(t));
      }
      inputs.push_back(TensorView{data.data(), shape, shape.c});
    }
  }
  absl::StatusOr<std::unique_ptr<cpu::CpuKernel>> kernel =
      cpu::CreateCpuKernel(graph, 0, WorkSlice{c.axis, c.begin, c.end}, layout, pool);
  if (!kernel.ok()) return kernel.status();
  if (absl::Status s = (*kernel)->Setup(inputs, {output.data(), out_shape, out_shape.c}); !s.ok()) {
    return s;
  }
  return TimeRuns(options.warmup_runs, options.runs, options.evict_bytes, pool,
                  [&] { return (*kernel)->Run(); });
}

// The OpenCL device for `selector_text`: a named selector as given; empty prefers a GPU-type
// device and falls back to the first device of any type (PoCL on development machines).
absl::StatusOr<std::unique_ptr<opencl::OpenClDevice>> OpenGpu(const std::string& selector_text) {
  absl::StatusOr<opencl::DeviceSelector> selector = opencl::DeviceSelector::Parse(selector_text);
  if (!selector.ok()) return selector.status();
  absl::StatusOr<std::unique_ptr<opencl::OpenClDevice>> device =
      opencl::OpenClDevice::Open(*selector);
  if (device.ok() || !selector->IsDefault() ||
      device.status().code() != absl::StatusCode::kNotFound) {
    return device;
  }
  opencl::DeviceSelector any;
  any.index = 0;
  return opencl::OpenClDevice::Open(any);
}

// Times one case through the OpenCL kernels: enqueue until the queue has drained.
absl::StatusOr<double> TimeGpuCase(opencl::OpenClDevice* device, const CalibrationCase& c,
                                   const CalibrationOptions& options) {
  const Clock::time_point created = Clock::now();
  const model::Graph graph = WithWeights(c, options.seed);
  std::vector<TensorPlacement> placements(graph.tensors.size());
  int64_t floats = 0;
  for (size_t t = 0; t < graph.tensors.size(); ++t) {
    if (graph.tensors[t].constant != model::kInvalidId) continue;
    placements[t].offset = floats;
    floats += graph.tensors[t].shape.Elements();
  }
  const bool in_place_concat = IsInPlaceConcat(graph);
  if (in_place_concat) {
    const auto out = static_cast<size_t>(graph.op(0).output);
    const int64_t out_channels = graph.tensors[out].shape.c;
    int64_t channel = 0;
    for (model::TensorId t : graph.op(0).inputs) {
      placements[static_cast<size_t>(t)] = {placements[out].offset + channel, out_channels};
      channel += graph.tensor(t).shape.c;
    }
  }
  absl::StatusOr<std::unique_ptr<opencl::SvmArena>> arena =
      opencl::SvmArena::Create(device, static_cast<size_t>(floats));
  if (!arena.ok()) return arena.status();
  // An in-place concat's inputs are slices of its output, whose content does not matter.
  for (const model::GraphIO& in : graph.inputs) {
    if (in_place_concat) break;
    const std::vector<float> data =
        RandomData(static_cast<size_t>(graph.tensor(in.tensor).shape.Elements()),
                   options.seed + static_cast<uint64_t>(in.tensor));
    if (absl::Status s = (*arena)->Write(
            static_cast<size_t>(placements[static_cast<size_t>(in.tensor)].offset), data);
        !s.ok()) {
      return s;
    }
  }
  absl::StatusOr<std::unique_ptr<opencl::KernelFactory>> factory =
      opencl::KernelFactory::Create(device, &graph, arena->get(), placements);
  if (!factory.ok()) return factory.status();
  absl::StatusOr<std::unique_ptr<opencl::OpKernel>> kernel =
      (*factory)->Create(0, WorkSlice{c.axis, c.begin, c.end});
  if (!kernel.ok()) return kernel.status();
  spdlog::debug("calibration: gpu kernel for {} ready after {:.1f} ms", c.source,
                Micros(Clock::now() - created) / 1e3);
  // PoCL runs the kernels on threads of its own, whose caches this thread cannot evict.
  return TimeRuns(options.warmup_runs, options.runs, 0, nullptr, [&]() -> absl::Status {
    if (absl::Status s = (*kernel)->Enqueue(); !s.ok()) return s;
    return device->Finish();
  });
}

// Runs the budgeted loop for one device; `time_case` measures one case.
template <typename TimeCase>
void RunDevice(const std::string& name, int device_index, int threads, const std::string& kernel,
               std::span<const CalibrationCase> cases, const CalibrationOptions& options,
               TimeCase time_case, DeviceOutcome& outcome,
               std::vector<CalibrationSample>& samples) {
  const Clock::time_point start = Clock::now();
  auto notify = [&](const CalibrationSample* sample, bool finished) {
    if (!options.progress) return;
    options.progress(CalibrationProgress{name, outcome.cases_done, outcome.cases_skipped,
                                         Seconds(Clock::now() - start), options.budget_s, sample,
                                         finished});
  };
  notify(nullptr, false);
  for (const CalibrationCase& c : cases) {
    if (Seconds(Clock::now() - start) >= options.budget_s) break;
    if (options.prior != nullptr && options.max_case_ms > 0 &&
        device_index < options.prior->num_devices() &&
        options.prior->PredictUs(c.config, device_index) > 1e3 * options.max_case_ms) {
      ++outcome.cases_skipped;
      continue;
    }
    absl::StatusOr<double> us = time_case(c);
    if (!us.ok() || !(*us > 0)) {
      spdlog::debug("calibration: {} skips {}: {}", name, c.source,
                    us.ok() ? std::string("zero time") : std::string(us.status().message()));
      ++outcome.cases_skipped;
      continue;
    }
    samples.push_back(
        CalibrationSample{name, c.config, *us, options.runs, c.source, threads, kernel});
    ++outcome.cases_done;
    notify(&samples.back(), false);
  }
  outcome.elapsed_s = Seconds(Clock::now() - start);
  notify(nullptr, true);
}

}  // namespace

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
  for (size_t i = 0; i < devices.size(); ++i) {
    const platform::DeviceSpec& spec = devices[i];
    DeviceOutcome outcome;
    outcome.device = spec.name;
    if (spec.kind == platform::DeviceKind::kCpu) {
      // One XNNPACK thread per core of the device, each pinned to its core, as the runtime's
      // CpuDevice runs it: a cluster's samples are its own, per thread count.
      const int threads = static_cast<int>(spec.cpu_cores.size());
      absl::StatusOr<std::unique_ptr<PinnedWorker>> worker = PinnedWorker::Start(spec.cpu_cores);
      std::unique_ptr<cpu::CpuThreadpool> pool;
      absl::Status ready = worker.status();
      if (ready.ok()) {
        ready = (*worker)->Call([&] {
          auto created = cpu::CpuThreadpool::Create(threads, spec.cpu_cores);
          if (!created.ok()) return created.status();
          pool = std::move(*created);
          return absl::OkStatus();
        });
      }
      if (!ready.ok()) {
        outcome.skipped = true;
        outcome.reason = std::string(ready.message());
      } else {
        RunDevice(
            spec.name, static_cast<int>(i), threads, "xnnpack", cases, options,
            [&](const CalibrationCase& c) -> absl::StatusOr<double> {
              absl::StatusOr<double> us;
              const absl::Status s = (*worker)->Call([&] {
                us = TimeCpuCase(c, options, pool->get());
                return absl::OkStatus();
              });
              if (!s.ok()) return s;
              return us;
            },
            outcome, run.samples.samples);
      }
    } else {
      absl::StatusOr<std::unique_ptr<opencl::OpenClDevice>> device = OpenGpu(spec.opencl_device);
      if (!device.ok()) {
        outcome.skipped = true;
        outcome.reason = std::string(device.status().message());
      } else {
        // Builds the device's program outside the budget: the first factory compiles it.
        if (!cases.empty()) {
          const CalibrationCase& first = cases.front();
          CalibrationOptions once = options;
          once.warmup_runs = 0;
          once.runs = 1;
          (void)TimeGpuCase(device->get(), first, once);
        }
        RunDevice(
            spec.name, static_cast<int>(i), 1, "opencl", cases, options,
            [&](const CalibrationCase& c) { return TimeGpuCase(device->get(), c, options); },
            outcome, run.samples.samples);
      }
    }
    if (outcome.skipped) {
      spdlog::warn("calibration: skipping device '{}': {}", spec.name, outcome.reason);
    }
    run.devices.push_back(std::move(outcome));
  }
  return run;
}

}  // namespace psched::executor::calibration
