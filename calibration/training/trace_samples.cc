#include "calibration/training/trace_samples.h"

#include <map>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "model/split.h"
#include "predictor/op_config.h"

namespace psched::calibration {

using nlohmann::json;

absl::StatusOr<std::vector<predictor::host_model::CalibrationSample>> SamplesFromTrace(
    const json& trace, const model::Graph& graph) {
  if (!trace.is_object()) return absl::InvalidArgumentError("trace: expected a JSON object");
  if (const auto other = trace.find("otherData"); other != trace.end() && other->is_object()) {
    const auto name = other->find("graph");
    if (name != other->end() && name->is_string() && name->get<std::string>() != graph.name) {
      return absl::InvalidArgumentError(absl::StrCat(
          "trace: taken on graph '", name->get<std::string>(), "', not '", graph.name, "'"));
    }
  }
  const auto events = trace.find("traceEvents");
  if (events == trace.end() || !events->is_array()) {
    return absl::InvalidArgumentError("trace: 'traceEvents' missing or not an array");
  }
  std::map<int64_t, std::string> track_device;
  for (const json& e : *events) {
    if (e.is_object() && e.value("ph", "") == "M" && e.value("name", "") == "thread_name" &&
        e.contains("tid") && e["tid"].is_number_integer() && e.contains("args") &&
        e["args"].is_object() && e["args"].contains("name") && e["args"]["name"].is_string()) {
      track_device[e["tid"].get<int64_t>()] = e["args"]["name"].get<std::string>();
    }
  }
  const model::ConcatAliasing aliasing = model::AliasConcatInputs(graph);
  std::vector<predictor::host_model::CalibrationSample> samples;
  for (size_t i = 0; i < events->size(); ++i) {
    const json& e = (*events)[i];
    if (!e.is_object() || e.value("ph", "") != "X" || e.value("cat", "") != "measured") continue;
    auto bad = [i](std::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat("trace event ", i, ": ", std::string(why)));
    };
    const auto tid = e.find("tid");
    if (tid == e.end() || !tid->is_number_integer()) return bad("'tid' missing");
    const auto device = track_device.find(tid->get<int64_t>());
    if (device == track_device.end()) return bad("its track has no thread_name");
    const auto dur = e.find("dur");
    if (dur == e.end() || !dur->is_number()) return bad("'dur' missing or not a number");
    const auto args = e.find("args");
    if (args == e.end() || !args->is_object()) return bad("'args' missing");
    const auto op = args->find("op_id");
    if (op == args->end() || !op->is_number_integer() || op->get<int64_t>() < 0 ||
        op->get<int64_t>() >= static_cast<int64_t>(graph.ops.size())) {
      return bad(absl::StrCat("'op_id' missing or not an op of '", graph.name, "' (",
                              graph.ops.size(), " ops)"));
    }
    const auto id = static_cast<model::OpId>(op->get<int64_t>());
    const auto axis_name = args->find("axis");
    const std::optional<model::SplitAxis> axis =
        axis_name != args->end() && axis_name->is_string()
            ? model::SplitAxisFromName(axis_name->get<std::string>())
            : std::nullopt;
    if (!axis.has_value()) return bad("'axis' missing or not a split axis name");
    int64_t begin = 0, end = 1;
    if (*axis != model::SplitAxis::kNone) {
      const auto range = args->find("range");
      if (range == args->end() || !range->is_array() || range->size() != 2 ||
          !(*range)[0].is_number_integer() || !(*range)[1].is_number_integer()) {
        return bad("'range' must be [begin, end]");
      }
      begin = (*range)[0].get<int64_t>();
      end = (*range)[1].get<int64_t>();
      const int64_t work = model::WorkSize(graph, id, *axis);
      if (!(0 <= begin && begin < end && end <= work)) {
        return bad(absl::StrCat("range [", begin, ", ", end, ") is outside the op's ", work,
                                " work units"));
      }
    }
    double us = dur->get<double>();
    if (const auto device_us = args->find("device_us");
        device_us != args->end() && device_us->is_number() && device_us->get<double>() > 0) {
      us = device_us->get<double>();
    }
    if (!(us > 0)) continue;
    samples.push_back(predictor::host_model::CalibrationSample{
        device->second,
        predictor::SubtaskConfig(predictor::WholeOpConfig(graph, id, aliasing), *axis, begin, end),
        us, 1,
        absl::StrCat(graph.name, "/op ", id, " '", graph.op(id).name, "' ",
                     std::string(model::SplitAxisName(*axis)), "[", begin, ",", end, ") trace"),
        /*threads=*/1, /*kernel=*/""});
  }
  return samples;
}

}  // namespace psched::calibration
