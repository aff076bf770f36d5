#include "executor/runtime/coexecution_runtime.h"

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "executor/layout.h"
#include "executor/npy.h"
#include "executor/reference/reference_kernels.h"
#include "executor/runtime/cpu_device.h"
#include "executor/testing/graph_builder.h"
#include "executor/testing/oversubscription.h"
#include "executor/testing/scoped_affinity.h"
#include "executor/testing/tensor_compare.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/onnx_import.h"
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

// Branches, a concat, a depthwise conv, pooling, a constant add and a classifier.
model::Graph TestGraph() {
  GraphBuilder b("coexec");
  auto x = b.AddInput({8, 8, 4});
  const model::Activation relu{.kind = ActivationKind::kRelu};
  auto t1 = b.AddOp(OpKind::kConv2d, {x}, {8, 8, 6}, RandomConv(b, 4, 6, 3, 1, 1, 1, 1, 1), relu);
  auto t2 = b.AddOp(OpKind::kConv2d, {x}, {8, 8, 5}, RandomConv(b, 4, 5, 1, 1, 1, 0, 1, 2));
  auto t3 = b.AddOp(OpKind::kConv2d, {t1}, {8, 8, 4}, RandomConv(b, 6, 4, 3, 1, 2, 2, 1, 3),
                    {.kind = ActivationKind::kSigmoid});
  auto cat = b.AddOp(OpKind::kConcat, {t2, t3, t1}, {8, 8, 15});
  model::PoolAttrs pool;
  pool.window = {.kernel_h = 2, .kernel_w = 2, .stride_h = 2, .stride_w = 2};
  auto p = b.AddOp(OpKind::kMaxPool, {cat}, {4, 4, 15}, pool);
  auto t4 = b.AddOp(OpKind::kConv2d, {p}, {4, 4, 15}, RandomConv(b, 15, 15, 3, 1, 1, 1, 15, 4),
                    {.kind = ActivationKind::kClip, .min = -0.5f, .max = 0.5f});
  auto t5 = b.AddOp(OpKind::kConv2d, {t4}, {2, 2, 8}, RandomConv(b, 15, 8, 3, 2, 1, 1, 1, 5), relu);
  auto c = b.AddConstantTensor({1, 1, 8}, RandomVector(8, 6));
  auto sum = b.AddOp(OpKind::kAdd, {t5, c}, {2, 2, 8});
  auto g = b.AddOp(OpKind::kGlobalAvgPool, {sum}, {1, 1, 8});
  auto f = b.AddOp(OpKind::kFlatten, {g}, {1, 1, 8});
  model::FullyConnectedAttrs fc;
  fc.weight = b.AddConstant({10, 8}, RandomVector(80, 7));
  fc.bias = b.AddConstant({10}, RandomVector(10, 8));
  b.MarkOutput(
      b.AddOp(OpKind::kFullyConnected, {f}, {1, 1, 10}, fc, {.kind = ActivationKind::kHardSwish}));
  return b.Build();
}

// Splits every partitionable op along a random axis into up to 3 random pieces on random
// devices; queues follow op order, so the plan is always valid.
ExecutionPlan RandomPlan(const model::Graph& graph, int num_devices, uint32_t seed) {
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
    const int64_t pieces = std::min<int64_t>(work, 1 + rng() % 3);
    std::vector<int64_t> cuts{0, work};
    while (static_cast<int64_t>(cuts.size()) < pieces + 1) {
      const int64_t cut = 1 + static_cast<int64_t>(rng() % static_cast<uint32_t>(work - 1));
      if (std::find(cuts.begin(), cuts.end(), cut) == cuts.end()) cuts.push_back(cut);
    }
    std::sort(cuts.begin(), cuts.end());
    for (size_t k = 0; k + 1 < cuts.size(); ++k) {
      plan.device_steps[rng() % static_cast<uint32_t>(num_devices)].push_back(
          {id, {axis, cuts[k], cuts[k + 1]}});
    }
  }
  return plan;
}

