#include "executor/opencl/svm_arena.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace psched::executor::opencl {

std::string_view MemoryModeName(MemoryMode mode) {
  switch (mode) {
    case MemoryMode::kFineGrainSvm: return "fine_grain_svm";
    case MemoryMode::kCoarseGrainSvm: return "coarse_grain_svm";
    case MemoryMode::kBuffer: return "buffer";
  }
  return "buffer";
}

std::optional<MemoryMode> MemoryModeFromName(std::string_view name) {
  for (MemoryMode m :
       {MemoryMode::kFineGrainSvm, MemoryMode::kCoarseGrainSvm, MemoryMode::kBuffer}) {
    if (MemoryModeName(m) == name) return m;
  }
  return std::nullopt;
}

MemoryMode BestMemoryMode(const DeviceInfo& info) {
  if (info.svm_fine_grain) return MemoryMode::kFineGrainSvm;
  if (info.svm_coarse_grain) return MemoryMode::kCoarseGrainSvm;
  return MemoryMode::kBuffer;
}

absl::StatusOr<std::unique_ptr<SvmArena>> SvmArena::Create(OpenClDevice* device, size_t floats,
                                                            std::optional<MemoryMode> mode) {
  const DeviceInfo& info = device->info();
  const MemoryMode chosen = mode.value_or(BestMemoryMode(info));
  if ((chosen == MemoryMode::kFineGrainSvm && !info.svm_fine_grain) ||
      (chosen == MemoryMode::kCoarseGrainSvm && !info.svm_coarse_grain)) {
    return absl::FailedPreconditionError(absl::StrCat("OpenCL device '", info.name,
                                                      "' does not support ",
                                                      std::string(MemoryModeName(chosen)), " memory"));
  }
  floats = std::max<size_t>(floats, 1);
  const size_t bytes = floats * sizeof(float);
  auto arena = std::unique_ptr<SvmArena>(new SvmArena(device, floats, chosen));
  switch (chosen) {
    case MemoryMode::kFineGrainSvm: {
      cl_svm_mem_flags flags = CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER;
      if (info.svm_atomics) flags |= CL_MEM_SVM_ATOMICS;
      arena->svm_ = clSVMAlloc(device->context(), flags, bytes, 0);
      arena->atomics_ = info.svm_atomics;
      arena->host_ = static_cast<float*>(arena->svm_);
      break;
    }
    case MemoryMode::kCoarseGrainSvm:
      arena->svm_ = clSVMAlloc(device->context(), CL_MEM_READ_WRITE, bytes, 0);
      break;
    case MemoryMode::kBuffer: {
      cl_int err = CL_SUCCESS;
      arena->buffer_ = clCreateBuffer(device->context(), CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR,
                                      bytes, nullptr, &err);
      if (err != CL_SUCCESS) {
        return ClStatus(err, absl::StrCat("clCreateBuffer(", bytes, " bytes)"));
      }
      break;
    }
  }
  if (chosen != MemoryMode::kBuffer && arena->svm_ == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat("clSVMAlloc of ", bytes, " bytes (",
                                                     std::string(MemoryModeName(chosen)), ") failed on '",
                                                     info.name, "'"));
  }
  return arena;
}

SvmArena::~SvmArena() {
  if (host_mapped_) (void)EndHostAccess();
  clFinish(device_->queue());
  if (svm_ != nullptr) clSVMFree(device_->context(), svm_);
  if (buffer_ != nullptr) clReleaseMemObject(buffer_);
}

absl::StatusOr<float*> SvmArena::BeginHostAccess() {
  if (mode_ == MemoryMode::kFineGrainSvm) {
    if (absl::Status s = device_->Finish(); !s.ok()) return s;
    return host_;
  }
  if (host_mapped_) return host_;
  const size_t bytes = floats_ * sizeof(float);
  if (mode_ == MemoryMode::kCoarseGrainSvm) {
    cl_int err = clEnqueueSVMMap(device_->queue(), CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, svm_,
                                 bytes, 0, nullptr, nullptr);
    if (err != CL_SUCCESS) return ClStatus(err, "clEnqueueSVMMap(arena)");
    host_ = static_cast<float*>(svm_);
  } else {
    cl_int err = CL_SUCCESS;
    void* p = clEnqueueMapBuffer(device_->queue(), buffer_, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE,
                                 0, bytes, 0, nullptr, nullptr, &err);
    if (err != CL_SUCCESS) return ClStatus(err, "clEnqueueMapBuffer(arena)");
    host_ = static_cast<float*>(p);
  }
  host_mapped_ = true;
  return host_;
}

absl::Status SvmArena::EndHostAccess() {
  if (mode_ == MemoryMode::kFineGrainSvm || !host_mapped_) return absl::OkStatus();
  cl_int err = mode_ == MemoryMode::kCoarseGrainSvm
                   ? clEnqueueSVMUnmap(device_->queue(), svm_, 0, nullptr, nullptr)
                   : clEnqueueUnmapMemObject(device_->queue(), buffer_, host_, 0, nullptr,
                                             nullptr);
  host_mapped_ = false;
  host_ = nullptr;
  if (err != CL_SUCCESS) return ClStatus(err, "unmapping the arena");
  return device_->Flush();
}

absl::Status SvmArena::Write(size_t offset, std::span<const float> values) {
  if (offset > floats_ || values.size() > floats_ - offset) {
    return absl::OutOfRangeError(absl::StrCat("arena write of ", values.size(),
                                              " floats at offset ", offset,
                                              " exceeds the arena (", floats_, " floats)"));
  }
  const bool was_mapped = host_mapped_;
  absl::StatusOr<float*> host = BeginHostAccess();
  if (!host.ok()) return host.status();
  std::copy(values.begin(), values.end(), *host + offset);
  return was_mapped ? absl::OkStatus() : EndHostAccess();
}

absl::Status SvmArena::Read(size_t offset, std::span<float> values) {
  if (offset > floats_ || values.size() > floats_ - offset) {
    return absl::OutOfRangeError(absl::StrCat("arena read of ", values.size(),
                                              " floats at offset ", offset,
                                              " exceeds the arena (", floats_, " floats)"));
  }
  const bool was_mapped = host_mapped_;
  absl::StatusOr<float*> host = BeginHostAccess();
  if (!host.ok()) return host.status();
  std::copy(*host + offset, *host + offset + values.size(), values.begin());
  return was_mapped ? absl::OkStatus() : EndHostAccess();
}

absl::Status SvmArena::BindAsKernelArg(cl_kernel kernel, cl_uint index) const {
  if (mode_ == MemoryMode::kBuffer) {
    return ClStatus(clSetKernelArg(kernel, index, sizeof(cl_mem), &buffer_),
                    "clSetKernelArg(arena buffer)");
  }
  return ClStatus(clSetKernelArgSVMPointer(kernel, index, svm_), "clSetKernelArgSVMPointer");
}

}  // namespace psched::executor::opencl
