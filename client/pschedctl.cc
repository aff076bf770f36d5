// pschedctl: the admin CLI of pschedd (noun-verb commands; see docs/api.md and
// `pschedctl --help`). Talks to the daemon through psched::client::Client; `model inspect
// FILE` imports locally and needs no daemon.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numeric>
#include <sstream>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "bench/psched_bench/gantt_svg.h"
#include "client/client.h"
#include "executor/npy.h"
#include "model/inspect.h"
#include "model/onnx_import.h"
#include "model/split.h"
#include "nlohmann/json.hpp"

namespace {

namespace v1 = psched::v1;
using nlohmann::json;

// Thrown inside command handlers only; main turns it into "pschedctl: <message>".
struct CommandError {
  std::string message;
};

void CheckStatus(const absl::Status& status) {
  if (status.ok()) return;
  // The daemon's message names the RPC, the role it needs and who asked.
  throw CommandError{absl::StrCat(
      status.code() == absl::StatusCode::kPermissionDenied ? "permission denied: " : "",
      status.message())};
}

template <typename T>
T Check(absl::StatusOr<T> result) {
  CheckStatus(result.status());
  return std::move(*result);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CommandError{absl::StrCat("cannot read ", path, ": ", std::strerror(errno))};
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

std::string Dims(const google::protobuf::RepeatedField<int64_t>& dims) {
  std::string out = "[";
  for (int i = 0; i < dims.size(); ++i) absl::StrAppend(&out, i ? ", " : "", dims[i]);
  return out + "]";
}

std::string Short(const std::string& id) { return id.substr(0, 12); }

// Left-aligned columns sized to their widest cell.
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

json DeviceJson(const v1::Device& device) {
  return {{"name", device.name()},
          {"kind", device.kind()},
          {"cores", std::vector<int>(device.cores().begin(), device.cores().end())},
          {"opencl_device", device.opencl_device()}};
}

json CacheJson(const v1::CacheStatsResponse& stats) {
  return {{"models", stats.models()}, {"plans", stats.plans()},  {"db_bytes", stats.db_bytes()},
          {"hits", stats.hits()},     {"misses", stats.misses()}, {"path", stats.path()}};
}

json ModelJson(const v1::Model& model) {
  json inputs = json::array(), outputs = json::array();
  for (const auto& t : model.inputs()) {
    inputs.push_back({{"name", t.name()}, {"dims", std::vector<int64_t>(t.dims().begin(), t.dims().end())}});
  }
  for (const auto& t : model.outputs()) {
    outputs.push_back({{"name", t.name()}, {"dims", std::vector<int64_t>(t.dims().begin(), t.dims().end())}});
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
          {"outputs", outputs}};
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
                        {"end_us", s.end_us()}});
  }
  return {{"model_id", plan.model_id()},
          {"scheduler", plan.scheduler()},
          {"makespan_us", plan.makespan_us()},
          {"cached", plan.cached()},
          {"planning_ms", plan.planning_ms()},
          {"platform_fingerprint", plan.platform_fingerprint()},
          {"predictor_version", plan.predictor_version()},
          {"subtasks", subtasks}};
}

std::string Fixed(double value, int digits = 1) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", digits, value);
  return buffer;
}

// The five largest values of a tensor with their flat indices.
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

struct Globals {
  std::string socket;
  double timeout_s = 60;
  std::string output = "table";
  bool json() const { return output == "json"; }
};

psched::client::Client Connect(const Globals& globals) {
  psched::client::ClientOptions options;
  options.socket = globals.socket;
  options.timeout = absl::Seconds(globals.timeout_s);
  return psched::client::Client(options);
}

void PrintJson(const json& value) { std::cout << value.dump(2) << "\n"; }