// `plan` with predicted times, ops one after another in op order, each predicted to take
// 0-2 ms (seeded): far longer than they run, so devices that wait for each other sleep
// predictively (RuntimeOptions::predictive_wake) and are woken by their inputs.
ExecutionPlan WithPredictedTimes(ExecutionPlan plan, const model::Graph& graph, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<double> start(graph.ops.size()), end(graph.ops.size());
  double t = 0;
  for (size_t id = 0; id < graph.ops.size(); ++id) {
    start[id] = t;
    t += static_cast<double>(rng() % 2000);
    end[id] = t;
  }
  for (auto& steps : plan.device_steps) {
    for (PlanStep& step : steps) {
      step.predicted_start_us = start[static_cast<size_t>(step.op)];
      step.predicted_end_us = end[static_cast<size_t>(step.op)];
    }
  }
  return plan;
}

class CoExecutionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Two devices on two cores, as the development machines have.
    for (int core : {0, 1}) {
      auto d = CpuDevice::Create("cpu." + std::to_string(core), {core});
      ASSERT_TRUE(d.ok()) << d.status();
      owned_.push_back(std::move(*d));
      devices_.push_back(owned_.back().get());
    }
  }
  std::vector<std::unique_ptr<CpuDevice>> owned_;
  std::vector<Device*> devices_;
};

TEST_F(CoExecutionTest, RandomPlansMatchTheReferenceAndRespectDependencies) {
  const model::Graph graph = TestGraph();
  const std::vector<std::vector<float>> input{RandomVector(8 * 8 * 4, 42)};
  auto expected = reference::RunGraph(graph, input);
  ASSERT_TRUE(expected.ok()) << expected.status();
  int split_steps = 0;
  int64_t predictive_sleeps = 0;
  for (uint32_t seed = 0; seed < 25; ++seed) {
    // Odd seeds carry predicted times: the same plans with predictive sleeps before waits.
    const ExecutionPlan plan = seed % 2 == 1
                                   ? WithPredictedTimes(RandomPlan(graph, 2, seed), graph, seed)
                                   : RandomPlan(graph, 2, seed);
    auto rt = CoExecutionRuntime::Create(graph, devices_, plan);
    ASSERT_TRUE(rt.ok()) << rt.status();
    for (int run = 0; run < 2; ++run) {
      auto out = (*rt)->Run(input);
      ASSERT_TRUE(out.ok()) << out.status();
      for (size_t i = 0; i < (*expected)[0].size(); ++i) {
        ASSERT_NEAR((*out)[0][i], (*expected)[0][i], 1e-4 * (1 + std::fabs((*expected)[0][i])))
            << "plan seed " << seed << " element " << i;
      }
    }
    predictive_sleeps += (*rt)->predictive_sleeps();
    // Full barrier: no subtask starts before every subtask of its predecessors ended.
    const std::vector<SubtaskTiming>& timings = (*rt)->last_timings();
    for (const SubtaskTiming& t : timings) {
      EXPECT_LE(t.start_ns, t.end_ns);
      split_steps += t.step.slice.axis != SplitAxis::kNone;
      for (model::OpId pred : graph.Predecessors(t.step.op)) {
        for (const SubtaskTiming& p : timings) {
          if (p.step.op == pred) {
            EXPECT_LE(p.end_ns, t.start_ns) << "plan seed " << seed;
          }
        }
      }
    }
  }
  EXPECT_GT(split_steps, 25);
  EXPECT_GT(predictive_sleeps, 0);
}

TEST_F(CoExecutionTest, SingleDevicePlanMatches) {
  const model::Graph graph = TestGraph();
  ExecutionPlan plan = SingleDevicePlan(graph, 2);
  auto rt = CoExecutionRuntime::Create(graph, devices_, plan);
  ASSERT_TRUE(rt.ok()) << rt.status();
  const std::vector<std::vector<float>> input{RandomVector(8 * 8 * 4, 1)};
  auto out = (*rt)->Run(input);
  ASSERT_TRUE(out.ok());
  auto expected = reference::RunGraph(graph, input);
  for (size_t i = 0; i < (*expected)[0].size(); ++i) {
    EXPECT_NEAR((*out)[0][i], (*expected)[0][i], 1e-4 * (1 + std::fabs((*expected)[0][i])));
  }
  EXPECT_EQ((*rt)->last_timings().size(), graph.ops.size());
}

