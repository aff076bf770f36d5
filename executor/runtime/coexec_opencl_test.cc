// Co-execution on real devices: CPU workers and the OpenCL device (PoCL here) running any valid
// plan over one fine-grained SVM arena must reproduce single-device outputs. Plans come from
// seeded random splits and from every registered scheduler on the host profile.
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "executor/cpu/cpu_graph_executor.h"
#include "executor/layout.h"
#include "executor/npy.h"
#include "executor/reference/reference_kernels.h"
#include "executor/runtime/coexecution_runtime.h"
#include "executor/runtime/cpu_device.h"
#include "executor/runtime/opencl_runtime_device.h"
#include "executor/runtime/plan_from_schedule.h"
#include "executor/runtime/trace.h"
#include "executor/testing/graph_builder.h"
#include "executor/testing/oversubscription.h"
#include "executor/testing/tensor_compare.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/onnx_import.h"
#include "predictor/profiles.h"
#include "scheduler/device_capability.h"
#include "scheduler/problem.h"
#include "scheduler/registry/registry.h"
#include "source_dir.h"

namespace psched::executor::runtime {
namespace {

using model::ActivationKind;
using model::OpKind;
using model::SplitAxis;
using testing::GraphBuilder;
using ::testing::HasSubstr;
using testing::RandomConv;
using testing::RandomVector;
using testing::RelativeL2;

// PoCL stays on one thread, like a GPU queue beside the CPU workers; set before OpenCL loads.
const bool kPoclOneThread = setenv("POCL_MAX_PTHREAD_COUNT", "1", /*overwrite=*/0) == 0;

std::string SharedDir() {
  const char* dir = std::getenv("PSCHED_SHARED_DIR");
  return std::string(dir != nullptr ? dir : PSCHED_SOURCE_DIR "/../shared");
}

// Branches into an in-place concat, grouped and depthwise convs, pooling, a constant add, and
// a classifier with a fused activation (which a cin split must apply after all partial sums).
model::Graph TestGraph() {
  GraphBuilder b("coexec_opencl");
  auto x = b.AddInput({12, 12, 8});
  const model::Activation relu{.kind = ActivationKind::kRelu};
  auto t1 =
      b.AddOp(OpKind::kConv2d, {x}, {12, 12, 16}, RandomConv(b, 8, 16, 3, 1, 1, 1, 1, 1), relu);
  auto t2 = b.AddOp(OpKind::kConv2d, {x}, {12, 12, 8}, RandomConv(b, 8, 8, 1, 1, 1, 0, 2, 2));
  auto t3 = b.AddOp(OpKind::kConv2d, {t1}, {12, 12, 16}, RandomConv(b, 16, 16, 3, 1, 1, 1, 1, 3),
                    {.kind = ActivationKind::kSigmoid});
  auto cat = b.AddOp(OpKind::kConcat, {t2, t3, t1}, {12, 12, 40});
  model::PoolAttrs pool;
  pool.window = {.kernel_h = 2, .kernel_w = 2, .stride_h = 2, .stride_w = 2};
  auto p = b.AddOp(OpKind::kMaxPool, {cat}, {6, 6, 40}, pool);
  auto t4 = b.AddOp(OpKind::kConv2d, {p}, {6, 6, 40}, RandomConv(b, 40, 40, 3, 1, 1, 1, 40, 4),
                    {.kind = ActivationKind::kClip, .min = -0.5f, .max = 0.5f});
  auto t5 =
      b.AddOp(OpKind::kConv2d, {t4}, {3, 3, 24}, RandomConv(b, 40, 24, 3, 2, 1, 1, 1, 5), relu);
  auto c = b.AddConstantTensor({1, 1, 24}, RandomVector(24, 6));
  auto sum = b.AddOp(OpKind::kAdd, {t5, c}, {3, 3, 24});
  auto g = b.AddOp(OpKind::kGlobalAvgPool, {sum}, {1, 1, 24});
  auto f = b.AddOp(OpKind::kFlatten, {g}, {1, 1, 24});
  model::FullyConnectedAttrs fc;
  fc.weight = b.AddConstant({10, 24}, RandomVector(240, 7));
  fc.bias = b.AddConstant({10}, RandomVector(10, 8));
  b.MarkOutput(
      b.AddOp(OpKind::kFullyConnected, {f}, {1, 1, 10}, fc, {.kind = ActivationKind::kHardSwish}));
  return b.Build();
}

// Splits every partitionable op along a random axis into up to `max_pieces` random pieces on
// random devices; queues follow op order, so the plan is always valid.
ExecutionPlan RandomPlan(const model::Graph& graph, int num_devices, int max_pieces,
                         uint32_t seed) {
  std::mt19937 rng(seed);
  ExecutionPlan plan;
  plan.device_steps.resize(static_cast<size_t>(num_devices));
  for (model::OpId id = 0; id < static_cast<model::OpId>(graph.ops.size()); ++id) {
    std::vector<SplitAxis> axes{SplitAxis::kNone};
    for (SplitAxis a : {SplitAxis::kOutputChannels, SplitAxis::kInputChannels, SplitAxis::kRows}) {
      if (model::WorkSize(graph, id, a) > 0) axes.push_back(a);
    }
    const SplitAxis axis = axes[rng() % axes.size()];
    const int64_t work = model::WorkSize(graph, id, axis);
    const int64_t pieces = std::min<int64_t>(work, 1 + rng() % static_cast<uint32_t>(max_pieces));
    std::vector<int64_t> cuts{0, work};
    while (static_cast<int64_t>(cuts.size()) < pieces + 1) {
      const int64_t cut = 1 + static_cast<int64_t>(rng() % static_cast<uint32_t>(work - 1));
      if (std::find(cuts.begin(), cuts.end(), cut) == cuts.end()) cuts.push_back(cut);
    }
    std::sort(cuts.begin(), cuts.end());
    // Distinct devices per op, as the scheduler's plans have.
    std::vector<int> order(static_cast<size_t>(num_devices));
    for (int d = 0; d < num_devices; ++d) order[static_cast<size_t>(d)] = d;
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t k = 0; k + 1 < cuts.size(); ++k) {
      plan.device_steps[static_cast<size_t>(order[k % order.size()])].push_back(
          {id, {axis, cuts[k], cuts[k + 1]}});
    }
  }
  return plan;
}

// Devices shared by every test: opening PoCL and building its program costs seconds.
struct Devices {
  std::unique_ptr<CpuDevice> cpu0, cpu1;
  std::unique_ptr<OpenClRuntimeDevice> gpu;
  std::string skip_reason;
};

Devices& SharedDevices() {
  static Devices* devices = [] {
    EXPECT_TRUE(kPoclOneThread);
    auto* d = new Devices();
    // Wait kernels have no time budget: a wait the runtime failed to meet is released once
    // every host queue has ended and fails the run, however busy the machine is.
    auto gpu = OpenClRuntimeDevice::Create("gpu", {.selector = "pthread", .core = 1});
    if (!gpu.ok()) {
      d->skip_reason = std::string(gpu.status().message());
      return d;
    }
    d->gpu = std::move(*gpu);
    d->cpu0 = std::move(*CpuDevice::Create("cpu.0", {0}));
    d->cpu1 = std::move(*CpuDevice::Create("cpu.1", {1}));
    return d;
  }();
  return *devices;
}

class CoExecOpenClTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Devices& d = SharedDevices();
    if (d.gpu == nullptr) GTEST_SKIP() << "no usable OpenCL device: " << d.skip_reason;
    two_ = {d.cpu0.get(), d.gpu.get()};
    three_ = {d.cpu0.get(), d.cpu1.get(), d.gpu.get()};
  }
  RuntimeOptions Options() const {
    return {.allocate_arena = SharedDevices().gpu->ArenaAllocator(),
            .allocate_counters = SharedDevices().gpu->CounterAllocator()};
  }
  // Host profile with the device's measured dispatch overhead, `cpus` CPU devices + gpu.
  predictor::Profile Profile(int cpus) const {
    return predictor::HostProfile(cpus, "pthread",
                                  {.gpu_dispatch_us = SharedDevices().gpu->dispatch_overhead_us()});
  }

  std::vector<Device*> two_, three_;
};

