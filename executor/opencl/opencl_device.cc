#include "executor/opencl/opencl_device.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <unistd.h>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "model/model_hash.h"
#include "spdlog/spdlog.h"

namespace psched::executor::opencl {
namespace {

std::string PlatformString(cl_platform_id platform, cl_platform_info param) {
  size_t size = 0;
  if (clGetPlatformInfo(platform, param, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string value(size, '\0');
  clGetPlatformInfo(platform, param, size, value.data(), nullptr);
  value.resize(std::strlen(value.c_str()));
  return value;
}

std::string DeviceString(cl_device_id device, cl_device_info param) {
  size_t size = 0;
  if (clGetDeviceInfo(device, param, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string value(size, '\0');
  clGetDeviceInfo(device, param, size, value.data(), nullptr);
  value.resize(std::strlen(value.c_str()));
  return value;
}

template <typename T>
T DeviceValue(cl_device_id device, cl_device_info param) {
  T value{};
  if (clGetDeviceInfo(device, param, sizeof(T), &value, nullptr) != CL_SUCCESS) return T{};
  return value;
}

// The highest OpenCL C version the device compiler accepts. OpenCL 3.0 devices list them in
// CL_DEVICE_OPENCL_C_ALL_VERSIONS (PoCL reports "OpenCL C 1.2" as its default but accepts 3.0);
// older devices only have the CL_DEVICE_OPENCL_C_VERSION string "OpenCL C <major>.<minor> ...".
std::string OpenClCVersion(cl_device_id device) {
  size_t size = 0;
  if (clGetDeviceInfo(device, CL_DEVICE_OPENCL_C_ALL_VERSIONS, 0, nullptr, &size) == CL_SUCCESS &&
      size >= sizeof(cl_name_version)) {
    std::vector<cl_name_version> versions(size / sizeof(cl_name_version));
    clGetDeviceInfo(device, CL_DEVICE_OPENCL_C_ALL_VERSIONS, size, versions.data(), nullptr);
    cl_version best = 0;
    for (const cl_name_version& v : versions) best = std::max(best, v.version);
    if (best != 0) {
      return absl::StrCat(CL_VERSION_MAJOR(best), ".", CL_VERSION_MINOR(best));
    }
  }
  std::string text = DeviceString(device, CL_DEVICE_OPENCL_C_VERSION);
  constexpr std::string_view kPrefix = "OpenCL C ";
  if (text.rfind(kPrefix, 0) == 0) {
    std::string rest = text.substr(kPrefix.size());
    return rest.substr(0, rest.find(' '));
  }
  return "1.2";
}

DeviceInfo Describe(cl_platform_id platform, cl_device_id device, int global_index) {
  DeviceInfo info;
  info.platform_name = PlatformString(platform, CL_PLATFORM_NAME);
  info.name = DeviceString(device, CL_DEVICE_NAME);
  info.vendor = DeviceString(device, CL_DEVICE_VENDOR);
  info.version = DeviceString(device, CL_DEVICE_VERSION);
  info.driver_version = DeviceString(device, CL_DRIVER_VERSION);
  info.opencl_c_version = OpenClCVersion(device);
  info.type = DeviceValue<cl_device_type>(device, CL_DEVICE_TYPE);
  info.is_gpu = (info.type & CL_DEVICE_TYPE_GPU) != 0;
  info.compute_units = DeviceValue<cl_uint>(device, CL_DEVICE_MAX_COMPUTE_UNITS);
  info.max_work_group_size = DeviceValue<size_t>(device, CL_DEVICE_MAX_WORK_GROUP_SIZE);
  info.global_memory_bytes = DeviceValue<cl_ulong>(device, CL_DEVICE_GLOBAL_MEM_SIZE);
  // OpenCL 1.x devices fail this query; that correctly reads as "no SVM".
  auto svm = DeviceValue<cl_device_svm_capabilities>(device, CL_DEVICE_SVM_CAPABILITIES);
  info.svm_coarse_grain = (svm & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER) != 0;
  info.svm_fine_grain = (svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER) != 0;
  info.svm_atomics = info.svm_fine_grain && (svm & CL_DEVICE_SVM_ATOMICS) != 0;
  info.global_index = global_index;
  return info;
}

bool ContainsIgnoreCase(const std::string& haystack, const std::string& needle) {
  return absl::StrContains(absl::AsciiStrToLower(haystack), absl::AsciiStrToLower(needle));
}

std::string DescribeAll(const std::vector<DeviceInfo>& devices) {
  if (devices.empty()) return "no OpenCL devices at all";
  std::vector<std::string> lines;
  for (const DeviceInfo& d : devices) {
    lines.push_back(absl::StrCat("#", d.global_index, " '", d.name, "' on '", d.platform_name,
                                 "' (", d.is_gpu ? "GPU" : "not a GPU", ")"));
  }
  return absl::StrCat("devices present: ", absl::StrJoin(lines, ", "));
}

// PoCL and other ICDs report a missing platform as CL_PLATFORM_NOT_FOUND_KHR.
constexpr cl_int kPlatformNotFoundKhr = -1001;

}  // namespace

std::string ClErrorName(cl_int code) {
  const char* name = "";
  switch (code) {
    case CL_SUCCESS:
      name = "CL_SUCCESS";
      break;
    case CL_DEVICE_NOT_FOUND:
      name = "CL_DEVICE_NOT_FOUND";
      break;
    case CL_DEVICE_NOT_AVAILABLE:
      name = "CL_DEVICE_NOT_AVAILABLE";
      break;
    case CL_COMPILER_NOT_AVAILABLE:
      name = "CL_COMPILER_NOT_AVAILABLE";
      break;
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
      name = "CL_MEM_OBJECT_ALLOCATION_FAILURE";
      break;
    case CL_OUT_OF_RESOURCES:
      name = "CL_OUT_OF_RESOURCES";
      break;
    case CL_OUT_OF_HOST_MEMORY:
      name = "CL_OUT_OF_HOST_MEMORY";
      break;
    case CL_BUILD_PROGRAM_FAILURE:
      name = "CL_BUILD_PROGRAM_FAILURE";
      break;
    case CL_MAP_FAILURE:
      name = "CL_MAP_FAILURE";
      break;
    case CL_INVALID_VALUE:
      name = "CL_INVALID_VALUE";
      break;
    case CL_INVALID_DEVICE:
      name = "CL_INVALID_DEVICE";
      break;
    case CL_INVALID_CONTEXT:
      name = "CL_INVALID_CONTEXT";
      break;
    case CL_INVALID_COMMAND_QUEUE:
      name = "CL_INVALID_COMMAND_QUEUE";
      break;
    case CL_INVALID_MEM_OBJECT:
      name = "CL_INVALID_MEM_OBJECT";
      break;
    case CL_INVALID_BUILD_OPTIONS:
      name = "CL_INVALID_BUILD_OPTIONS";
      break;
    case CL_INVALID_PROGRAM:
      name = "CL_INVALID_PROGRAM";
      break;
    case CL_INVALID_PROGRAM_EXECUTABLE:
      name = "CL_INVALID_PROGRAM_EXECUTABLE";
      break;
    case CL_INVALID_KERNEL_NAME:
      name = "CL_INVALID_KERNEL_NAME";
      break;
    case CL_INVALID_KERNEL:
      name = "CL_INVALID_KERNEL";
      break;
    case CL_INVALID_ARG_INDEX:
      name = "CL_INVALID_ARG_INDEX";
      break;
    case CL_INVALID_ARG_VALUE:
      name = "CL_INVALID_ARG_VALUE";
      break;
    case CL_INVALID_ARG_SIZE:
      name = "CL_INVALID_ARG_SIZE";
      break;
    case CL_INVALID_KERNEL_ARGS:
      name = "CL_INVALID_KERNEL_ARGS";
      break;
    case CL_INVALID_WORK_DIMENSION:
      name = "CL_INVALID_WORK_DIMENSION";
      break;
    case CL_INVALID_WORK_GROUP_SIZE:
      name = "CL_INVALID_WORK_GROUP_SIZE";
      break;
    case CL_INVALID_GLOBAL_WORK_SIZE:
      name = "CL_INVALID_GLOBAL_WORK_SIZE";
      break;
    case CL_INVALID_EVENT_WAIT_LIST:
      name = "CL_INVALID_EVENT_WAIT_LIST";
      break;
    case CL_INVALID_OPERATION:
      name = "CL_INVALID_OPERATION";
      break;
    case CL_INVALID_BUFFER_SIZE:
      name = "CL_INVALID_BUFFER_SIZE";
      break;
    case CL_INVALID_PLATFORM:
      name = "CL_INVALID_PLATFORM";
      break;
    case kPlatformNotFoundKhr:
      name = "CL_PLATFORM_NOT_FOUND_KHR";
      break;
    default:
      name = "CL error";
      break;
  }
  return absl::StrCat(name, " (", code, ")");
}

absl::Status ClStatus(cl_int code, const std::string& what) {
  if (code == CL_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", ClErrorName(code)));
}

absl::StatusOr<double> EventDurationUs(cl_event event) { return EventSpanUs(event, event); }

absl::StatusOr<double> EventSpanUs(cl_event first, cl_event last) {
  cl_ulong start = 0, end = 0;
  cl_int err =
      clGetEventProfilingInfo(first, CL_PROFILING_COMMAND_START, sizeof(start), &start, nullptr);
  if (err == CL_SUCCESS) {
    err = clGetEventProfilingInfo(last, CL_PROFILING_COMMAND_END, sizeof(end), &end, nullptr);
  }
  if (err != CL_SUCCESS) return ClStatus(err, "clGetEventProfilingInfo");
  return static_cast<double>(end - start) / 1000.0;
}

absl::StatusOr<DeviceSelector> DeviceSelector::Parse(const std::string& text) {
  DeviceSelector selector;
  if (text.empty()) return selector;
  std::vector<std::string> parts = absl::StrSplit(text, ':');
  if (parts.size() > 3) {
    return absl::InvalidArgumentError(absl::StrCat("OpenCL device selector '", text,
                                                   "': expected 'platform:device[:index]', got ",
                                                   parts.size(), " ':'-separated fields"));
  }
  int index = -1;
  if (parts.size() == 1) {
    if (absl::SimpleAtoi(parts[0], &index)) {
      if (index < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("OpenCL device selector '", text, "': index must be >= 0"));
      }
      selector.index = index;
    } else {
      selector.device = parts[0];
    }
    return selector;
  }
  selector.platform = parts[0];
  selector.device = parts[1];
  if (parts.size() == 3) {
    if (!absl::SimpleAtoi(parts[2], &index) || index < 0) {
      return absl::InvalidArgumentError(absl::StrCat("OpenCL device selector '", text, "': index '",
                                                     parts[2], "' is not a non-negative integer"));
    }
    selector.index = index;
  }
  return selector;
}

absl::StatusOr<std::vector<DeviceInfo>> ListDevices() {
  cl_uint num_platforms = 0;
  cl_int err = clGetPlatformIDs(0, nullptr, &num_platforms);
  if (err == kPlatformNotFoundKhr || (err == CL_SUCCESS && num_platforms == 0)) {
    return absl::UnavailableError(
        "no OpenCL platform: no ICD is installed or none loads (check /etc/OpenCL/vendors)");
  }
  if (err != CL_SUCCESS) return ClStatus(err, "clGetPlatformIDs");
  std::vector<cl_platform_id> platforms(num_platforms);
  clGetPlatformIDs(num_platforms, platforms.data(), nullptr);
  std::vector<DeviceInfo> devices;
  for (cl_platform_id platform : platforms) {
    cl_uint num_devices = 0;
    if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &num_devices) != CL_SUCCESS) {
      continue;
    }
    std::vector<cl_device_id> ids(num_devices);
    clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, num_devices, ids.data(), nullptr);
    for (cl_device_id id : ids) {
      devices.push_back(Describe(platform, id, static_cast<int>(devices.size())));
    }
  }
  return devices;
}

absl::StatusOr<std::unique_ptr<OpenClDevice>> OpenClDevice::Open(const DeviceSelector& selector) {
  absl::StatusOr<std::vector<DeviceInfo>> all = ListDevices();
  if (!all.ok()) return all.status();
  // Re-walk the platforms so the chosen cl_device_id is at hand; ListDevices only describes.
  cl_uint num_platforms = 0;
  clGetPlatformIDs(0, nullptr, &num_platforms);
  std::vector<cl_platform_id> platforms(num_platforms);
  clGetPlatformIDs(num_platforms, platforms.data(), nullptr);
  std::vector<std::pair<cl_device_id, DeviceInfo>> matches;
  int global_index = 0;
  for (cl_platform_id platform : platforms) {
    cl_uint num_devices = 0;
    if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &num_devices) != CL_SUCCESS) {
      continue;
    }
    std::vector<cl_device_id> ids(num_devices);
    clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, num_devices, ids.data(), nullptr);
    for (cl_device_id id : ids) {
      DeviceInfo info = Describe(platform, id, global_index++);
      const bool named = !selector.platform.empty() || !selector.device.empty();
      if (!named && selector.index < 0 && !info.is_gpu) continue;
      if (!ContainsIgnoreCase(info.platform_name, selector.platform)) continue;
      if (!ContainsIgnoreCase(info.name, selector.device)) continue;
      matches.emplace_back(id, std::move(info));
    }
  }
  const size_t pick = selector.index < 0 ? 0 : static_cast<size_t>(selector.index);
  if (pick >= matches.size()) {
    std::string wanted =
        selector.IsDefault()
            ? std::string("a GPU-type device")
            : absl::StrCat("platform~'", selector.platform, "' device~'", selector.device,
                           "' index ", selector.index < 0 ? 0 : selector.index);
    return absl::NotFoundError(absl::StrCat("no OpenCL device matches ", wanted, " (",
                                            matches.size(), " candidates); ", DescribeAll(*all)));
  }
  auto device = std::unique_ptr<OpenClDevice>(new OpenClDevice());
  device->device_ = matches[pick].first;
  device->info_ = std::move(matches[pick].second);
  cl_int err = CL_SUCCESS;
  device->context_ = clCreateContext(nullptr, 1, &device->device_, nullptr, nullptr, &err);
  if (err != CL_SUCCESS) return ClStatus(err, "clCreateContext for " + device->info_.name);
  const cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
  device->queue_ =
      clCreateCommandQueueWithProperties(device->context_, device->device_, props, &err);
  if (err != CL_SUCCESS) {
    return ClStatus(err, "clCreateCommandQueueWithProperties for " + device->info_.name);
  }
  spdlog::info("opencl: opened '{}' on '{}' (OpenCL C {}, SVM coarse={} fine={} atomics={})",
               device->info_.name, device->info_.platform_name, device->info_.opencl_c_version,
               device->info_.svm_coarse_grain, device->info_.svm_fine_grain,
               device->info_.svm_atomics);
  return device;
}

