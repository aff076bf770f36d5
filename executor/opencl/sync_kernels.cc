#include "executor/opencl/sync_kernels.h"

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "executor/opencl/embedded_kernels.h"
#include "spdlog/spdlog.h"

namespace psched::executor::opencl {
namespace {

absl::StatusOr<cl_program> SyncProgram(OpenClDevice* device) {
  // C11 atomics with SVM scopes need OpenCL C 2.0+; sync.cl falls back to 1.x atomics, which
  // is also the way out when a 3.0 compiler lacks the optional atomic-order features.
  absl::StatusOr<cl_program> program =
      device->BuildProgram("psched_sync", embedded::kSyncClSource, device->StdOption());
  if (program.ok() || device->StdOption().empty()) return program;
  spdlog::warn(
      "opencl: sync kernels with C11 atomics failed to build, using OpenCL C 1.2 "
      "atomics: {}",
      program.status().ToString());
  return device->BuildProgram("psched_sync_cl12", embedded::kSyncClSource, "-cl-std=CL1.2");
}

absl::StatusOr<cl_kernel> SyncKernel(OpenClDevice* device, const char* name) {
  absl::StatusOr<cl_program> program = SyncProgram(device);
  if (!program.ok()) return program.status();
  cl_int err = CL_SUCCESS;
  cl_kernel kernel = clCreateKernel(*program, name, &err);
  if (err != CL_SUCCESS) return ClStatus(err, absl::StrCat("clCreateKernel(", name, ")"));
  return kernel;
}

struct CallbackAdd {
  int32_t* word;
  int32_t delta;
};

void CL_CALLBACK AddOnComplete(cl_event event, cl_int status, void* user) {
  auto* add = static_cast<CallbackAdd*>(user);
  std::atomic_ref<int32_t>(*add->word).fetch_add(add->delta, std::memory_order_release);
  delete add;
  clReleaseEvent(event);
}

}  // namespace

absl::StatusOr<std::unique_ptr<DependencyCounters>> DependencyCounters::Create(
    OpenClDevice* device, size_t count, SyncOptions options) {
  if (count == 0) return absl::InvalidArgumentError("DependencyCounters: count must be > 0");
  if (options.max_spins < 0) {
    return absl::InvalidArgumentError("DependencyCounters: max_spins must be >= 0");
  }
  auto counters =
      std::unique_ptr<DependencyCounters>(new DependencyCounters(device, count, options));
  const size_t bytes = (count + 1) * sizeof(int32_t);
  counters->device_side_ = device->info().svm_atomics && !options.force_host_side;
  if (counters->device_side_) {
    void* p =
        clSVMAlloc(device->context(),
                   CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER | CL_MEM_SVM_ATOMICS, bytes, 0);
    if (p == nullptr) {
      return absl::ResourceExhaustedError("clSVMAlloc of the dependency counters failed");
    }
    counters->words_ = static_cast<int32_t*>(p);
    counters->svm_ = true;
    absl::StatusOr<cl_kernel> signal = SyncKernel(device, "psched_signal");
    if (!signal.ok()) return signal.status();
    counters->signal_ = *signal;
    absl::StatusOr<cl_kernel> wait = SyncKernel(device, "psched_wait");
    if (!wait.ok()) return wait.status();
    counters->wait_ = *wait;
    cl_int err = clSetKernelArgSVMPointer(counters->signal_, 0, counters->words_);
    if (err == CL_SUCCESS) err = clSetKernelArgSVMPointer(counters->wait_, 0, counters->words_);
    if (err != CL_SUCCESS) return ClStatus(err, "binding the dependency counters");
  } else {
    counters->words_ = new int32_t[count + 1];
  }
  counters->Reset();
  return counters;
}

DependencyCounters::~DependencyCounters() {
  clFinish(device_->queue());
  if (signal_ != nullptr) clReleaseKernel(signal_);
  if (wait_ != nullptr) clReleaseKernel(wait_);
  if (svm_) {
    clSVMFree(device_->context(), words_);
  } else {
    delete[] words_;
  }
}

void DependencyCounters::Add(size_t index, int32_t delta) {
  std::atomic_ref<int32_t>(*slot(index)).fetch_add(delta, std::memory_order_seq_cst);
}

int32_t DependencyCounters::Load(size_t index) const {
  return std::atomic_ref<int32_t>(*slot(index)).load(std::memory_order_seq_cst);
}

absl::Status DependencyCounters::WaitAtLeast(size_t index, int32_t target,
                                             absl::Duration timeout) const {
  if (index >= count_) {
    return absl::OutOfRangeError(
        absl::StrCat("dependency counter ", index, " of ", count_, " does not exist"));
  }
  const absl::Time deadline = absl::Now() + timeout;
  int spins = 0;
  while (Load(index) < target) {
    // Spin briefly (CPU subtasks are short), then yield so a 2-core host is not starved.
    if (++spins > 1000) std::this_thread::yield();
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat("dependency counter ", index, " stayed at ",
                                                      Load(index), " < ", target, " for ",
                                                      absl::FormatDuration(timeout)));
    }
  }
  return absl::OkStatus();
}