TEST_F(CoExecOpenClTest, DeviceReportsItsCapabilitiesAndOverhead) {
  const OpenClRuntimeDevice& gpu = *SharedDevices().gpu;
  EXPECT_EQ(gpu.name(), "gpu");
  EXPECT_TRUE(gpu.info().svm_fine_grain);
  // PoCL has SVM atomics, so waits and signals run as kernels in its queue.
  EXPECT_TRUE(gpu.info().svm_atomics);
  EXPECT_TRUE(gpu.in_queue_sync());
  ASSERT_TRUE(gpu.dispatch_overhead_us().has_value());
  EXPECT_GT(*gpu.dispatch_overhead_us(), 0.0);
  EXPECT_LT(*gpu.dispatch_overhead_us(), 1e5);
}

TEST_F(CoExecOpenClTest, RandomPlansMatchTheReference) {
  const model::Graph graph = TestGraph();
  const std::vector<std::vector<float>> input{RandomVector(12 * 12 * 8, 42)};
  auto expected = reference::RunGraph(graph, input);
  ASSERT_TRUE(expected.ok()) << expected.status();
  int cin_across_devices = 0;
  for (const auto* devices : {&two_, &three_}) {
    const int n = static_cast<int>(devices->size());
    for (uint32_t seed = 0; seed < 6; ++seed) {
      const ExecutionPlan plan = RandomPlan(graph, n, n, seed);
      auto rt = CoExecutionRuntime::Create(graph, *devices, plan, Options());
      ASSERT_TRUE(rt.ok()) << rt.status();
      for (int run = 0; run < 2; ++run) {
        auto out = (*rt)->Run(input);
        ASSERT_TRUE(out.ok()) << out.status();
        EXPECT_LE(RelativeL2((*out)[0], (*expected)[0]), 1e-4)
            << n << " devices, plan seed " << seed << ", run " << run;
      }
      std::map<model::OpId, std::set<int>> cin_devices;
      for (const SubtaskTiming& t : (*rt)->last_timings()) {
        if (t.step.slice.axis == SplitAxis::kInputChannels) cin_devices[t.step.op].insert(t.device);
        // The GPU reports each kernel's profiled time; CPU devices report none.
        EXPECT_EQ(t.device_us >= 0, t.device == n - 1) << "device " << t.device;
      }
      for (const auto& [op, devs] : cin_devices)
        cin_across_devices += devs.count(n - 1) > 0 && devs.size() > 1;
    }
  }
  // The seeds exercise GPU and CPU partial sums combined into one output.
  EXPECT_GE(cin_across_devices, 3);
}