void CmdStatus(const Globals& g) {
  auto client = Connect(g);
  v1::StatusResponse status = Check(client.Status());
  if (g.json()) {
    json devices = json::array();
    for (const auto& d : status.devices()) devices.push_back(DeviceJson(d));
    PrintJson({{"version", status.version()},
               {"uptime_s", status.uptime_s()},
               {"platform", status.platform()},
               {"executor", status.executor()},
               {"default_scheduler", status.default_scheduler()},
               {"devices", devices},
               {"models", status.models()},
               {"queue_depth", status.queue_depth()},
               {"queue_capacity", status.queue_capacity()},
               {"inferences", status.inferences()},
               {"cache", CacheJson(status.cache())}});
    return;
  }
  std::cout << "pschedd " << status.version() << ", up " << Fixed(status.uptime_s()) << " s\n"
            << "platform:  " << status.platform() << " (executor " << status.executor()
            << ", default scheduler " << status.default_scheduler() << ")\n"
            << "devices:  ";
  for (const auto& d : status.devices()) {
    std::cout << " " << d.name() << "(" << d.kind() << ")";
  }
  std::cout << "\nmodels:    " << status.models() << "\nqueue:     " << status.queue_depth()
            << " / " << status.queue_capacity() << " (" << status.inferences()
            << " inferences served)\ncache:     " << status.cache().plans() << " plans, "
            << status.cache().hits() << " hits, " << status.cache().misses() << " misses, "
            << status.cache().db_bytes() << " bytes in " << status.cache().path() << "\n";
}

void CmdModelAdd(const Globals& g, const std::string& file, const std::string& name,
                 bool synthetic) {
  std::string bytes = ReadFile(file);
  std::string model_name = name.empty() ? std::filesystem::path(file).stem().string() : name;
  auto client = Connect(g);
  v1::RegisterModelResponse response = Check(client.RegisterModel(bytes, model_name, synthetic));
  if (g.json()) {
    json out = ModelJson(response.model());
    out["already_registered"] = response.already_registered();
    PrintJson(out);
  } else {
    std::cout << response.model().id() << "\n";
  }
}

void CmdModelLs(const Globals& g) {
  auto client = Connect(g);
  v1::ListModelsResponse models = Check(client.ListModels());
  if (g.json()) {
    json out = json::array();
    for (const auto& m : models.models()) out.push_back(ModelJson(m));
    PrintJson({{"models", out}});
    return;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& m : models.models()) {
    rows.push_back({Short(m.id()), m.name(), std::to_string(m.ops()),
                    Fixed(static_cast<double>(m.flops()) / 1e9, 2),
                    std::to_string(m.size_bytes()), m.has_weights() ? "yes" : "no",
                    m.inputs_size() > 0 ? Dims(m.inputs(0).dims()) : ""});
  }
  PrintTable({"ID", "NAME", "OPS", "GFLOP", "BYTES", "WEIGHTS", "INPUT"}, rows);
}

void CmdModelRm(const Globals& g, const std::string& id) {
  auto client = Connect(g);
  v1::RemoveModelResponse removed = Check(client.RemoveModel(id));
  if (g.json()) {
    PrintJson({{"id", removed.id()}, {"plans_removed", removed.plans_removed()}});
  } else {
    std::cout << "removed " << removed.id() << " (" << removed.plans_removed()
              << " cached plans)\n";
  }
}

void CmdModelInspect(const Globals& g, const std::string& target) {
  json inspect;
  if (std::filesystem::is_regular_file(target)) {
    psched::model::ImportOptions options;
    psched::model::Graph graph = Check(psched::model::ImportOnnxFile(target, options));
    inspect = psched::model::InspectJson(graph);
  } else {
    auto client = Connect(g);
    v1::Model model = Check(client.GetModel(target));
    inspect = json::parse(model.inspect_json(), nullptr, false);
    if (inspect.is_discarded()) inspect = json::object();
    inspect["id"] = model.id();
    json summary = ModelJson(model);
    inspect["inputs"] = summary["inputs"];
    inspect["outputs"] = summary["outputs"];
  }
  PrintJson(inspect);
}