// A Device that forwards to a CpuDevice and counts how its jobs reach it.
class CountingDevice final : public Device {
 public:
  explicit CountingDevice(Device* inner) : inner_(inner) {}
  const std::string& name() const override { return inner_->name(); }
  absl::StatusOr<std::unique_ptr<Subtask>> Compile(const model::Graph& graph, model::OpId id,
                                                   WorkSlice slice,
                                                   std::span<const TensorView> inputs,
                                                   const TensorView& output) override {
    return inner_->Compile(graph, id, slice, inputs, output);
  }
  void Post(std::function<void()> job) override {
    posts.fetch_add(1);
    inner_->Post(std::move(job));
  }
  bool CallerOnItsCores() const override { return inner_->CallerOnItsCores(); }
  bool TryRunHere(const std::function<void()>& job) override {
    const bool ran = inner_->TryRunHere(job);
    ran_here.fetch_add(ran ? 1 : 0);
    return ran;
  }
  std::atomic<int> posts{0}, ran_here{0};

 private:
  Device* inner_;
};

// A caller on the core of a device with work runs that device's queue itself; a device with
// nothing in the plan is not woken at all. Either way the outputs are the reference's.
TEST_F(CoExecutionTest, TheCallerRunsItsCoresQueueAndIdleDevicesStayAsleep) {
  const model::Graph graph = TestGraph();
  CountingDevice d0(devices_[0]), d1(devices_[1]);
  ExecutionPlan plan = SingleDevicePlan(graph, 2);  // everything on device 0
  auto rt = CoExecutionRuntime::Create(graph, {&d0, &d1}, plan);
  ASSERT_TRUE(rt.ok()) << rt.status();
  const std::vector<std::vector<float>> input{RandomVector(8 * 8 * 4, 3)};
  auto expected = reference::RunGraph(graph, input);
  ASSERT_TRUE(expected.ok()) << expected.status();
  auto check = [&](const char* where) {
    auto out = (*rt)->Run(input);
    ASSERT_TRUE(out.ok()) << out.status();
    for (size_t i = 0; i < (*expected)[0].size(); ++i) {
      ASSERT_NEAR((*out)[0][i], (*expected)[0][i], 1e-4 * (1 + std::fabs((*expected)[0][i])))
          << where << ", element " << i;
    }
  };
  for (int c : {0, 1}) {
    testing::ScopedAffinity on_core({c});
    ASSERT_TRUE(on_core.ok());
    check(c == 0 ? "caller on device 0's core" : "caller on another core");
  }
  EXPECT_EQ(d0.ran_here.load(), 1);  // from core 0
  EXPECT_EQ(d0.posts.load(), 1);     // from core 1
  EXPECT_EQ(d1.posts.load() + d1.ran_here.load(), 0);
}

// The other devices' queues are posted before the caller copies the inputs into the arena,
// so that their threads wake meanwhile; they must start only once the copy is done. One 1x1
// conv over a 2 MB input, its rows split between the caller's device and the other: with a
// new input every run, a queue that started early would compute its rows from the last run's.
TEST_F(CoExecutionTest, PostedQueuesStartOnlyOnceTheInputsAreCopied) {
  GraphBuilder b("big_input");
  auto x = b.AddInput({256, 256, 8});
  b.MarkOutput(b.AddOp(OpKind::kConv2d, {x}, {256, 256, 4}, RandomConv(b, 8, 4, 1, 1, 1, 0, 1, 9)));
  const model::Graph graph = b.Build();
  ExecutionPlan plan;
  plan.device_steps = {{{0, {SplitAxis::kRows, 0, 128}}}, {{0, {SplitAxis::kRows, 128, 256}}}};
  auto rt = CoExecutionRuntime::Create(graph, devices_, plan);
  ASSERT_TRUE(rt.ok()) << rt.status();
  testing::ScopedAffinity on_core_0({0});
  ASSERT_TRUE(on_core_0.ok());
  for (uint32_t run = 0; run < 8; ++run) {
    const std::vector<std::vector<float>> input{RandomVector(256 * 256 * 8, 20 + run)};
    auto expected = reference::RunGraph(graph, input);
    ASSERT_TRUE(expected.ok()) << expected.status();
    auto out = (*rt)->Run(input);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_LT(RelativeL2((*out)[0], (*expected)[0]), 1e-5) << "run " << run;
  }
}