OpenClDevice::~OpenClDevice() {
  if (queue_ != nullptr) {
    clFinish(queue_);
    clReleaseCommandQueue(queue_);
  }
  {
    sync::MutexLock lock(&programs_mu_);
    for (auto& [key, program] : programs_) clReleaseProgram(program);
  }
  if (context_ != nullptr) clReleaseContext(context_);
}

std::string OpenClDevice::StdOption() const {
  if (info_.opencl_c_version.empty() || info_.opencl_c_version[0] < '2') return "";
  return "-cl-std=CL" + info_.opencl_c_version;
}

absl::StatusOr<cl_program> OpenClDevice::BuildProgram(const std::string& key,
                                                      const std::string& source,
                                                      const std::string& options) {
  sync::MutexLock lock(&programs_mu_);
  if (auto it = programs_.find(key); it != programs_.end()) return it->second;
  std::string binary_path;
  if (!program_cache_dir_.empty()) {
    const std::string identity =
        absl::StrCat(info_.platform_name, "\n", info_.name, "\n", info_.version, "\n",
                     info_.driver_version, "\n", options, "\n", source);
    binary_path = absl::StrCat(program_cache_dir_, "/", model::ModelHash(identity), ".clbin");
    if (cl_program cached = LoadCachedBinary(binary_path, options); cached != nullptr) {
      ++programs_from_cache_;
      programs_.emplace(key, cached);
      return cached;
    }
  }
  const char* text = source.c_str();
  const size_t length = source.size();
  cl_int err = CL_SUCCESS;
  cl_program program = clCreateProgramWithSource(context_, 1, &text, &length, &err);
  if (err != CL_SUCCESS) return ClStatus(err, "clCreateProgramWithSource(" + key + ")");
  err = clBuildProgram(program, 1, &device_, options.c_str(), nullptr, nullptr);
  if (err != CL_SUCCESS) {
    size_t log_size = 0;
    clGetProgramBuildInfo(program, device_, CL_PROGRAM_BUILD_LOG, 0, nullptr, &log_size);
    std::string log(log_size, '\0');
    clGetProgramBuildInfo(program, device_, CL_PROGRAM_BUILD_LOG, log_size, log.data(), nullptr);
    clReleaseProgram(program);
    return absl::InternalError(absl::StrCat("building OpenCL program '", key, "' for '", info_.name,
                                            "' with options '", options,
                                            "' failed: ", ClErrorName(err), "\n", log));
  }
  if (!binary_path.empty()) StoreBinary(program, binary_path);
  programs_.emplace(key, program);
  return program;
}