// Both ways of synchronising the GPU - sync kernels in its queue (counters from the device) and
// host-side waits (counters in host memory) - give the reference output and keep the full
// barrier: no subtask starts before its predecessors' subtasks on any device have ended.
TEST_F(CoExecOpenClTest, InQueueAndHostSideSyncKeepDependencies) {
  const model::Graph graph = TestGraph();
  const std::vector<std::vector<float>> input{RandomVector(12 * 12 * 8, 7)};
  auto expected = reference::RunGraph(graph, input);
  ASSERT_TRUE(expected.ok()) << expected.status();
  // Counters in host memory: the GPU cannot reach them, so its dispatcher waits on the host.
  const RuntimeOptions host_side{.allocate_arena = SharedDevices().gpu->ArenaAllocator(),
                                 .allocate_counters = {}};
  int gpu_waits_on_cpu = 0;
  for (const RuntimeOptions& options : {Options(), host_side}) {
    SCOPED_TRACE(options.allocate_counters ? "in-queue sync" : "host-side sync");
    for (uint32_t seed = 10; seed < 16; ++seed) {
      const ExecutionPlan plan = RandomPlan(graph, 2, 2, seed);
      auto rt = CoExecutionRuntime::Create(graph, two_, plan, options);
      ASSERT_TRUE(rt.ok()) << rt.status();
      auto out = (*rt)->Run(input);
      ASSERT_TRUE(out.ok()) << out.status();
      EXPECT_LE(RelativeL2((*out)[0], (*expected)[0]), 1e-4) << "seed " << seed;
      const std::vector<SubtaskTiming>& timings = (*rt)->last_timings();
      int64_t gpu_end = 0;
      for (const SubtaskTiming& t : timings) {
        EXPECT_LE(t.start_ns, t.end_ns);
        if (t.device == 1) {
          // GPU timings come from its clock mapped onto the host's: in queue order.
          EXPECT_GE(t.start_ns, gpu_end) << "seed " << seed;
          gpu_end = t.end_ns;
        }
        for (model::OpId pred : graph.Predecessors(t.step.op)) {
          for (const SubtaskTiming& p : timings) {
            if (p.step.op != pred) continue;
            // 20 us: the error of mapping the device clock (one enqueue call).
            EXPECT_LE(p.end_ns, t.start_ns + 20'000) << "seed " << seed << " op " << t.step.op;
            gpu_waits_on_cpu += t.device == 1 && p.device == 0;
          }
        }
      }
    }
  }
  EXPECT_GT(gpu_waits_on_cpu, 10);
}

// Without fine-grained SVM the arena is coarse-grained SVM or a mapped buffer: still shared in
// place, but a GPU subtask has it to itself (unmapped) while it runs, so no CPU subtask may
// overlap it - and any plan still gives the reference output.
TEST_F(CoExecOpenClTest, CoarseSvmAndBufferArenasTakeTurns) {
  const model::Graph graph = TestGraph();
  const std::vector<std::vector<float>> input{RandomVector(12 * 12 * 8, 11)};
  auto expected = reference::RunGraph(graph, input);
  ASSERT_TRUE(expected.ok()) << expected.status();
  for (opencl::MemoryMode mode :
       {opencl::MemoryMode::kCoarseGrainSvm, opencl::MemoryMode::kBuffer}) {
    SCOPED_TRACE(std::string(opencl::MemoryModeName(mode)));
    auto gpu = OpenClRuntimeDevice::Create(
        "gpu", {.selector = "pthread", .core = 1, .overhead_iterations = 0, .arena_mode = mode});
    ASSERT_TRUE(gpu.ok()) << gpu.status();
    EXPECT_EQ((*gpu)->arena_mode(), mode);
    const std::vector<Device*> devices{SharedDevices().cpu0.get(), gpu->get()};
    const RuntimeOptions options{.allocate_arena = (*gpu)->ArenaAllocator(),
                                 .allocate_counters = (*gpu)->CounterAllocator()};
    int gpu_subtasks = 0;
    for (uint32_t seed = 20; seed < 24; ++seed) {
      auto rt = CoExecutionRuntime::Create(graph, devices, RandomPlan(graph, 2, 2, seed), options);
      ASSERT_TRUE(rt.ok()) << rt.status();
      for (int run = 0; run < 2; ++run) {
        auto out = (*rt)->Run(input);
        ASSERT_TRUE(out.ok()) << out.status();
        EXPECT_LE(RelativeL2((*out)[0], (*expected)[0]), 1e-4) << "seed " << seed;
      }
      const std::vector<SubtaskTiming>& timings = (*rt)->last_timings();
      for (const SubtaskTiming& g : timings) {
        if (g.device != 1) continue;
        ++gpu_subtasks;
        for (const SubtaskTiming& c : timings) {
          if (c.device != 0) continue;
          // Disjoint up to the 20 us error of mapping the GPU clock onto the host's.
          EXPECT_TRUE(c.end_ns <= g.start_ns + 20'000 || g.end_ns <= c.start_ns + 20'000)
              << "seed " << seed << ": cpu op " << c.step.op << " [" << c.start_ns << ", "
              << c.end_ns << "] overlaps gpu op " << g.step.op << " [" << g.start_ns << ", "
              << g.end_ns << "]";
        }
      }
    }
    EXPECT_GT(gpu_subtasks, 10);
  }
}

// A CPU device whose subtasks of one op fail while `fail` is set.
class FailingCpuDevice final : public Device {
 public:
  FailingCpuDevice(CpuDevice* inner, model::OpId op) : inner_(inner), op_(op) {}
  const std::string& name() const override { return inner_->name(); }
  absl::StatusOr<std::unique_ptr<Subtask>> Compile(const model::Graph& graph, model::OpId id,
                                                   WorkSlice slice,
                                                   std::span<const TensorView> inputs,
                                                   const TensorView& output) override {
    auto subtask = inner_->Compile(graph, id, slice, inputs, output);
    if (!subtask.ok() || id != op_) return subtask;
    return std::unique_ptr<Subtask>(new Failing(std::move(*subtask), &fail));
  }
  void Post(std::function<void()> job) override { inner_->Post(std::move(job)); }
  std::atomic<bool> fail{true};

 private:
  struct Failing final : Subtask {
    Failing(std::unique_ptr<Subtask> wrapped, std::atomic<bool>* flag)
        : inner(std::move(wrapped)), fail(flag) {}
    absl::Status Run() override {
      if (!fail->load()) return inner->Run();
      // Give the GPU dispatcher time to enqueue its whole queue, waits included (it needs well
      // under a millisecond), so the failure meets wait kernels already in the GPU queue.
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      return absl::InternalError("injected failure");
    }
    std::unique_ptr<Subtask> inner;
    std::atomic<bool>* fail;
  };
  CpuDevice* inner_;
  model::OpId op_;
};

// The GPU queue holds wait kernels for CPU work that never comes: the failure must release
// them (none may end as a lost signal, which would be a second error) and the runtime must
// work again once the device does.
TEST_F(CoExecOpenClTest, CpuFailureReleasesWaitsInTheGpuQueue) {
  const model::Graph graph = TestGraph();
  ExecutionPlan plan;
  plan.device_steps.resize(2);
  for (model::OpId id = 0; id < static_cast<model::OpId>(graph.ops.size()); ++id) {
    // Alternate devices, so every GPU op waits on a CPU op.
    plan.device_steps[static_cast<size_t>(id % 2)].push_back({id});
  }
  FailingCpuDevice cpu(SharedDevices().cpu0.get(), /*op=*/0);
  std::vector<Device*> devices{&cpu, SharedDevices().gpu.get()};
  auto rt = CoExecutionRuntime::Create(graph, devices, plan, Options());
  ASSERT_TRUE(rt.ok()) << rt.status();
  const std::vector<std::vector<float>> input{RandomVector(12 * 12 * 8, 9)};
  auto failed = (*rt)->Run(input);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(failed.status().message(), HasSubstr("cpu.0: injected failure"));
  // Nothing else went wrong: in particular no wait kernel was released short of its target.
  EXPECT_THAT(failed.status().message(), ::testing::Not(HasSubstr("then")));

  cpu.fail = false;
  auto out = (*rt)->Run(input);
  ASSERT_TRUE(out.ok()) << out.status();
  auto expected = reference::RunGraph(graph, input);
  ASSERT_TRUE(expected.ok()) << expected.status();
  EXPECT_LE(RelativeL2((*out)[0], (*expected)[0]), 1e-4);
}

// A runtime whose plan leaves the GPU idle still lives in the GPU's arena and counters; another
// runtime binding the device afterwards must not free them under it.
TEST_F(CoExecOpenClTest, RuntimeKeepsItsArenaWhenTheGpuRunsNothing) {
  const model::Graph graph = TestGraph();
  const std::vector<std::vector<float>> input{RandomVector(12 * 12 * 8, 13)};
  auto expected = reference::RunGraph(graph, input);
  ASSERT_TRUE(expected.ok()) << expected.status();
  auto cpu_only = CoExecutionRuntime::Create(graph, two_, SingleDevicePlan(graph, 2), Options());
  ASSERT_TRUE(cpu_only.ok()) << cpu_only.status();
  for (uint32_t seed = 30; seed < 33; ++seed) {
    auto other = CoExecutionRuntime::Create(graph, two_, RandomPlan(graph, 2, 2, seed), Options());
    ASSERT_TRUE(other.ok()) << other.status();
    ASSERT_TRUE((*other)->Run(input).ok());
  }
  // Fill what a freed arena would be reused for, then run the first runtime again.
  std::vector<std::vector<float>> junk(8, std::vector<float>(1 << 16, -7.0f));
  auto out = (*cpu_only)->Run(input);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_LE(RelativeL2((*out)[0], (*expected)[0]), 1e-4);
}

TEST_F(CoExecOpenClTest, ArenaMustComeFromTheDevice) {
  const model::Graph graph = TestGraph();
  auto rt = CoExecutionRuntime::Create(graph, two_, SingleDevicePlan(graph, 2));
  ASSERT_FALSE(rt.ok());
  EXPECT_EQ(rt.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(rt.status().message(), HasSubstr("ArenaAllocator"));
}

TEST(CoExecOpenClDeviceTest, UnknownDeviceIsAClearError) {
  auto gpu = OpenClRuntimeDevice::Create("gpu", {.selector = "no-such-device-xyz"});
  ASSERT_FALSE(gpu.ok());
  EXPECT_THAT(gpu.status().message(), HasSubstr("gpu"));
  auto bad = OpenClRuntimeDevice::Create("gpu", {.selector = "a:b:c:d"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CoExecPlatformTest, TwoGpusAndEmptyPlatformsAreRejected) {
  platform::Platform two_gpus;
  two_gpus.name = "two";
  for (const char* name : {"gpu.0", "gpu.1"}) {
    platform::DeviceSpec gpu;
    gpu.name = name;
    gpu.kind = platform::DeviceKind::kGpu;
    two_gpus.devices.push_back(gpu);
  }
  auto devices = PlatformDevices::Create(two_gpus);
  ASSERT_FALSE(devices.ok());
  EXPECT_EQ(devices.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(devices.status().message(), HasSubstr("2 GPUs"));
  platform::Platform none;
  none.name = "none";
  auto empty = PlatformDevices::Create(none);
  ASSERT_FALSE(empty.ok());
  EXPECT_THAT(empty.status().message(), HasSubstr("no devices"));
}

TEST_F(CoExecOpenClTest, ScheduleForAnotherGraphIsRejected) {
  const model::Graph graph = TestGraph();
  const predictor::Profile profile = Profile(1);
  auto problem = scheduler::Problem::FromGraph(graph, profile.platform, *profile.model);
  ASSERT_TRUE(problem.ok()) << problem.status();
  auto schedule = (*scheduler::MakeScheduler("heft"))->Plan(*problem, {});
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  GraphBuilder b("tiny");
  auto x = b.AddInput({2, 2, 3});
  b.MarkOutput(b.AddOp(OpKind::kActivation, {x}, {2, 2, 3}, model::OpAttrs{},
                       {.kind = ActivationKind::kRelu}));
  auto plan = PlanFromSchedule(b.Build(), *schedule);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(plan.status().message(), HasSubstr("tiny"));
}

// Every registered method's scheduler names, arguments filled in for `platform`.
std::vector<std::string> Methods(const platform::Platform& platform) {
  std::vector<std::string> methods;
  for (const std::string& name : scheduler::RegisteredSchedulers()) {
    if (name == "single:<device>") {
      for (const auto& d : platform.devices) methods.push_back("single:" + d.name);
    } else if (const size_t p = name.find("[:<list>]"); p != std::string::npos) {
      methods.push_back(name.substr(0, p));
      methods.push_back(name.substr(0, p) + ":peft");
    } else if (const size_t q = name.find(":<list>"); q != std::string::npos) {
      methods.push_back(name.substr(0, q) + ":heft");
    } else {
      methods.push_back(name);
    }
  }
  return methods;
}

// Plans `graph` with `method` on `profile`, runs it on `devices`, and returns the output.
std::vector<float> PlanAndRun(const model::Graph& graph, const predictor::Profile& profile,
                              const std::string& method, const std::vector<Device*>& devices,
                              const RuntimeOptions& options, const std::vector<float>& input) {
  auto problem = scheduler::Problem::FromGraph(graph, profile.platform, *profile.model);
  EXPECT_TRUE(problem.ok()) << problem.status();
  auto scheduler = scheduler::MakeScheduler(method);
  EXPECT_TRUE(scheduler.ok()) << scheduler.status();
  if (!problem.ok() || !scheduler.ok()) return {};
  scheduler::SchedulerOptions sched_options;
  sched_options.seed = 7;
  sched_options.timeout = absl::Milliseconds(250);
  auto schedule = (*scheduler)->Plan(*problem, sched_options);
  EXPECT_TRUE(schedule.ok()) << method << ": " << schedule.status();
  if (!schedule.ok()) return {};
  auto plan = PlanFromSchedule(graph, *schedule);
  EXPECT_TRUE(plan.ok()) << method << ": " << plan.status();
  if (!plan.ok()) return {};
  auto rt = CoExecutionRuntime::Create(graph, devices, *plan, options);
  EXPECT_TRUE(rt.ok()) << method << ": " << rt.status();
  if (!rt.ok()) return {};
  auto out = (*rt)->Run({input});
  EXPECT_TRUE(out.ok()) << method << ": " << out.status();
  return out.ok() ? (*out)[0] : std::vector<float>{};
}

struct Reference {
  model::Graph graph;
  std::vector<float> input_nhwc;
  std::vector<float> expected_nchw;
};

Reference LoadReference(const std::string& stem) {
  const std::string path = SharedDir() + "/models/reference/" + stem;
  auto graph = model::ImportOnnxFile(path + ".onnx", {});
  EXPECT_TRUE(graph.ok()) << graph.status();
  auto input = ReadNpy(path + ".input.npy");
  auto expected = ReadNpy(path + ".output.npy");
  EXPECT_TRUE(input.ok() && expected.ok());
  const model::Shape in_shape = graph->tensor(graph->inputs[0].tensor).shape;
  return {std::move(*graph), NchwToNhwc(in_shape, input->data), expected->data};
}

TEST_F(CoExecOpenClTest, EveryMethodOnSqueezenetMatchesPyTorch) {
  const Reference ref = LoadReference("squeezenet_v1_1");
  const model::Shape out_shape = ref.graph.tensor(ref.graph.outputs[0].tensor).shape;
  for (const auto* devices : {&two_, &three_}) {
    const predictor::Profile profile = Profile(static_cast<int>(devices->size()) - 1);
    for (const std::string& method : Methods(profile.platform)) {
      const std::vector<float> out =
          PlanAndRun(ref.graph, profile, method, *devices, Options(), ref.input_nhwc);
      ASSERT_EQ(out.size(), ref.expected_nchw.size()) << method;
      EXPECT_LE(RelativeL2(NhwcToNchw(out_shape, out), ref.expected_nchw), 1e-4)
          << method << " on " << devices->size() << " devices";
    }
  }
}

TEST_F(CoExecOpenClTest, PeleenetPlansMatchPyTorch) {
  const Reference ref = LoadReference("peleenet");
  const model::Shape out_shape = ref.graph.tensor(ref.graph.outputs[0].tensor).shape;
  for (const auto* devices : {&two_, &three_}) {
    const predictor::Profile profile = Profile(static_cast<int>(devices->size()) - 1);
    for (const std::string method : {"iterative"}) {
      const std::vector<float> out =
          PlanAndRun(ref.graph, profile, method, *devices, Options(), ref.input_nhwc);
      ASSERT_EQ(out.size(), ref.expected_nchw.size()) << method;
      EXPECT_LE(RelativeL2(NhwcToNchw(out_shape, out), ref.expected_nchw), 1e-4)
          << method << " on " << devices->size() << " devices";
    }
    const int n = static_cast<int>(devices->size());
    auto rt =
        CoExecutionRuntime::Create(ref.graph, *devices, RandomPlan(ref.graph, n, n, 3), Options());
    ASSERT_TRUE(rt.ok()) << rt.status();
    auto out = (*rt)->Run({ref.input_nhwc});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_LE(RelativeL2(NhwcToNchw(out_shape, (*out)[0]), ref.expected_nchw), 1e-4)
        << "random plan on " << n << " devices";
  }
}

// The failure this guards against: on a machine loaded by other processes, CPU work that a
// GPU wait kernel waits for took longer than the wait's spin budget, and correct runs failed.
// Waits now have no time budget and host waiters park; with busy threads outnumbering the
// device threads on both cores, the plans that failed that way still run to PyTorch's output.
TEST_F(CoExecOpenClTest, PlansStayCorrectUnderOversubscription) {
  const Reference ref = LoadReference("peleenet");
  const model::Shape out_shape = ref.graph.tensor(ref.graph.outputs[0].tensor).shape;
  const model::Graph graph = TestGraph();
  const std::vector<std::vector<float>> input{RandomVector(12 * 12 * 8, 9)};
  auto expected = reference::RunGraph(graph, input);
  ASSERT_TRUE(expected.ok()) << expected.status();
  const predictor::Profile profile = Profile(2);
  testing::Oversubscription busy({0, 1}, 2, 2);
  const std::vector<float> out =
      PlanAndRun(ref.graph, profile, "iterative", three_, Options(), ref.input_nhwc);
  EXPECT_LE(RelativeL2(NhwcToNchw(out_shape, out), ref.expected_nchw), 1e-4);
  for (uint32_t seed = 20; seed < 26; ++seed) {
    auto rt = CoExecutionRuntime::Create(graph, three_, RandomPlan(graph, 3, 3, seed), Options());
    ASSERT_TRUE(rt.ok()) << rt.status();
    for (int run = 0; run < 2; ++run) {
      auto got = (*rt)->Run(input);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_LE(RelativeL2((*got)[0], (*expected)[0]), 1e-4) << "plan seed " << seed;
    }
  }
}

// Graph-only paper models with synthetic weights, against XNNPACK on one core.
class PaperModelTest : public CoExecOpenClTest,
                       public ::testing::WithParamInterface<const char*> {};

TEST_P(PaperModelTest, PlansMatchTheSingleDeviceOutput) {
  model::ImportOptions import;
  import.synthesize_weights = true;
  import.seed = 1;
  auto graph =
      model::ImportOnnxFile(SharedDir() + "/models/graph-only/" + GetParam() + ".onnx", import);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const model::Shape in_shape = graph->tensor(graph->inputs[0].tensor).shape;
  const std::vector<float> input =
      RandomVector(static_cast<size_t>(in_shape.Elements()), 11, 0.0f, 1.0f);
  auto single = cpu::CpuGraphExecutor::Create(*graph, {.cores = {0}, .threads = 1});
  ASSERT_TRUE(single.ok()) << single.status();
  auto expected = (*single)->Run({input});
  ASSERT_TRUE(expected.ok()) << expected.status();
  for (const auto* devices : {&two_, &three_}) {
    const predictor::Profile profile = Profile(static_cast<int>(devices->size()) - 1);
    for (const std::string method : {"heft", "pa-heft", "iterative"}) {
      const std::vector<float> out =
          PlanAndRun(*graph, profile, method, *devices, Options(), input);
      ASSERT_EQ(out.size(), (*expected)[0].size()) << method;
      EXPECT_LE(RelativeL2(out, (*expected)[0]), 1e-4)
          << GetParam() << " " << method << " on " << devices->size() << " devices";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, PaperModelTest,
                         ::testing::Values("squeezenet_v1_1", "inceptionv3"));

// The small vision transformer of tests/data/onnx with every op the GPU has a kernel for
// (its matmuls, softmaxes and layer norms among them) on the GPU and the rest (transposes,
// reshapes, slices, ...) on a CPU, and as schedulers plan it: the output matches the CPU
// executor's.
TEST_F(CoExecOpenClTest, EncoderWithAttentionOnTheGpuMatchesTheCpu) {
  auto graph = model::ImportOnnxFile(PSCHED_SOURCE_DIR "/tests/data/onnx/encoder.onnx", {});
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto input = ReadNpy(PSCHED_SOURCE_DIR "/tests/data/onnx/encoder.input.npy");
  ASSERT_TRUE(input.ok()) << input.status();
  const model::Shape in_shape = graph->tensor(graph->inputs[0].tensor).shape;
  const std::vector<std::vector<float>> inputs{NchwToNhwc(in_shape, input->data)};
  auto cpu = cpu::CpuGraphExecutor::Create(*graph, {.cores = {0}, .threads = 1});
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  auto expected = (*cpu)->Run(inputs);
  ASSERT_TRUE(expected.ok()) << expected.status();

  ExecutionPlan plan;
  plan.device_steps.resize(2);  // two_: cpu.0, gpu
  std::map<OpKind, int> on_gpu;
  for (model::OpId id = 0; id < static_cast<model::OpId>(graph->ops.size()); ++id) {
    const bool gpu = scheduler::DeviceRunsOp(platform::DeviceKind::kGpu, *graph, id);
    plan.device_steps[gpu ? 1 : 0].push_back({id});
    if (gpu) ++on_gpu[graph->op(id).kind];
  }
  EXPECT_GE(on_gpu[OpKind::kMatMul], 4);  // Q.K^T and A.V per layer, two layers
  EXPECT_GE(on_gpu[OpKind::kSoftmax], 2);
  EXPECT_GE(on_gpu[OpKind::kLayerNorm], 5);  // two per layer and the final norm
  EXPECT_FALSE(plan.device_steps[0].empty());
  auto rt = CoExecutionRuntime::Create(*graph, two_, plan, Options());
  ASSERT_TRUE(rt.ok()) << rt.status();
  for (int run = 0; run < 2; ++run) {
    auto out = (*rt)->Run(inputs);
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ((*out)[0].size(), (*expected)[0].size());
    EXPECT_LE(RelativeL2((*out)[0], (*expected)[0]), 1e-4) << "run " << run;
  }
  // Schedulers' plans, free to place those kinds on either device.
  for (const auto* devices : {&two_, &three_}) {
    const predictor::Profile profile = Profile(static_cast<int>(devices->size()) - 1);
    for (const std::string method : {"heft", "pa-heft", "iterative"}) {
      const std::vector<float> out =
          PlanAndRun(*graph, profile, method, *devices, Options(), inputs[0]);
      ASSERT_EQ(out.size(), (*expected)[0].size()) << method;
      EXPECT_LE(RelativeL2(out, (*expected)[0]), 1e-4)
          << method << " on " << devices->size() << " devices";
    }
  }
}

// Exported models of tests/data/onnx with every op the GPU has a kernel for on the GPU and
// the rest on a CPU: the encoders' residual adds, GELU, head-split transposes, reshapes and
// the class token's concat and slice, and the UNet's transposed convolutions. The output matches the CPU
// executor's within rel L2 1e-5.
class CoExecOpenClModelTest : public CoExecOpenClTest,
                        public ::testing::WithParamInterface<const char*> {};

TEST_P(CoExecOpenClModelTest, EveryGpuCapableOpOnTheGpuMatchesTheCpu) {
  const std::string stem = std::string(PSCHED_SOURCE_DIR "/tests/data/onnx/") + GetParam();
  auto graph = model::ImportOnnxFile(stem + ".onnx", {});
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto input = ReadNpy(stem + ".input.npy");
  ASSERT_TRUE(input.ok()) << input.status();
  const model::Tensor& in = graph->tensor(graph->inputs[0].tensor);
  const std::vector<std::vector<float>> inputs{
      in.channels_last ? NchwToNhwc(in.shape, input->data) : input->data};
  auto cpu = cpu::CpuGraphExecutor::Create(*graph, {.cores = {0}, .threads = 1});
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  auto expected = (*cpu)->Run(inputs);
  ASSERT_TRUE(expected.ok()) << expected.status();

  ExecutionPlan plan;
  plan.device_steps.resize(2);  // two_: cpu.0, gpu
  std::map<OpKind, int> on_gpu;
  for (model::OpId id = 0; id < static_cast<model::OpId>(graph->ops.size()); ++id) {
    const bool gpu = scheduler::DeviceRunsOp(platform::DeviceKind::kGpu, *graph, id);
    plan.device_steps[gpu ? 1 : 0].push_back({id});
    if (gpu) ++on_gpu[graph->op(id).kind];
  }
  if (std::string(GetParam()) == "unet_tiny") {
    EXPECT_EQ(on_gpu[OpKind::kConvTranspose2d], 2);
    EXPECT_TRUE(plan.device_steps[0].empty()) << "every UNet op has a GPU kernel";
  } else {
    EXPECT_GE(on_gpu[OpKind::kAdd], 4);        // two residual adds per layer
    EXPECT_GE(on_gpu[OpKind::kTranspose], 4);  // head splits and merges
    EXPECT_GE(on_gpu[OpKind::kSlice], 1);      // the class token out
    EXPECT_GE(on_gpu[OpKind::kConcat], 1);     // and in, along the sequence axis
    EXPECT_FALSE(plan.device_steps[0].empty());  // token-row fully-connected layers
  }
  auto rt = CoExecutionRuntime::Create(*graph, two_, plan, Options());
  ASSERT_TRUE(rt.ok()) << rt.status();
  for (int run = 0; run < 2; ++run) {
    auto out = (*rt)->Run(inputs);
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ((*out)[0].size(), (*expected)[0].size());
    EXPECT_LE(RelativeL2((*out)[0], (*expected)[0]), 1e-5) << "run " << run;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, CoExecOpenClModelTest,
                         ::testing::Values("encoder", "encoder13", "unet_tiny"));

TEST_F(CoExecOpenClTest, TraceShowsMeasuredAndPredictedSubtasks) {
  const model::Graph graph = TestGraph();
  const predictor::Profile profile = Profile(2);
  auto problem = scheduler::Problem::FromGraph(graph, profile.platform, *profile.model);
  ASSERT_TRUE(problem.ok()) << problem.status();
  auto schedule = (*scheduler::MakeScheduler("pa-heft"))->Plan(*problem, {});
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  auto plan = PlanFromSchedule(graph, *schedule);
  ASSERT_TRUE(plan.ok()) << plan.status();
  auto rt = CoExecutionRuntime::Create(graph, three_, *plan, Options());
  ASSERT_TRUE(rt.ok()) << rt.status();
  ASSERT_TRUE((*rt)->Run({RandomVector(12 * 12 * 8, 3)}).ok());

  const std::vector<std::string> names{"cpu.0", "cpu.1", "gpu"};
  const absl::StatusOr<nlohmann::json> traced =
      ChromeTrace(graph, names, (*rt)->last_timings(), &*schedule);
  ASSERT_TRUE(traced.ok()) << traced.status();
  const nlohmann::json& trace = *traced;
  int measured = 0, predicted = 0, tracks = 0, with_prediction = 0;
  for (const nlohmann::json& e : trace["traceEvents"]) {
    if (e["ph"] == "M") ++tracks;
    if (e["ph"] != "X") continue;
    if (e["cat"] == "measured") {
      ++measured;
      EXPECT_GE(e["dur"].get<double>(), 0.0);
      EXPECT_EQ(e["args"]["op"], graph.op(e["args"]["op_id"].get<model::OpId>()).name);
      with_prediction += e["args"].contains("predicted_start_us");
    } else {
      ++predicted;
    }
  }
  EXPECT_EQ(tracks, 6);
  EXPECT_EQ(measured, static_cast<int>(schedule->subtasks().size()));
  EXPECT_EQ(predicted, measured);
  EXPECT_EQ(with_prediction, measured);

  const MakespanComparison makespan = CompareMakespan((*rt)->last_timings(), &*schedule);
  EXPECT_GT(makespan.measured_us, 0.0);
  EXPECT_DOUBLE_EQ(makespan.predicted_us, schedule->makespan_us());
  EXPECT_DOUBLE_EQ(trace["otherData"]["measured_makespan_us"].get<double>(), makespan.measured_us);

  const std::string path = ::testing::TempDir() + "/coexec_trace.json";
  ASSERT_TRUE(WriteChromeTrace(path, graph, **rt, names, &*schedule).ok());
  std::ifstream in(path);
  EXPECT_EQ(nlohmann::json::parse(in)["traceEvents"].size(), trace["traceEvents"].size());
  const std::vector<std::string> too_few{"cpu.0"};
  auto bad = WriteChromeTrace(path, graph, **rt, too_few);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  auto unwritable = WriteChromeTrace("/nonexistent-dir/trace.json", graph, **rt, names);
  EXPECT_EQ(unwritable.code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace psched::executor::runtime