// A device thread that the plan has idle for a long time before an input from another device
// sleeps until shortly before the input is due (RuntimeOptions::predictive_wake), and its
// publisher wakes it as soon as the input comes. Device 1 runs op 0, which device 0 needs for
// ops 2-4, then waits for op 4, which the plan has due ten minutes in: device 0 cannot have
// it yet when device 1 gets there (unless device 1 is preempted in between), and it takes
// microseconds, so the runs finish only because the publisher wakes the sleeper. A wait the
// plan has short, or a plan without predicted times, never sleeps; nor does a runtime with the
// option off.
TEST_F(CoExecutionTest, ALongPredictedWaitSleepsAndThePublisherWakesIt) {
  const model::Graph graph = TestGraph();
  auto plan_with_gap = [&](double gap_us) {
    ExecutionPlan plan;
    plan.device_steps.resize(2);
    double t = 0;
    for (model::OpId id = 0; id < static_cast<model::OpId>(graph.ops.size()); ++id) {
      if (id == 5) t += gap_us;
      plan.device_steps[id == 0 || id >= 5 ? 1 : 0].push_back(
          {.op = id, .predicted_start_us = t, .predicted_end_us = t + 10});
      t += 10;
    }
    return plan;
  };
  const std::vector<std::vector<float>> input{RandomVector(8 * 8 * 4, 11)};
  auto expected = reference::RunGraph(graph, input);
  ASSERT_TRUE(expected.ok()) << expected.status();
  auto runs = [&](const ExecutionPlan& plan, bool predictive_wake) -> int64_t {
    RuntimeOptions options;
    options.predictive_wake = predictive_wake;
    auto rt = CoExecutionRuntime::Create(graph, devices_, plan, options);
    EXPECT_TRUE(rt.ok()) << rt.status();
    if (!rt.ok()) return -1;
    for (int run = 0; run < 5; ++run) {
      auto out = (*rt)->Run(input);
      EXPECT_TRUE(out.ok()) << out.status();
      if (out.ok()) {
        EXPECT_LT(RelativeL2((*out)[0], (*expected)[0]), 1e-5) << "run " << run;
      }
    }
    return (*rt)->predictive_sleeps();
  };
  EXPECT_GE(runs(plan_with_gap(600e6), true), 1);  // device 1's wait for op 4
  EXPECT_EQ(runs(plan_with_gap(600e6), false), 0);
  EXPECT_EQ(runs(plan_with_gap(50), true), 0);
  ExecutionPlan unpredicted = plan_with_gap(600e6);
  for (auto& steps : unpredicted.device_steps) {
    for (PlanStep& step : steps) step.predicted_start_us = step.predicted_end_us = -1;
  }
  EXPECT_EQ(runs(unpredicted, true), 0);
}

// Tensors share arena memory as far as a plan's order allows (plan_order.h): a single-device
// plan in any valid queue order, and a plan alternating ops between two devices, both use less
// memory than a block per tensor and run right.
TEST_F(CoExecutionTest, PlansReuseArenaMemoryTheirOrderAllows) {
  const model::Graph graph = TestGraph();
  const std::vector<std::vector<float>> input{RandomVector(8 * 8 * 4, 1)};
  auto expected = reference::RunGraph(graph, input);
  ASSERT_TRUE(expected.ok()) << expected.status();
  ExecutionPlan reordered = SingleDevicePlan(graph, 2);
  std::swap(reordered.device_steps[0][0], reordered.device_steps[0][1]);  // two independent ops
  ExecutionPlan alternating;
  alternating.device_steps.resize(2);
  for (model::OpId id = 0; id < static_cast<model::OpId>(graph.ops.size()); ++id) {
    alternating.device_steps[static_cast<size_t>(id % 2)].push_back({id, WorkSlice::Whole()});
  }
  const int64_t block_per_tensor = PlanArena(graph, /*reuse_memory=*/false).size;
  for (const ExecutionPlan& plan : {SingleDevicePlan(graph, 2), reordered, alternating}) {
    auto rt = CoExecutionRuntime::Create(graph, devices_, plan);
    ASSERT_TRUE(rt.ok()) << rt.status();
    for (int run = 0; run < 5; ++run) {
      auto out = (*rt)->Run(input);
      ASSERT_TRUE(out.ok()) << out.status();
      EXPECT_LT(RelativeL2((*out)[0], (*expected)[0]), 1e-5);
    }
    EXPECT_LT((*rt)->arena_floats(), static_cast<size_t>(block_per_tensor));
    // Laid out without allocating: the same arena, what a memory budget is checked against.
    auto size = CoExecutionRuntime::ArenaSizeOf(graph, devices_, plan);
    ASSERT_TRUE(size.ok()) << size.status();
    EXPECT_EQ(static_cast<size_t>(size->floats), (*rt)->arena_floats());
  }
}