void OpenClDevice::SetProgramCacheDir(std::string dir) {
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
  // PoCL's binary export closes directories ThreadSanitizer's runtime tracks, which trips a
  // CHECK inside that runtime: ThreadSanitizer builds compile every time.
  dir.clear();
#endif
#endif
  sync::MutexLock lock(&programs_mu_);
  program_cache_dir_ = std::move(dir);
}

int OpenClDevice::programs_from_cache() const {
  sync::MutexLock lock(&programs_mu_);
  return programs_from_cache_;
}

cl_program OpenClDevice::LoadCachedBinary(const std::string& path, const std::string& options) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return nullptr;
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (bytes.empty()) return nullptr;
  const size_t size = bytes.size();
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  cl_int binary_status = CL_SUCCESS;
  cl_int err = CL_SUCCESS;
  cl_program program =
      clCreateProgramWithBinary(context_, 1, &device_, &size, &data, &binary_status, &err);
  if (err == CL_SUCCESS && binary_status == CL_SUCCESS &&
      clBuildProgram(program, 1, &device_, options.c_str(), nullptr, nullptr) == CL_SUCCESS) {
    return program;
  }
  if (program != nullptr) clReleaseProgram(program);
  spdlog::warn("OpenCL program binary {} did not load ({}); building from source", path,
               ClErrorName(err != CL_SUCCESS ? err : binary_status));
  return nullptr;
}