// The plan as a Gantt chart (psched_gantt): one row per device in platform order.
std::string SvgGantt(const v1::Plan& plan) {
  std::vector<std::string> devices;
  json schedule = json::parse(plan.schedule_json(), nullptr, false);
  if (schedule.is_object() && schedule.contains("devices")) {
    for (const json& name : schedule["devices"]) devices.push_back(name.get<std::string>());
  }
  std::vector<psched::bench::GanttBar> bars;
  for (const auto& s : plan.subtasks()) {
    auto it = std::find(devices.begin(), devices.end(), s.device());
    if (it == devices.end()) it = devices.insert(devices.end(), s.device());
    bars.push_back(
        {s.op(), s.op_id(), static_cast<int>(it - devices.begin()),
         psched::model::SplitAxisFromName(s.strategy()).value_or(psched::model::SplitAxis::kNone),
         s.work_begin(), s.work_end(), s.start_us(), s.end_us()});
  }
  return psched::bench::GanttSvg(
      devices, bars, plan.makespan_us(),
      {.title = absl::StrCat(plan.scheduler(), " plan of model ", plan.model_id().substr(0, 12))});
}

void CmdPlanShow(const Globals& g, const std::string& id, const std::string& scheduler,
                 const std::vector<std::string>& option_list, bool refresh,
                 const std::string& svg_path) {
  std::map<std::string, std::string> options;
  for (const std::string& option : option_list) {
    std::vector<std::string> kv = absl::StrSplit(option, absl::MaxSplits('=', 1));
    if (kv.size() != 2) throw CommandError{absl::StrCat("option '", option, "' is not KEY=VALUE")};
    options[kv[0]] = kv[1];
  }
  auto client = Connect(g);
  auto progress = [](const v1::PlanProgress& p) {
    std::fprintf(stderr, "planning: %s (%.0f ms)\n", p.stage().c_str(), p.elapsed_ms());
  };
  v1::Plan plan = Check(client.GetPlan(id, scheduler, options, refresh, progress));
  if (!svg_path.empty()) {
    std::ofstream out(svg_path);
    out << SvgGantt(plan);
    if (!out) throw CommandError{absl::StrCat("cannot write ", svg_path)};
  }
  if (g.json()) {
    PrintJson(PlanJson(plan));
    return;
  }
  std::cout << "model " << plan.model_id() << "\nscheduler " << plan.scheduler() << ", makespan "
            << Fixed(plan.makespan_us()) << " us, planned in " << Fixed(plan.planning_ms(), 2)
            << " ms" << (plan.cached() ? " (cached)" : "") << "\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& s : plan.subtasks()) {
    rows.push_back({s.op(), s.device(), s.strategy(),
                    absl::StrCat("[", s.work_begin(), ", ", s.work_end(), ")"),
                    Fixed(s.start_us()), Fixed(s.end_us())});
  }
  PrintTable({"OP", "DEVICE", "STRATEGY", "WORK", "START_US", "END_US"}, rows);
}

