#include "executor/opencl/sync_kernels.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>
#include <vector>

#include "executor/opencl/embedded_kernels.h"
#include "executor/opencl/opencl_kernels.h"
#include "executor/opencl/opencl_test_util.h"
#include "executor/testing/graph_builder.h"

namespace psched::executor::opencl {
namespace {

TEST(DependencyCountersTest, GpuSignalsAddInQueueOrder) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  absl::StatusOr<std::unique_ptr<DependencyCounters>> counters =
      DependencyCounters::Create(device, 3);
  ASSERT_TRUE(counters.ok()) << counters.status();
  EXPECT_EQ((*counters)->device_side(), device->info().svm_atomics);
  ASSERT_TRUE((*counters)->EnqueueSignal(1).ok());
  ASSERT_TRUE((*counters)->EnqueueSignal(1, 2).ok());
  ASSERT_TRUE((*counters)->EnqueueSignal(2).ok());
  ASSERT_TRUE(device->Finish().ok());
  ASSERT_TRUE((*counters)->WaitAtLeast(2, 1, absl::Seconds(5)).ok());
  EXPECT_EQ((*counters)->Load(0), 0);
  EXPECT_EQ((*counters)->Load(1), 3);
  EXPECT_EQ((*counters)->Load(2), 1);
  (*counters)->Reset();
  EXPECT_EQ((*counters)->Load(1), 0);
}

// The appendix-A pattern: the GPU queue holds [wait(cpu done) -> kernel reading CPU output ->
// signal(gpu done)]; a CPU thread writes its output into the shared arena and then releases
// the wait. The GPU kernel must see the CPU's data, and the GPU's signal must not fire early.
void CheckCpuReleasesGpuWait(OpenClDevice* device, SyncOptions options) {
  executor::testing::GraphBuilder b("sync");
  model::TensorId x = b.AddInput({1, 1, 64});
  model::Activation relu;
  relu.kind = model::ActivationKind::kRelu;
  b.AddOp(model::OpKind::kActivation, {x}, {1, 1, 64}, {}, relu);
  model::Graph graph = b.Build();
  absl::StatusOr<std::unique_ptr<SvmArena>> arena = SvmArena::Create(device, 128);
  ASSERT_TRUE(arena.ok()) << arena.status();
  if (!(*arena)->host_coherent()) GTEST_SKIP() << "needs fine-grained SVM";
  std::fill_n((*arena)->host_data(), 128, 0.0f);
  absl::StatusOr<std::unique_ptr<KernelFactory>> factory =
      KernelFactory::Create(device, &graph, arena->get(), {0, 64});
  ASSERT_TRUE(factory.ok()) << factory.status();
  absl::StatusOr<std::unique_ptr<OpKernel>> kernel = (*factory)->Create(0);
  ASSERT_TRUE(kernel.ok()) << kernel.status();

  absl::StatusOr<std::unique_ptr<DependencyCounters>> counters =
      DependencyCounters::Create(device, 2, options);
  ASSERT_TRUE(counters.ok()) << counters.status();
  constexpr size_t kCpuDone = 0, kGpuDone = 1;

  std::atomic<int32_t> gpu_done_before_release{-1};
  std::thread cpu([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    float* data = (*arena)->host_data();
    for (int i = 0; i < 64; ++i) data[i] = static_cast<float>(i % 7) - 3.0f;
    gpu_done_before_release = (*counters)->Load(kGpuDone);
    (*counters)->Add(kCpuDone, 1);
  });
  // Host-side mode blocks here until the CPU thread releases; device-side returns at once.
  absl::Status waited = (*counters)->EnqueueWait(kCpuDone, 1);
  ASSERT_TRUE(waited.ok()) << waited;
  ASSERT_TRUE((*kernel)->Enqueue().ok());
  ASSERT_TRUE((*counters)->EnqueueSignal(kGpuDone).ok());
  ASSERT_TRUE(device->Flush().ok());
  absl::Status done = (*counters)->WaitAtLeast(kGpuDone, 1, absl::Seconds(10));
  cpu.join();
  ASSERT_TRUE(done.ok()) << done;
  ASSERT_TRUE(device->Finish().ok());
  EXPECT_EQ(gpu_done_before_release.load(), 0);
  EXPECT_FALSE((*counters)->wait_timed_out());
  const float* out = (*arena)->host_data() + 64;
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(out[i], std::max(0.0f, static_cast<float>(i % 7) - 3.0f)) << "element " << i;
  }
}