void OpenClDevice::StoreBinary(cl_program program, const std::string& path) {
  size_t size = 0;
  if (clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, nullptr) !=
          CL_SUCCESS ||
      size == 0) {
    return;
  }
  std::string bytes(size, '\0');
  unsigned char* data = reinterpret_cast<unsigned char*>(bytes.data());
  if (clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof(data), &data, nullptr) != CL_SUCCESS) {
    return;
  }
  // The directory's parent (pschedd's state dir) must exist: nothing is created elsewhere.
  std::error_code ec;
  std::filesystem::create_directory(program_cache_dir_, ec);
  if (!std::filesystem::is_directory(program_cache_dir_, ec)) {
    spdlog::warn("OpenCL program binaries not cached: {} cannot be created", program_cache_dir_);
    program_cache_dir_.clear();
    return;
  }
  // Written aside and renamed: a reader never sees half a binary.
  const std::string partial = absl::StrCat(path, ".", getpid(), ".partial");
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      spdlog::warn("OpenCL program binary not cached in {}: cannot write", program_cache_dir_);
      std::filesystem::remove(partial, ec);
      return;
    }
  }
  std::filesystem::rename(partial, path, ec);
  if (ec) {
    spdlog::warn("OpenCL program binary not cached: {}", ec.message());
    std::filesystem::remove(partial, ec);
  }
}

absl::Status OpenClDevice::Flush() { return ClStatus(clFlush(queue_), "clFlush"); }
absl::Status OpenClDevice::Finish() { return ClStatus(clFinish(queue_), "clFinish"); }

}  // namespace psched::executor::opencl