// Busy threads on both cores outnumber the device threads 3:1: waits park instead of spinning
// out the competitors' time slices, and every plan still runs to the reference output.
TEST_F(CoExecutionTest, RandomPlansStayCorrectUnderOversubscription) {
  const model::Graph graph = TestGraph();
  const std::vector<std::vector<float>> input{RandomVector(8 * 8 * 4, 3)};
  auto expected = reference::RunGraph(graph, input);
  ASSERT_TRUE(expected.ok()) << expected.status();
  testing::Oversubscription busy({0, 1}, 2, 2);
  for (uint32_t seed = 100; seed < 110; ++seed) {
    auto rt = CoExecutionRuntime::Create(graph, devices_, RandomPlan(graph, 2, seed));
    ASSERT_TRUE(rt.ok()) << rt.status();
    for (int run = 0; run < 5; ++run) {
      auto out = (*rt)->Run(input);
      ASSERT_TRUE(out.ok()) << out.status();
      EXPECT_LT(RelativeL2((*out)[0], (*expected)[0]), 1e-5) << "plan seed " << seed;
    }
  }
}

// A core cluster device (one pinned XNNPACK thread per core) beside a one-core device: every
// kernel runs on the cluster's threadpool and still matches the reference.
TEST(CoExecutionClusterTest, ClusterDevicePlansMatchTheReference) {
  auto cluster = CpuDevice::Create("cpu", {0, 1}, 2);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  EXPECT_EQ((*cluster)->threads(), 2);
  auto single = CpuDevice::Create("cpu.1", {1});
  ASSERT_TRUE(single.ok()) << single.status();
  const std::vector<Device*> devices{cluster->get(), single->get()};
  const model::Graph graph = TestGraph();
  const std::vector<std::vector<float>> input{RandomVector(8 * 8 * 4, 5)};
  auto expected = reference::RunGraph(graph, input);
  ASSERT_TRUE(expected.ok()) << expected.status();
  for (uint32_t seed = 0; seed < 6; ++seed) {
    const ExecutionPlan plan = seed == 0 ? SingleDevicePlan(graph, 2) : RandomPlan(graph, 2, seed);
    auto rt = CoExecutionRuntime::Create(graph, devices, plan);
    ASSERT_TRUE(rt.ok()) << rt.status();
    auto out = (*rt)->Run(input);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_LT(RelativeL2((*out)[0], (*expected)[0]), 1e-5) << "plan seed " << seed;
  }
  EXPECT_EQ(CpuDevice::Create("bad", {0}, 0).status().code(), absl::StatusCode::kInvalidArgument);
}

// A caller on either core of a cluster device runs its queue itself: on the core of the
// device's thread as a one-core device would, and on the other by taking that core over (its
// pool's thread there moves to the device thread's core). Nothing is posted either way, and
// the kernels that split across the pool still match the reference.
TEST(CoExecutionClusterTest, ACallerOnAnyCoreOfAClusterRunsItsQueueItself) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "needs two cores";
  auto cluster = CpuDevice::Create("cpu", {0, 1}, 2);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  CountingDevice counted(cluster->get());
  const model::Graph graph = TestGraph();
  auto rt = CoExecutionRuntime::Create(graph, {&counted}, SingleDevicePlan(graph, 1));
  ASSERT_TRUE(rt.ok()) << rt.status();
  const std::vector<std::vector<float>> input{RandomVector(8 * 8 * 4, 11)};
  auto expected = reference::RunGraph(graph, input);
  ASSERT_TRUE(expected.ok()) << expected.status();
  for (int c : {1, 0, 1}) {
    testing::ScopedAffinity on_core({c});
    ASSERT_TRUE(on_core.ok());
    auto out = (*rt)->Run(input);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_LT(RelativeL2((*out)[0], (*expected)[0]), 1e-5) << "caller on core " << c;
  }
  EXPECT_EQ(counted.ran_here.load(), 3);
  EXPECT_EQ(counted.posts.load(), 0);
}