// Chrome trace-event JSON (chrome://tracing, ui.perfetto.dev): one measured event per
// subtask on its device's track and, when a plan ran, the predicted subtask on a
// "<device> (predicted)" track beside it.
json ChromeTrace(const v1::InferResponse& response) {
  std::vector<std::string> devices;
  for (const auto& s : response.trace()) {
    if (std::find(devices.begin(), devices.end(), s.device()) == devices.end()) {
      devices.push_back(s.device());
    }
  }
  const bool planned = response.predicted_makespan_us() > 0;
  const int num_devices = static_cast<int>(devices.size());
  json events = json::array();
  for (int d = 0; d < num_devices; ++d) {
    events.push_back({{"ph", "M"},
                      {"name", "thread_name"},
                      {"pid", 1},
                      {"tid", d},
                      {"args", {{"name", devices[static_cast<size_t>(d)]}}}});
    if (planned) {
      events.push_back({{"ph", "M"},
                        {"name", "thread_name"},
                        {"pid", 1},
                        {"tid", num_devices + d},
                        {"args", {{"name", devices[static_cast<size_t>(d)] + " (predicted)"}}}});
    }
  }
  double measured_us = 0;
  for (const auto& s : response.trace()) {
    const int tid =
        static_cast<int>(std::find(devices.begin(), devices.end(), s.device()) - devices.begin());
    json args = {
        {"op", s.op()}, {"strategy", s.strategy()}, {"range", {s.work_begin(), s.work_end()}}};
    if (s.device_us() >= 0) args["device_us"] = s.device_us();
    if (s.predicted_start_us() >= 0) {
      args["predicted_start_us"] = s.predicted_start_us();
      args["predicted_end_us"] = s.predicted_end_us();
      events.push_back({{"ph", "X"},
                        {"name", s.op()},
                        {"cat", "predicted"},
                        {"pid", 1},
                        {"tid", num_devices + tid},
                        {"ts", s.predicted_start_us()},
                        {"dur", s.predicted_end_us() - s.predicted_start_us()},
                        {"args", args}});
    }
    events.push_back({{"ph", "X"},
                      {"name", s.op()},
                      {"cat", "measured"},
                      {"pid", 1},
                      {"tid", tid},
                      {"ts", s.start_us()},
                      {"dur", s.end_us() - s.start_us()},
                      {"args", std::move(args)}});
    measured_us = std::max(measured_us, s.end_us());
  }
  json other = {{"executor", response.executor()}, {"measured_makespan_us", measured_us}};
  if (planned) {
    other["scheduler"] = response.scheduler();
    other["predicted_makespan_us"] = response.predicted_makespan_us();
  }
  return {{"traceEvents", std::move(events)},
          {"displayTimeUnit", "ms"},
          {"otherData", std::move(other)}};
}

void CmdInfer(const Globals& g, const std::string& id, const std::string& input_path,
              const std::string& output_path, int repeat, const std::string& trace_path,
              const std::string& scheduler) {
  if (repeat < 1) throw CommandError{"--repeat must be at least 1"};
  v1::InferRequest request;
  request.set_model_id(id);
  request.set_scheduler(scheduler);
  request.set_want_trace(!trace_path.empty());
  if (!input_path.empty()) {
    psched::executor::NpyArray array = Check(psched::executor::ReadNpy(input_path));
    v1::Tensor* tensor = request.add_inputs();
    for (int64_t d : array.shape) tensor->add_dims(d);
    tensor->set_data(std::string(reinterpret_cast<const char*>(array.data.data()),
                                 array.data.size() * sizeof(float)));
  }
  auto client = Connect(g);
  std::vector<double> latencies, client_latencies;
  v1::InferResponse response;
  for (int i = 0; i < repeat; ++i) {
    auto start = std::chrono::steady_clock::now();
    response = Check(client.Infer(request));
    client_latencies.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
            .count());
    latencies.push_back(response.latency_us());
  }
  auto mean = [](const std::vector<double>& v) {
    return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  };
  json outputs = json::array();
  for (const v1::Tensor& t : response.outputs()) {
    std::vector<float> values(t.data().size() / sizeof(float));
    std::memcpy(values.data(), t.data().data(), values.size() * sizeof(float));
    outputs.push_back({{"name", t.name()},
                       {"dims", std::vector<int64_t>(t.dims().begin(), t.dims().end())},
                       {"top5", Top5(values)}});
  }
  if (!output_path.empty() && response.outputs_size() > 0) {
    const v1::Tensor& t = response.outputs(0);
    psched::executor::NpyArray array;
    array.shape.assign(t.dims().begin(), t.dims().end());
    array.data.resize(t.data().size() / sizeof(float));
    std::memcpy(array.data.data(), t.data().data(), array.data.size() * sizeof(float));
    CheckStatus(psched::executor::WriteNpy(output_path, array));
  }
  if (!trace_path.empty()) {
    std::ofstream out(trace_path);
    out << ChromeTrace(response).dump() << "\n";
    if (!out) throw CommandError{absl::StrCat("cannot write ", trace_path)};
  }
  if (g.json()) {
    PrintJson({{"latency_us", mean(latencies)},
               {"client_latency_us", mean(client_latencies)},
               {"execute_us", response.execute_us()},
               {"queue_us", response.queue_us()},
               {"executor", response.executor()},
               {"scheduler", response.scheduler()},
               {"predicted_makespan_us", response.predicted_makespan_us()},
               {"repeat", repeat},
               {"outputs", outputs}});
    return;
  }
  std::cout << "latency " << Fixed(mean(latencies)) << " us in the daemon, "
            << Fixed(mean(client_latencies)) << " us at the client (mean of " << repeat
            << "), executor " << response.executor() << " " << Fixed(response.execute_us())
            << " us\n";
  if (response.predicted_makespan_us() > 0) {
    std::cout << "plan " << response.scheduler() << ": measured " << Fixed(response.execute_us())
              << " us, predicted " << Fixed(response.predicted_makespan_us()) << " us (x"
              << Fixed(response.execute_us() / response.predicted_makespan_us(), 2) << ")\n";
  }
  for (const json& o : outputs) {
    std::cout << o["name"].get<std::string>() << " " << o["dims"].dump() << " top-5:";
    for (const json& entry : o["top5"]) {
      std::cout << " " << entry[0].get<size_t>() << "=" << Fixed(entry[1].get<double>(), 4);
    }
    std::cout << "\n";
  }
}

