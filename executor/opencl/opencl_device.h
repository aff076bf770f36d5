// OpenClDevice: one OpenCL device opened for psched, with its context, one in-order command
// queue (profiling enabled) and the capabilities the executor depends on (SVM granularity,
// SVM atomics).
//
// Discovery picks GPU-type devices by default; a DeviceSelector may instead name any device by
// platform/device name substring or by index, which is how PoCL (a CPU device) plays the GPU on
// development machines. Every failure (no ICD, no platform, no matching device, build errors)
// is an absl::Status naming what was looked for and what was found.
//
// Ownership: the device owns its context, queue and the programs it has built; kernels,
// arenas and sync objects created from it hold raw pointers and must not outlive it.
// Thread-safety: the queue is an in-order queue; enqueueing from several threads is legal
// OpenCL but breaks the scheduled order, so one thread (the GPU dispatcher) should enqueue.
// BuildProgram is internally synchronised.
#pragma once

#include <CL/cl.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sync/mutex.h"

namespace psched::executor::opencl {

// Which device to open. With every field empty/negative only GPU-type devices qualify; naming
// a platform or device (substring, case-insensitive) or an index lifts the type restriction.
struct DeviceSelector {
  std::string platform;  // substring of CL_PLATFORM_NAME, e.g. "Portable Computing"
  std::string device;    // substring of CL_DEVICE_NAME, e.g. "pthread"
  int index = -1;        // index among the devices matching the names (all types if named)

  // Parses "" (default GPU), "3" (index), "platform:device", "device" or "platform:device:index".
  static absl::StatusOr<DeviceSelector> Parse(const std::string& text);
  bool IsDefault() const { return platform.empty() && device.empty() && index < 0; }
};

// What one OpenCL device reports; enough to decide memory modes and kernel builds.
struct DeviceInfo {
  std::string platform_name;
  std::string name;
  std::string vendor;
  std::string version;           // CL_DEVICE_VERSION
  std::string driver_version;    // CL_DRIVER_VERSION
  std::string opencl_c_version;  // highest OpenCL C the compiler accepts, e.g. "3.0"
  cl_device_type type = 0;
  bool is_gpu = false;
  uint32_t compute_units = 0;
  size_t max_work_group_size = 0;
  uint64_t global_memory_bytes = 0;
  bool svm_coarse_grain = false;  // CL_DEVICE_SVM_COARSE_GRAIN_BUFFER
  bool svm_fine_grain = false;    // CL_DEVICE_SVM_FINE_GRAIN_BUFFER
  bool svm_atomics = false;       // CL_DEVICE_SVM_ATOMICS (with fine-grained buffers)
  int global_index = 0;           // position in ListDevices()
};

// Every device of every platform, in ICD order. Fails (kUnavailable) when no ICD or platform
// is installed.
absl::StatusOr<std::vector<DeviceInfo>> ListDevices();

// Human-readable name of a CL error code, e.g. "CL_BUILD_PROGRAM_FAILURE (-11)".
std::string ClErrorName(cl_int code);
// OK for CL_SUCCESS, else kInternal "<what>: <error name>".
absl::Status ClStatus(cl_int code, const std::string& what);

// Device execution time of a finished command (profiling START to END), in microseconds; the
// per-subtask GPU timing the runtime reports and calibration learns from.
// REQUIRES: the event's queue has profiling enabled (OpenClDevice's does) and it completed.
absl::StatusOr<double> EventDurationUs(cl_event event);
// From `first`'s START to `last`'s END: a kernel enqueued as several launches.
absl::StatusOr<double> EventSpanUs(cl_event first, cl_event last);

class OpenClDevice {
 public:
  // Opens the first device matching `selector`. kNotFound when none matches (the message lists
  // the devices that exist), kUnavailable when OpenCL itself is absent.
  static absl::StatusOr<std::unique_ptr<OpenClDevice>> Open(const DeviceSelector& selector);
  ~OpenClDevice();
  OpenClDevice(const OpenClDevice&) = delete;
  OpenClDevice& operator=(const OpenClDevice&) = delete;

  const DeviceInfo& info() const { return info_; }
  cl_device_id id() const { return device_; }
  cl_context context() const { return context_; }
  cl_command_queue queue() const { return queue_; }

  // Builds `source` with `options` once; later calls with the same key return the cached
  // program. Build errors carry the compiler log. With a program cache directory, the
  // compiled binary is kept there and later builds (in this process or the next) load it
  // instead of compiling: a GPU driver can take seconds per program, as the TFLite GPU
  // delegate's serialization and OpenVINO's model cache also avoid.
  absl::StatusOr<cl_program> BuildProgram(const std::string& key, const std::string& source,
                                          const std::string& options);
  // Where BuildProgram keeps binaries: one file per (platform, device, device and driver
  // version, options, source), named by their SHA-256, so a driver update or a changed
  // kernel never loads a stale binary. A binary that fails to load is rebuilt from source
  // and replaced. An unwritable directory only costs the compile. "" (default): none.
  void SetProgramCacheDir(std::string dir);
  // Programs BuildProgram loaded from a cached binary (tests, logs).
  int programs_from_cache() const;
  // The "-cl-std=CLx.y" option for the highest OpenCL C version the device accepts (2.0+
  // enables C11 atomics for the sync kernels), or "" for 1.x.
  std::string StdOption() const;

  absl::Status Flush();
  absl::Status Finish();

 private:
  OpenClDevice() = default;

  DeviceInfo info_;
  cl_device_id device_ = nullptr;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  // The program from a binary in the cache directory, or null when there is none or it does
  // not load.
  cl_program LoadCachedBinary(const std::string& path, const std::string& options)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(programs_mu_);
  void StoreBinary(cl_program program, const std::string& path)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(programs_mu_);

  mutable sync::Mutex programs_mu_;
  std::map<std::string, cl_program> programs_ ABSL_GUARDED_BY(programs_mu_);
  std::string program_cache_dir_ ABSL_GUARDED_BY(programs_mu_);
  int programs_from_cache_ ABSL_GUARDED_BY(programs_mu_) = 0;
};

}  // namespace psched::executor::opencl