// x -> a = conv(x), relu -> body = conv(a) -> add(body, residual), relu -> conv, where the
// residual is an identity conv of x (op 1) or `a` itself (op 0, an ancestor of the body conv).
model::Graph ResidualGraph(bool residual_is_a) {
  GraphBuilder b("residual");
  const model::Shape s{12, 12, 16};
  const model::Activation relu{.kind = ActivationKind::kRelu};
  auto x = b.AddInput(s);
  auto a = b.AddOp(OpKind::kConv2d, {x}, s, RandomConv(b, 16, 16, 3, 1, 1, 1, 1, 11), relu);
  auto identity = b.AddOp(OpKind::kConv2d, {x}, s, RandomConv(b, 16, 16, 1, 1, 1, 0, 1, 12));
  auto body = b.AddOp(OpKind::kConv2d, {a}, s, RandomConv(b, 16, 16, 3, 1, 1, 1, 1, 13));
  auto sum = b.AddOp(OpKind::kAdd, {body, residual_is_a ? a : identity}, s, {}, relu);
  auto out = b.AddOp(OpKind::kConv2d, {sum}, {12, 12, 8}, RandomConv(b, 16, 8, 1, 1, 1, 0, 1, 14));
  b.MarkOutput(out);
  if (residual_is_a) b.MarkOutput(identity);
  return b.Build();
}

// The add runs inside the body conv's subtask when the plan has both whole and back to back
// on a device that fuses, and the residual is complete before the conv starts: an ancestor's
// output, or written earlier in the same queue. The outputs are the reference's either way.
TEST_F(CoExecutionTest, ResidualAddsRunInsideTheirConvWhereThePlanAllows) {
  auto cluster = CpuDevice::Create("cpu", {0, 1}, 2);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  struct Case {
    bool residual_is_a;
    std::vector<Device*> devices;
    int identity_device;  // the other ops run on device 0, in op order
    bool fuse;
    int fused;
  };
  const std::vector<Case> cases = {
      {false, devices_, 0, true, 1},                       // residual earlier in the queue
      {false, {cluster->get(), devices_[1]}, 0, true, 1},  // the same on a 2-thread device
      {false, devices_, 1, true, 0},   // residual on another device, not an ancestor
      {true, devices_, 1, true, 1},    // residual from an ancestor
      {false, devices_, 0, false, 0},  // RuntimeOptions::fuse_residual_adds off
  };
  for (size_t k = 0; k < cases.size(); ++k) {
    const Case& c = cases[k];
    const model::Graph graph = ResidualGraph(c.residual_is_a);
    ExecutionPlan plan;
    plan.device_steps.resize(2);
    for (model::OpId id = 0; id < static_cast<model::OpId>(graph.ops.size()); ++id) {
      plan.device_steps[id == 1 ? static_cast<size_t>(c.identity_device) : 0].push_back({id, {}});
    }
    RuntimeOptions options;
    options.fuse_residual_adds = c.fuse;
    auto rt = CoExecutionRuntime::Create(graph, c.devices, plan, options);
    ASSERT_TRUE(rt.ok()) << rt.status();
    EXPECT_EQ((*rt)->fused_residual_adds(), c.fused) << "case " << k;
    // The add's step is flagged, and it is the step right after its conv on the same device.
    const std::vector<SubtaskTiming>& timings = (*rt)->last_timings();
    int flagged = 0;
    for (size_t t = 0; t < timings.size(); ++t) {
      if (!timings[t].fused_away) continue;
      ++flagged;
      EXPECT_EQ(graph.op(timings[t].step.op).kind, OpKind::kAdd);
      ASSERT_GT(t, 0u);
      EXPECT_EQ(timings[t - 1].device, timings[t].device);
      EXPECT_EQ(graph.op(timings[t - 1].step.op).kind, OpKind::kConv2d);
    }
    EXPECT_EQ(flagged, c.fused) << "case " << k;
    const std::vector<std::vector<float>> input{RandomVector(12 * 12 * 16, 20 + k)};
    auto expected = reference::RunGraph(graph, input);
    ASSERT_TRUE(expected.ok()) << expected.status();
    for (int run = 0; run < 2; ++run) {
      auto out = (*rt)->Run(input);
      ASSERT_TRUE(out.ok()) << out.status();
      EXPECT_LT(RelativeL2((*out)[0], (*expected)[0]), 1e-5) << "case " << k;
    }
  }
}