void CmdCalibrate(const Globals& g, double budget_s) {
  auto client = Connect(g);
  auto progress = [](const v1::CalibrationProgress& p) {
    if (p.finished()) {
      std::fprintf(stderr, "[%s] done: %d samples, %d skipped in %.1f s\n", p.device().c_str(),
                   p.cases_done(), p.cases_skipped(), p.elapsed_s());
    } else if (p.cases_done() == 0) {
      std::fprintf(stderr, "[%s] timing for %.1f s\n", p.device().c_str(), p.budget_s());
    }
  };
  v1::CalibrationResult result = Check(client.Calibrate(budget_s, progress));
  if (g.json()) {
    json report = json::parse(result.report_json(), nullptr, false);
    PrintJson({{"predictor_version", result.predictor_version()},
               {"samples", result.samples()},
               {"skipped_devices", std::vector<std::string>(result.skipped_devices().begin(),
                                                            result.skipped_devices().end())},
               {"report", report.is_discarded() ? json() : report}});
    return;
  }
  for (const std::string& skipped : result.skipped_devices()) {
    std::cout << "skipped " << skipped << "\n";
  }
  std::cout << result.samples() << " samples; held-out errors:\n"
            << result.error_table() << "plans now use predictor " << result.predictor_version()
            << "\n";
}

void CmdCacheStats(const Globals& g) {
  auto client = Connect(g);
  v1::CacheStatsResponse stats = Check(client.CacheStats());
  if (g.json()) {
    PrintJson(CacheJson(stats));
    return;
  }
  PrintTable({"MODELS", "PLANS", "HITS", "MISSES", "BYTES", "PATH"},
             {{std::to_string(stats.models()), std::to_string(stats.plans()),
               std::to_string(stats.hits()), std::to_string(stats.misses()),
               std::to_string(stats.db_bytes()), stats.path()}});
}

