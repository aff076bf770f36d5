// The devices a schedule is computed for.
//
// A Platform lists logical devices (a CPU core cluster or a GPU). Each device runs one
// subtask at a time. Devices that share a memory domain exchange tensors for free (the
// unified-memory case of the paper); an edge whose producer and consumer run in different
// domains costs bytes / transfer_bytes_per_us. Platform is a plain value type: it owns its
// data and is safe to share read-only across threads.
//
// The type sits below the predictor in the build (library psched_platform) because a
// predictor profile describes both the devices and their latency model.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace psched::platform {

enum class DeviceKind { kCpu, kGpu };

std::string_view DeviceKindName(DeviceKind kind);

struct DeviceSpec {
  std::string name;  // "gpu", "cpu.big", "cpu.l", "cpu.0", ...: unique within a platform
  DeviceKind kind = DeviceKind::kCpu;
  int memory_domain = 0;
  // Cores a CPU device pins its threads to, one thread per core (a cluster device runs each
  // subtask on cpu_cores.size() threads); empty: any core, one thread.
  std::vector<int> cpu_cores;
  std::string opencl_device;  // OpenCL device name for a GPU; empty: the default one
};

struct Platform {
  std::string name;
  std::vector<DeviceSpec> devices;
  // Bandwidth of a copy between memory domains. Only used when devices differ in domain.
  double transfer_bytes_per_us = 1.0e4;
  // Bytes of a cache line devices keep coherent between them; 0: not modelled. Activations are
  // NHWC f32, so two devices writing the output-channel slices of one op write the same line of
  // every pixel unless the split falls on a line boundary; planners then split output channels
  // in multiples of cache_line_bytes / 4 (scheduler/problem.h).
  int cache_line_bytes = 0;

  // A stable text identity of everything that changes a schedule (names, kinds, domains,
  // a CPU cluster's thread count, bandwidth, the cache line); part of the plan cache key.
  std::string Fingerprint() const;
  std::optional<int> DeviceIndex(std::string_view device_name) const;
  int num_devices() const { return static_cast<int>(devices.size()); }
};

}  // namespace psched::platform