TEST(CpuDeviceTest, AFusedConvNeedsItsInputsItsOutputAndTheResidual) {
  auto device = CpuDevice::Create("cpu.0", {0});
  ASSERT_TRUE(device.ok()) << device.status();
  const model::Graph graph = ResidualGraph(false);
  const TensorView one{nullptr, {12, 12, 16}, 16};
  auto subtask = (*device)->CompileResidualAddedConv(graph, 2, 3, std::vector{one, one}, one);
  EXPECT_EQ(subtask.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(subtask.status().message(), HasSubstr("got 2 views"));
}

std::string ReferenceDir() {
  const char* dir = std::getenv("PSCHED_SHARED_DIR");
  return std::string(dir != nullptr ? dir : PSCHED_SOURCE_DIR "/../shared") + "/models/reference/";
}

TEST_F(CoExecutionTest, SplitSqueezenetMatchesPyTorch) {
  const std::string stem = ReferenceDir() + "squeezenet_v1_1";
  auto graph = model::ImportOnnxFile(stem + ".onnx", {});
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto input = ReadNpy(stem + ".input.npy");
  auto expected = ReadNpy(stem + ".output.npy");
  ASSERT_TRUE(input.ok() && expected.ok());
  const model::Shape in_shape = graph->tensor(graph->inputs[0].tensor).shape;
  const model::Shape out_shape = graph->tensor(graph->outputs[0].tensor).shape;
  for (uint32_t seed : {1u, 2u}) {
    auto rt = CoExecutionRuntime::Create(*graph, devices_, RandomPlan(*graph, 2, seed));
    ASSERT_TRUE(rt.ok()) << rt.status();
    auto out = (*rt)->Run({NchwToNhwc(in_shape, input->data)});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_LE(RelativeL2(NhwcToNchw(out_shape, (*out)[0]), expected->data), 1e-4)
        << "plan seed " << seed;
  }
}

// A vision transformer (tests/data/onnx/encoder.onnx) under random plans that split its
// matmuls by rows (heads), columns and K, its token-row fully-connected layers, layer norms,
// softmaxes, GELUs and residual adds across the two devices: the reference's output and
// PyTorch's.
TEST_F(CoExecutionTest, SplitEncoderMatchesTheReferenceAndPyTorch) {
  const std::string stem = PSCHED_SOURCE_DIR "/tests/data/onnx/encoder";
  auto graph = model::ImportOnnxFile(stem + ".onnx", {});
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto input = ReadNpy(stem + ".input.npy");
  auto torch_output = ReadNpy(stem + ".output.npy");
  ASSERT_TRUE(input.ok() && torch_output.ok());
  const model::Shape in_shape = graph->tensor(graph->inputs[0].tensor).shape;
  const std::vector<std::vector<float>> nhwc{NchwToNhwc(in_shape, input->data)};
  auto expected = reference::RunGraph(*graph, nhwc);
  ASSERT_TRUE(expected.ok()) << expected.status();
  int transformer_splits = 0, matmul_k = 0;
  for (uint32_t seed = 1; seed <= 8; ++seed) {
    const ExecutionPlan plan = RandomPlan(*graph, 2, seed);
    auto rt = CoExecutionRuntime::Create(*graph, devices_, plan);
    ASSERT_TRUE(rt.ok()) << rt.status();
    for (const std::vector<PlanStep>& steps : plan.device_steps) {
      for (const PlanStep& step : steps) {
        const OpKind kind = graph->op(step.op).kind;
        if (step.slice.axis == SplitAxis::kNone || kind == OpKind::kConv2d) continue;
        ++transformer_splits;
        matmul_k += kind == OpKind::kMatMul && step.slice.axis == SplitAxis::kInputChannels;
      }
    }
    auto out = (*rt)->Run(nhwc);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_LE(RelativeL2((*out)[0], (*expected)[0]), 1e-5) << "plan seed " << seed;
    EXPECT_LE(RelativeL2((*out)[0], torch_output->data), 1e-4) << "plan seed " << seed;
  }
  EXPECT_GT(transformer_splits, 100);
  EXPECT_GT(matmul_k, 0);
}

TEST_F(CoExecutionTest, UsesTheCallersArena) {
  const model::Graph graph = TestGraph();
  std::vector<float> memory;
  RuntimeOptions options;
  options.allocate_arena = [&](size_t floats) -> absl::StatusOr<SharedMemory<float>> {
    memory.assign(floats, 0.0f);
    return SharedMemory<float>{memory.data(), nullptr};
  };
  auto rt = CoExecutionRuntime::Create(graph, devices_, RandomPlan(graph, 2, 9), options);
  ASSERT_TRUE(rt.ok()) << rt.status();
  EXPECT_FALSE(memory.empty());
  const std::vector<std::vector<float>> input{RandomVector(8 * 8 * 4, 2)};
  auto out = (*rt)->Run(input);
  ASSERT_TRUE(out.ok()) << out.status();
  auto expected = reference::RunGraph(graph, input);
  for (size_t i = 0; i < (*expected)[0].size(); ++i) {
    EXPECT_NEAR((*out)[0][i], (*expected)[0][i], 1e-4 * (1 + std::fabs((*expected)[0][i])));
  }
  options.allocate_arena = [](size_t) -> absl::StatusOr<SharedMemory<float>> {
    return absl::ResourceExhaustedError("no SVM left");
  };
  EXPECT_THAT(CoExecutionRuntime::Create(graph, devices_, SingleDevicePlan(graph, 2), options)
                  .status()
                  .ToString(),
              HasSubstr("no SVM left"));
}

TEST_F(CoExecutionTest, RejectsBadPlans) {
  const model::Graph graph = TestGraph();
  ExecutionPlan missing = SingleDevicePlan(graph, 2);
  missing.device_steps[0].pop_back();
  EXPECT_THAT(CoExecutionRuntime::Create(graph, devices_, missing).status().ToString(),
              HasSubstr("has no step"));

  ExecutionPlan overlap = SingleDevicePlan(graph, 2);
  overlap.device_steps[0][0] = {0, SplitAxis::kOutputChannels, 0, 4};
  overlap.device_steps[1].push_back({0, {SplitAxis::kOutputChannels, 3, 6}});
  EXPECT_THAT(CoExecutionRuntime::Create(graph, devices_, overlap).status().ToString(),
              HasSubstr("leaves a gap, overlaps or is empty"));

  ExecutionPlan short_cover = SingleDevicePlan(graph, 2);
  short_cover.device_steps[0][0] = {0, SplitAxis::kRows, 0, 7};
  EXPECT_THAT(CoExecutionRuntime::Create(graph, devices_, short_cover).status().ToString(),
              HasSubstr("cover [0, 7) of [0, 8)"));

  ExecutionPlan bad_axis = SingleDevicePlan(graph, 2);
  bad_axis.device_steps[0][3] = {3, SplitAxis::kRows, 0, 8};  // the concat
  EXPECT_THAT(CoExecutionRuntime::Create(graph, devices_, bad_axis).status().ToString(),
              HasSubstr("cannot be split along spatial"));

  // op 2 (t3) reads op 0 (t1), but device 1 queues op 2 before op 0.
  ExecutionPlan deadlock = SingleDevicePlan(graph, 2);
  deadlock.device_steps[0].erase(deadlock.device_steps[0].begin() + 2);
  deadlock.device_steps[0].erase(deadlock.device_steps[0].begin());
  deadlock.device_steps[1] = {{2, SplitAxis::kNone, 0, 1}, {0, SplitAxis::kNone, 0, 1}};
  EXPECT_THAT(CoExecutionRuntime::Create(graph, devices_, deadlock).status().ToString(),
              HasSubstr("plan deadlocks: device 0 waits at op 3"));

  ExecutionPlan three = SingleDevicePlan(graph, 3);
  EXPECT_THAT(CoExecutionRuntime::Create(graph, devices_, three).status().ToString(),
              HasSubstr("step lists for 3 devices, 2 devices"));
}

TEST_F(CoExecutionTest, RejectsWrongInputs) {
  const model::Graph graph = TestGraph();
  auto rt = CoExecutionRuntime::Create(graph, devices_, RandomPlan(graph, 2, 3));
  ASSERT_TRUE(rt.ok());
  EXPECT_THAT(
      (*rt)->Run(std::vector<std::vector<float>>{std::vector<float>(5)}).status().ToString(),
      HasSubstr("holds 5 floats, expected 256"));
  EXPECT_THAT(CoExecutionRuntime::Create(graph, {}, SingleDevicePlan(graph)).status().ToString(),
              HasSubstr("at least one device"));
}

}  // namespace
}  // namespace psched::executor::runtime