void CmdCacheLs(const Globals& g) {
  auto client = Connect(g);
  v1::ListCachedPlansResponse plans = Check(client.ListCachedPlans());
  if (g.json()) {
    json out = json::array();
    for (const auto& p : plans.plans()) {
      out.push_back({{"model_id", p.model_id()},
                     {"scheduler", p.scheduler()},
                     {"scheduler_config", p.scheduler_config()},
                     {"platform_fingerprint", p.platform_fingerprint()},
                     {"predictor_version", p.predictor_version()},
                     {"makespan_us", p.makespan_us()},
                     {"planning_ms", p.planning_ms()},
                     {"hits", p.hits()},
                     {"created_unix_s", p.created_unix_s()}});
    }
    PrintJson({{"plans", out}});
    return;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& p : plans.plans()) {
    rows.push_back({Short(p.model_id()), p.scheduler_config(), Fixed(p.makespan_us()),
                    Fixed(p.planning_ms(), 2), std::to_string(p.hits())});
  }
  PrintTable({"MODEL", "SCHEDULER", "MAKESPAN_US", "PLANNING_MS", "HITS"}, rows);
}

void CmdCachePurge(const Globals& g, bool all) {
  auto client = Connect(g);
  v1::PurgeCacheResponse purged = Check(client.PurgeCache(all));
  if (g.json()) {
    PrintJson({{"plans_removed", purged.plans_removed()},
               {"models_removed", purged.models_removed()}});
  } else {
    std::cout << "removed " << purged.plans_removed() << " plans and " << purged.models_removed()
              << " models\n";
  }
}