void DependencyCounters::Reset() {
  for (size_t i = 0; i <= count_; ++i) {
    std::atomic_ref<int32_t>(words_[i]).store(0, std::memory_order_seq_cst);
  }
}

bool DependencyCounters::wait_timed_out() const {
  return std::atomic_ref<int32_t>(words_[count_]).load(std::memory_order_seq_cst) != 0;
}

bool DependencyCounters::TakeTimeout() {
  return std::atomic_ref<int32_t>(words_[count_]).exchange(0, std::memory_order_seq_cst) != 0;
}

absl::Status DependencyCounters::EnqueueSignal(size_t index, int32_t delta, cl_event* event) {
  if (index >= count_) {
    return absl::OutOfRangeError(
        absl::StrCat("dependency counter ", index, " of ", count_, " does not exist"));
  }
  if (device_side_) {
    const cl_int i = static_cast<cl_int>(index);
    cl_int err = clSetKernelArg(signal_, 1, sizeof(i), &i);
    if (err == CL_SUCCESS) err = clSetKernelArg(signal_, 2, sizeof(delta), &delta);
    const size_t one = 1;
    if (err == CL_SUCCESS) {
      err = clEnqueueNDRangeKernel(device_->queue(), signal_, 1, nullptr, &one, nullptr, 0, nullptr,
                                   event);
    }
    return ClStatus(err, "enqueueing psched_signal");
  }
  cl_event marker = nullptr;
  cl_int err = clEnqueueMarkerWithWaitList(device_->queue(), 0, nullptr, &marker);
  if (err != CL_SUCCESS) return ClStatus(err, "enqueueing the signal marker");
  if (event != nullptr) {
    clRetainEvent(marker);
    *event = marker;
  }
  auto* add = new CallbackAdd{slot(index), delta};
  err = clSetEventCallback(marker, CL_COMPLETE, AddOnComplete, add);
  if (err != CL_SUCCESS) {
    delete add;
    clReleaseEvent(marker);
    return ClStatus(err, "clSetEventCallback for the signal marker");
  }
  return device_->Flush();
}

absl::Status DependencyCounters::EnqueueWait(size_t index, int32_t target,
                                             std::optional<size_t> release) {
  for (size_t i : {index, release.value_or(0)}) {
    if (i >= count_) {
      return absl::OutOfRangeError(
          absl::StrCat("dependency counter ", i, " of ", count_, " does not exist"));
    }
  }
  if (!device_side_) return WaitAtLeast(index, target, options_.host_wait_timeout);
  const cl_int i = static_cast<cl_int>(index);
  const cl_int timeout_slot = static_cast<cl_int>(count_);
  cl_int err = clSetKernelArg(wait_, 1, sizeof(i), &i);
  if (err == CL_SUCCESS) err = clSetKernelArg(wait_, 2, sizeof(target), &target);
  if (err == CL_SUCCESS) {
    err = clSetKernelArg(wait_, 3, sizeof(options_.max_spins), &options_.max_spins);
  }
  if (err == CL_SUCCESS) err = clSetKernelArg(wait_, 4, sizeof(timeout_slot), &timeout_slot);
  const cl_int release_slot = release.has_value() ? static_cast<cl_int>(*release) : -1;
  if (err == CL_SUCCESS) err = clSetKernelArg(wait_, 5, sizeof(release_slot), &release_slot);
  const size_t one = 1;
  if (err == CL_SUCCESS) {
    err = clEnqueueNDRangeKernel(device_->queue(), wait_, 1, nullptr, &one, nullptr, 0, nullptr,
                                 nullptr);
  }
  if (err != CL_SUCCESS) return ClStatus(err, "enqueueing psched_wait");
  // Start the spin now: the CPU work it waits for may finish before the next flush.
  return device_->Flush();
}

absl::StatusOr<double> MeasureDispatchOverheadUs(OpenClDevice* device, int iterations) {
  if (iterations < 1) {
    return absl::InvalidArgumentError("MeasureDispatchOverheadUs: iterations must be >= 1");
  }
  SyncOptions options;
  // Measure what the runtime will use: kernels where SVM atomics exist, markers otherwise.
  absl::StatusOr<std::unique_ptr<DependencyCounters>> counters =
      DependencyCounters::Create(device, 1, options);
  if (!counters.ok()) return counters.status();
  constexpr int kWarmup = 10;
  for (int i = 0; i < kWarmup; ++i) {
    if (absl::Status s = (*counters)->EnqueueSignal(0); !s.ok()) return s;
  }
  if (absl::Status s = device->Finish(); !s.ok()) return s;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) {
    if (absl::Status s = (*counters)->EnqueueSignal(0); !s.ok()) return s;
  }
  if (absl::Status s = device->Finish(); !s.ok()) return s;
  const std::chrono::duration<double, std::micro> elapsed =
      std::chrono::steady_clock::now() - start;
  const int32_t expected = kWarmup + iterations;
  if ((*counters)->device_side() && (*counters)->Load(0) != expected) {
    return absl::InternalError(absl::StrCat("sync kernels lost updates: counter is ",
                                            (*counters)->Load(0), ", expected ", expected));
  }
  return elapsed.count() / iterations;
}

}  // namespace psched::executor::opencl