TEST(DependencyCountersTest, CpuThreadReleasesDeviceSideWait) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  if (!device->info().svm_atomics) GTEST_SKIP() << "device has no SVM atomics";
  CheckCpuReleasesGpuWait(device, SyncOptions{});
}

TEST(DependencyCountersTest, CpuThreadReleasesHostSideWait) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  SyncOptions options;
  options.force_host_side = true;
  options.host_wait_timeout = absl::Seconds(10);
  CheckCpuReleasesGpuWait(device, options);
}

TEST(DependencyCountersTest, DeviceSideWaitGivesUpAndFlagsTheTimeout) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  if (!device->info().svm_atomics) GTEST_SKIP() << "device has no SVM atomics";
  SyncOptions options;
  options.max_spins = 1000;
  absl::StatusOr<std::unique_ptr<DependencyCounters>> counters =
      DependencyCounters::Create(device, 2, options);
  ASSERT_TRUE(counters.ok()) << counters.status();
  ASSERT_TRUE((*counters)->EnqueueWait(0, 5).ok());
  ASSERT_TRUE((*counters)->EnqueueSignal(1).ok());
  ASSERT_TRUE(device->Finish().ok());
  EXPECT_TRUE((*counters)->wait_timed_out());
  EXPECT_EQ((*counters)->Load(1), 1);
  (*counters)->Reset();
  EXPECT_FALSE((*counters)->wait_timed_out());
}

// The runtime's way to end a wait that can never be met: no clock, a release word set once no
// host thread will signal any more.
TEST(DependencyCountersTest, DeviceSideWaitEndsWhenReleasedShortOfItsTarget) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  if (!device->info().svm_atomics) GTEST_SKIP() << "device has no SVM atomics";
  absl::StatusOr<std::unique_ptr<DependencyCounters>> counters =
      DependencyCounters::Create(device, 3, SyncOptions{});
  ASSERT_TRUE(counters.ok()) << counters.status();
  constexpr size_t kWaited = 0, kAfter = 1, kRelease = 2;
  // Met before the release: no timeout, whatever the release word does later.
  (*counters)->Add(kWaited, 1);
  ASSERT_TRUE((*counters)->EnqueueWait(kWaited, 1, kRelease).ok());
  ASSERT_TRUE(device->Finish().ok());
  EXPECT_FALSE((*counters)->wait_timed_out());
  // Never met: spins until the release word is set, then flags and lets the queue go on.
  ASSERT_TRUE((*counters)->EnqueueWait(kWaited, 5, kRelease).ok());
  ASSERT_TRUE((*counters)->EnqueueSignal(kAfter).ok());
  ASSERT_TRUE(device->Flush().ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ((*counters)->Load(kAfter), 0);  // still behind the wait
  (*counters)->Add(kRelease, 1);
  ASSERT_TRUE(device->Finish().ok());
  EXPECT_TRUE((*counters)->TakeTimeout());
  EXPECT_EQ((*counters)->Load(kAfter), 1);
  EXPECT_EQ((*counters)->EnqueueWait(kWaited, 1, 3).code(), absl::StatusCode::kOutOfRange);
}

TEST(DependencyCountersTest, HostSideWaitTimesOutWithAClearError) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  SyncOptions options;
  options.force_host_side = true;
  options.host_wait_timeout = absl::Milliseconds(20);
  absl::StatusOr<std::unique_ptr<DependencyCounters>> counters =
      DependencyCounters::Create(device, 1, options);
  ASSERT_TRUE(counters.ok()) << counters.status();
  EXPECT_FALSE((*counters)->device_side());
  absl::Status s = (*counters)->EnqueueWait(0, 1);
  ASSERT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(s.message().find("counter 0"), std::string::npos) << s;
}