void CmdCacheVerify(const Globals& g) {
  auto client = Connect(g);
  v1::VerifyCacheResponse report = Check(client.VerifyCache());
  if (g.json()) {
    json problems = json::array();
    for (const auto& p : report.problems()) {
      problems.push_back({{"model_id", p.model_id()},
                          {"scheduler_config", p.scheduler_config()},
                          {"reason", p.reason()}});
    }
    PrintJson({{"models_checked", report.models_checked()},
               {"plans_checked", report.plans_checked()},
               {"plans_skipped", report.plans_skipped()},
               {"problems", problems}});
  } else {
    std::cout << "checked " << report.models_checked() << " models and " << report.plans_checked()
              << " plans (" << report.plans_skipped()
              << " plans of other platforms or predictors skipped)\n";
    std::vector<std::vector<std::string>> rows;
    for (const auto& p : report.problems()) {
      rows.push_back({Short(p.model_id()),
                      p.scheduler_config().empty() ? "(model bytes)" : p.scheduler_config(),
                      p.reason()});
    }
    if (!rows.empty()) PrintTable({"MODEL", "WHAT", "PROBLEM"}, rows);
  }
  if (report.problems_size() > 0) {
    throw CommandError{absl::StrCat(
        report.problems_size(),
        " problem(s): damaged models are quarantined until their original file is added "
        "again; invalid plans are recomputed when next asked for")};
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"pschedctl: control pschedd (models, plans, inference, cache)"};
  app.require_subcommand(1);
  Globals g;
  const char* env_socket = std::getenv("PSCHED_SOCKET");
  g.socket = env_socket != nullptr ? env_socket : "/run/pschedd/pschedd.sock";
  app.add_option("--socket", g.socket, "pschedd's unix socket ($PSCHED_SOCKET)")
      ->capture_default_str();
  app.add_option("--timeout", g.timeout_s, "seconds each call may take")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("-o,--output", g.output, "table or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"table", "json"}));

  std::function<void()> action;
  app.add_subcommand("status", "daemon version, uptime, devices, queue and cache")
      ->callback([&] { action = [&] { CmdStatus(g); }; });

  CLI::App* model = app.add_subcommand("model", "register, list, remove and inspect models");
  model->require_subcommand(1);
  std::string file, name, id;
  bool synthetic = false;
  CLI::App* add = model->add_subcommand("add", "register an ONNX model; prints its id");
  add->add_option("FILE", file, "ONNX file")->required()->check(CLI::ExistingFile);
  add->add_option("--name", name, "model name (default: the file's stem)");
  add->add_flag("--synthetic-weights", synthetic, "fill absent weights so the model can run");
  add->callback([&] { action = [&] { CmdModelAdd(g, file, name, synthetic); }; });
  model->add_subcommand("ls", "list registered models")->callback([&] {
    action = [&] { CmdModelLs(g); };
  });
  CLI::App* rm = model->add_subcommand("rm", "remove a model and its cached plans");
  rm->add_option("ID", id, "model id or unique prefix")->required();
  rm->callback([&] { action = [&] { CmdModelRm(g, id); }; });
  CLI::App* inspect = model->add_subcommand("inspect", "graph summary of a file or model id");
  inspect->add_option("TARGET", file, "ONNX file (imported locally) or model id")->required();
  inspect->callback([&] { action = [&] { CmdModelInspect(g, file); }; });

  CLI::App* plan = app.add_subcommand("plan", "partition-aware schedules");
  plan->require_subcommand(1);
  std::string scheduler, svg;
  std::vector<std::string> plan_options;
  bool refresh = false;
  CLI::App* show = plan->add_subcommand("show", "get (or compute) the plan of a model");
  show->add_option("ID", id, "model id or unique prefix")->required();
  show->add_option("--scheduler", scheduler, "scheduler name (default: the daemon's)");
  show->add_option("--option", plan_options, "scheduler option KEY=VALUE (repeatable)");
  show->add_flag("--refresh", refresh, "recompute even if cached");
  show->add_option("--svg", svg, "also write a Gantt chart of the plan");
  show->callback([&] {
    action = [&] { CmdPlanShow(g, id, scheduler, plan_options, refresh, svg); };
  });

  std::string input, output, trace;
  int repeat = 1;
  CLI::App* infer = app.add_subcommand("infer", "run one or more inferences");
  infer->add_option("ID", id, "model id or unique prefix")->required();
  infer->add_option("--input", input, "input .npy in the model's declared shape (default: zeros)")
      ->check(CLI::ExistingFile);
  infer->add_option("--output", output, "write the first output as .npy");
  infer->add_option("--repeat", repeat, "number of inferences")->capture_default_str();
  infer->add_option("--trace", trace, "write per-subtask timings (Chrome trace JSON)");
  infer->add_option("--scheduler", scheduler, "plan to execute (default: the daemon's)");
  infer->callback([&] {
    action = [&] { CmdInfer(g, id, input, output, repeat, trace, scheduler); };
  });

  double budget_s = 3;
  CLI::App* calibrate = app.add_subcommand(
      "calibrate", "time the registered models' ops on the daemon's devices and plan with the fit");
  calibrate->add_option("--budget-s", budget_s, "timing budget per device, seconds (0, 15]")
      ->capture_default_str();
  calibrate->callback([&] { action = [&] { CmdCalibrate(g, budget_s); }; });

  CLI::App* cache = app.add_subcommand("cache", "the plan cache");
  cache->require_subcommand(1);
  bool all = false;
  cache->add_subcommand("stats", "counts and size")->callback([&] {
    action = [&] { CmdCacheStats(g); };
  });
  cache->add_subcommand("ls", "cached plans")->callback([&] { action = [&] { CmdCacheLs(g); }; });
  CLI::App* purge = cache->add_subcommand("purge", "delete cached plans");
  purge->add_flag("--all", all, "also delete every registered model");
  purge->callback([&] { action = [&] { CmdCachePurge(g, all); }; });
  cache->add_subcommand("verify", "hash every stored model against its id, validate the plans")
      ->callback([&] { action = [&] { CmdCacheVerify(g); }; });

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version are "errors" that exit 0; every real one exits 1 as documented
    // (CLI11's own codes, 105-109, would leak its internals into scripts).
    return app.exit(e) == 0 ? 0 : 1;
  }
  try {
    action();
  } catch (const CommandError& e) {
    std::fprintf(stderr, "pschedctl: %s\n", e.message.c_str());
    return 1;
  }
  return 0;
}
