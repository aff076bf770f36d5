#include "client/pschedctl/output.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <numeric>

#include "absl/strings/str_cat.h"

namespace psched::pschedctl {

std::string Dims(const google::protobuf::RepeatedField<int64_t>& dims) {
  std::string out = "[";
  for (int i = 0; i < dims.size(); ++i) absl::StrAppend(&out, i ? ", " : "", dims[i]);
  return out + "]";
}

std::string Short(const std::string& id) { return id.substr(0, 12); }

std::string Fixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", digits, value);
  return buffer;
}

void PrintTable(const std::vector<std::string>& header,
                const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(header.size());
  for (size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size() && c < width.size(); ++c) {
      width[c] = std::max(width[c], row[c].size());
    }
  }
  auto print_row = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(width[c] - row[c].size() + 2, ' ');
    }
    std::cout << line << "\n";
  };
  print_row(header);
  for (const auto& row : rows) print_row(row);
}

void PrintJson(const json& value) { std::cout << value.dump(2) << "\n"; }

json DeviceJson(const v1::Device& device) {
  return {{"name", device.name()},
          {"kind", device.kind()},
          {"cores", std::vector<int>(device.cores().begin(), device.cores().end())},
          {"opencl_device", device.opencl_device()}};
}

json CacheJson(const v1::CacheStatsResponse& stats) {
  return {{"models", stats.models()}, {"plans", stats.plans()},   {"db_bytes", stats.db_bytes()},
          {"hits", stats.hits()},     {"misses", stats.misses()}, {"path", stats.path()}};
}

json ModelJson(const v1::Model& model) {
  json inputs = json::array(), outputs = json::array();
  for (const auto& t : model.inputs()) {
    inputs.push_back(
        {{"name", t.name()}, {"dims", std::vector<int64_t>(t.dims().begin(), t.dims().end())}});
  }
  for (const auto& t : model.outputs()) {
    outputs.push_back(
        {{"name", t.name()}, {"dims", std::vector<int64_t>(t.dims().begin(), t.dims().end())}});
  }
  json input_shapes = json::object();
  for (const auto& shape : model.input_shapes()) {
    input_shapes[shape.name()] = std::vector<int64_t>(shape.dims().begin(), shape.dims().end());
  }
  return {{"id", model.id()},
          {"name", model.name()},
          {"size_bytes", model.size_bytes()},
          {"ops", model.ops()},
          {"flops", model.flops()},
          {"params", model.params()},
          {"has_weights", model.has_weights()},
          {"registered_unix_s", model.registered_unix_s()},
          {"inputs", inputs},
          {"outputs", outputs},
          {"input_shapes", input_shapes}};
}

json PlanJson(const v1::Plan& plan) {
  json subtasks = json::array();
  for (const v1::Subtask& s : plan.subtasks()) {
    subtasks.push_back({{"op", s.op()},
                        {"op_id", s.op_id()},
                        {"device", s.device()},
                        {"strategy", s.strategy()},
                        {"work", {s.work_begin(), s.work_end()}},
                        {"start_us", s.start_us()},
                        {"end_us", s.end_us()},
                        {"measured_us", s.measured_us()},
                        {"fallback", s.fallback()}});
  }
  return {{"model_id", plan.model_id()},
          {"scheduler", plan.scheduler()},
          {"makespan_us", plan.makespan_us()},
          {"cached", plan.cached()},
          {"imported", plan.imported()},
          {"planning_ms", plan.planning_ms()},
          {"platform_fingerprint", plan.platform_fingerprint()},
          {"predictor_version", plan.predictor_version()},
          {"measured_runs", plan.measured_runs()},
          {"measured_makespan_us", plan.measured_makespan_us()},
          {"memory", MemoryJson(plan.memory())},
          {"subtasks", subtasks}};
}

json ResourcesJson(const v1::ResourceUsage& r) {
  return {{"cache_bytes", r.cache_bytes()},
          {"cache_max_bytes", r.cache_max_bytes()},
          {"caller_models", r.caller_models()},
          {"caller_model_bytes", r.caller_model_bytes()},
          {"max_models_per_user", r.max_models_per_user()},
          {"max_model_bytes_per_user", r.max_model_bytes_per_user()},
          {"quota_exempt", r.quota_exempt()},
          {"loaded_models", r.loaded_models()},
          {"max_loaded_models", r.max_loaded_models()},
          {"loaded_bytes", r.loaded_bytes()},
          {"max_loaded_bytes", r.max_loaded_bytes()},
          {"max_plan_memory_bytes", r.max_plan_memory_bytes()},
          {"planning", r.planning()},
          {"planning_queued", r.planning_queued()},
          {"max_concurrent_plans", r.max_concurrent_plans()},
          {"max_planning_s", r.max_planning_s()}};
}

json MemoryJson(const v1::PlanMemory& memory) {
  json largest = json::array();
  for (const v1::TensorBytes& t : memory.largest_tensors()) {
    largest.push_back({{"name", t.name()}, {"bytes", t.bytes()}});
  }
  return {{"peak_bytes", memory.peak_bytes()},
          {"activation_bytes", memory.activation_bytes()},
          {"weight_bytes", memory.weight_bytes()},
          {"io_bytes", memory.io_bytes()},
          {"largest_tensors", largest}};
}

std::string HumanBytes(int64_t bytes) {
  constexpr double kKiB = 1024;
  char text[32];
  if (bytes >= kKiB * kKiB * kKiB) {
    std::snprintf(text, sizeof(text), "%.1f GiB", static_cast<double>(bytes) / (kKiB * kKiB * kKiB));
  } else if (bytes >= kKiB * kKiB) {
    std::snprintf(text, sizeof(text), "%.1f MiB", static_cast<double>(bytes) / (kKiB * kKiB));
  } else if (bytes >= kKiB) {
    std::snprintf(text, sizeof(text), "%.1f KiB", static_cast<double>(bytes) / kKiB);
  } else {
    std::snprintf(text, sizeof(text), "%lld bytes", static_cast<long long>(bytes));
  }
  return text;
}

json Top5(const std::vector<float>& values) {
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  size_t k = std::min<size_t>(5, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<ptrdiff_t>(k), order.end(),
                    [&](size_t a, size_t b) { return values[a] > values[b]; });
  json top = json::array();
  for (size_t i = 0; i < k; ++i) top.push_back({order[i], values[order[i]]});
  return top;
}

}  // namespace psched::pschedctl