TEST(DependencyCountersTest, BadArgumentsAreRejected) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  EXPECT_EQ(DependencyCounters::Create(device, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  SyncOptions negative_spins;
  negative_spins.max_spins = -1;
  EXPECT_EQ(DependencyCounters::Create(device, 1, negative_spins).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::unique_ptr<DependencyCounters>> counters =
      DependencyCounters::Create(device, 2);
  ASSERT_TRUE(counters.ok());
  EXPECT_EQ((*counters)->EnqueueSignal(2).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ((*counters)->EnqueueWait(7, 1).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ((*counters)->WaitAtLeast(2, 1, absl::Milliseconds(1)).code(),
            absl::StatusCode::kOutOfRange);
}

// The OpenCL C 1.2 variant of the sync kernels (used when the C11-atomics build fails).
TEST(SyncKernelSourceTest, OpenClC12VariantSignalsAndWaits) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  if (!device->info().svm_atomics) GTEST_SKIP() << "device has no SVM atomics";
  absl::StatusOr<cl_program> program =
      device->BuildProgram("sync_cl12_test", embedded::kSyncClSource, "-cl-std=CL1.2");
  ASSERT_TRUE(program.ok()) << program.status();
  auto* words = static_cast<int32_t*>(clSVMAlloc(
      device->context(), CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER | CL_MEM_SVM_ATOMICS,
      3 * sizeof(int32_t), 0));
  ASSERT_NE(words, nullptr);
  std::fill_n(words, 3, 0);
  cl_int err = CL_SUCCESS;
  cl_kernel signal = clCreateKernel(*program, "psched_signal", &err);
  ASSERT_EQ(err, CL_SUCCESS);
  cl_kernel wait = clCreateKernel(*program, "psched_wait", &err);
  ASSERT_EQ(err, CL_SUCCESS);
  const size_t one = 1;
  auto enqueue_signal = [&](cl_int index, cl_int delta) {
    clSetKernelArgSVMPointer(signal, 0, words);
    clSetKernelArg(signal, 1, sizeof(index), &index);
    clSetKernelArg(signal, 2, sizeof(delta), &delta);
    return clEnqueueNDRangeKernel(device->queue(), signal, 1, nullptr, &one, nullptr, 0, nullptr,
                                  nullptr);
  };
  const cl_int index = 0, target = 1, max_spins = 0, timeout_slot = 2, release = -1;
  clSetKernelArgSVMPointer(wait, 0, words);
  clSetKernelArg(wait, 1, sizeof(index), &index);
  clSetKernelArg(wait, 2, sizeof(target), &target);
  clSetKernelArg(wait, 3, sizeof(max_spins), &max_spins);
  clSetKernelArg(wait, 4, sizeof(timeout_slot), &timeout_slot);
  clSetKernelArg(wait, 5, sizeof(release), &release);
  ASSERT_EQ(
      clEnqueueNDRangeKernel(device->queue(), wait, 1, nullptr, &one, nullptr, 0, nullptr, nullptr),
      CL_SUCCESS);
  ASSERT_EQ(enqueue_signal(1, 5), CL_SUCCESS);
  ASSERT_EQ(clFlush(device->queue()), CL_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(std::atomic_ref<int32_t>(words[1]).load(), 0);  // still behind the wait
  std::atomic_ref<int32_t>(words[0]).fetch_add(1);
  ASSERT_EQ(clFinish(device->queue()), CL_SUCCESS);
  EXPECT_EQ(words[1], 5);
  EXPECT_EQ(words[2], 0);  // no timeout
  clReleaseKernel(signal);
  clReleaseKernel(wait);
  clSVMFree(device->context(), words);
}

TEST(DispatchOverheadTest, MeasuresAPositiveFiniteOverhead) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  absl::StatusOr<double> us = MeasureDispatchOverheadUs(device, 100);
  ASSERT_TRUE(us.ok()) << us.status();
  EXPECT_GT(*us, 0.0);
  EXPECT_TRUE(std::isfinite(*us));
  RecordProperty("dispatch_overhead_us", std::to_string(*us));
  EXPECT_EQ(MeasureDispatchOverheadUs(device, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace psched::executor::opencl
