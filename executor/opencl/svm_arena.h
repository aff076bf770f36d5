// SvmArena: one block of f32 memory that the GPU (through OpenCL) and the CPU (through plain
// float*) both read and write in place, so tensors never move between devices.
//
// Three memory modes, best first:
//  - kFineGrainSvm: clSVMAlloc(CL_MEM_SVM_FINE_GRAIN_BUFFER [| CL_MEM_SVM_ATOMICS]). The host
//    pointer is valid at all times and coherent with running kernels; with SVM atomics, host
//    std::atomic_ref and kernel atomics on the same word synchronise. This is the mode the
//    paper's co-execution relies on.
//  - kCoarseGrainSvm: clSVMAlloc without the fine-grain flag. Same addresses on both sides, but
//    the host must bracket its accesses with BeginHostAccess/EndHostAccess (SVM map/unmap), and
//    kernels must not run on the arena meanwhile: CPU and GPU take turns.
//  - kBuffer: a cl_mem with CL_MEM_ALLOC_HOST_PTR, mapped for host access (same rules as
//    coarse SVM; the mapped pointer may differ between accesses on some drivers).
// Kernels always receive the arena base and element offsets, so one kernel binary serves all
// three modes.
//
// Ownership: the arena owns its allocation and must not outlive its OpenClDevice.
// Thread-safety: the arena itself is not synchronised. In fine-grain mode disjoint regions may
// be written concurrently by host threads and kernels; Begin/EndHostAccess must be called from
// the GPU dispatcher thread (they enqueue on the device queue).
#pragma once

#include <CL/cl.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "executor/opencl/opencl_device.h"

namespace psched::executor::opencl {

enum class MemoryMode { kFineGrainSvm, kCoarseGrainSvm, kBuffer };

// "fine_grain_svm", "coarse_grain_svm", "buffer".
std::string_view MemoryModeName(MemoryMode mode);
std::optional<MemoryMode> MemoryModeFromName(std::string_view name);
// The best mode `info` supports (fine > coarse > buffer).
MemoryMode BestMemoryMode(const DeviceInfo& info);

class SvmArena {
 public:
  // Allocates `floats` f32 elements (at least one) in `mode`, or in BestMemoryMode when unset.
  // kFailedPrecondition when the device lacks the requested mode.
  static absl::StatusOr<std::unique_ptr<SvmArena>> Create(OpenClDevice* device, size_t floats,
                                                          std::optional<MemoryMode> mode = {});
  ~SvmArena();
  SvmArena(const SvmArena&) = delete;
  SvmArena& operator=(const SvmArena&) = delete;

  MemoryMode mode() const { return mode_; }
  size_t size() const { return floats_; }
  // True in fine-grain mode with SVM atomics: host and kernel atomics on the arena interoperate.
  bool has_atomics() const { return atomics_; }
  // Host pointer usable without BeginHostAccess (fine-grain SVM only).
  bool host_coherent() const { return mode_ == MemoryMode::kFineGrainSvm; }

  // The host view of the arena. Always valid in fine-grain mode; otherwise only between
  // BeginHostAccess and EndHostAccess (nullptr outside).
  float* host_data() const { return host_; }

  // Makes the arena readable and writable by the host: waits for queued kernels, then maps
  // (no-op in fine-grain mode beyond the wait). Returns the host pointer.
  absl::StatusOr<float*> BeginHostAccess();
  // Hands the arena back to kernels (unmap). No-op in fine-grain mode.
  absl::Status EndHostAccess();

  // Copies into / out of the arena at element `offset`, mapping around the copy as needed.
  // kOutOfRange when the range exceeds the arena.
  absl::Status Write(size_t offset, std::span<const float> values);
  absl::Status Read(size_t offset, std::span<float> values);

  // Sets argument `index` of `kernel` to the arena base (SVM pointer or cl_mem).
  absl::Status BindAsKernelArg(cl_kernel kernel, cl_uint index) const;

 private:
  SvmArena(OpenClDevice* device, size_t floats, MemoryMode mode)
      : device_(device), floats_(floats), mode_(mode) {}

  OpenClDevice* device_;
  size_t floats_;
  MemoryMode mode_;
  bool atomics_ = false;
  void* svm_ = nullptr;     // SVM modes
  cl_mem buffer_ = nullptr; // kBuffer
  float* host_ = nullptr;
  bool host_mapped_ = false;
};

}  // namespace psched::executor::opencl
