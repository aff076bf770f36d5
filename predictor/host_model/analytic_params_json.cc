#include "predictor/host_model/analytic_params_json.h"

#include <cmath>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace psched::predictor::host_model {

using nlohmann::json;

std::string CalibratedModelName(std::string_view platform) {
  return absl::StrCat(std::string(platform), "+calibrated");
}

std::shared_ptr<const AnalyticModel> AnalyticParams::MakeModel() const {
  return std::make_shared<AnalyticModel>(CalibratedModelName(platform), devices);
}

json AnalyticParamsToJson(const AnalyticParams& params) {
  json devices = json::array();
  for (const AnalyticDeviceParams& d : params.devices) {
    json gflops = json::object();
    for (int k = 0; k < model::kNumOpKinds; ++k) {
      gflops[std::string(model::OpKindName(static_cast<model::OpKind>(k)))] =
          d.gflops[static_cast<size_t>(k)];
    }
    devices.push_back(json{{"name", d.name},
                           {"gpu", d.gpu},
                           {"gflops", std::move(gflops)},
                           {"depthwise_gflops", d.depthwise_gflops},
                           {"pointwise_gflops", d.pointwise_gflops},
                           {"half_reduction", d.half_reduction},
                           {"concat_us", d.concat_us},
                           {"bandwidth_gbps", d.bandwidth_gbps},
                           {"overhead_us", d.overhead_us},
                           {"dispatch_us", d.dispatch_us},
                           {"half_parallelism", d.half_parallelism}});
  }
  return json{{"platform", params.platform},
              {"model_version", params.MakeModel()->Version()},
              {"devices", std::move(devices)}};
}

namespace {

// A number field that must be finite and > 0 (or >= 0 when `allow_zero`).
absl::StatusOr<double> ReadNumber(const json& j, std::string_view field, bool allow_zero,
                                  size_t device) {
  const auto it = j.find(field);
  const bool ok = it != j.end() && it->is_number() && std::isfinite(it->get<double>()) &&
                  (allow_zero ? it->get<double>() >= 0 : it->get<double>() > 0);
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat("analytic params device ", device, ": '",
                                                   std::string(field), "' must be a finite number ",
                                                   allow_zero ? ">= 0" : "> 0"));
  }
  return it->get<double>();
}

// The kind whose throughput a file written before `kind` existed stands in for it: the tensor
// kinds came with the transformer graphs. A MatMul runs the fully-connected GEMMs; the others
// stream their elements as an add does. nullopt: a kind every file has.
std::optional<model::OpKind> StandInKind(model::OpKind kind) {
  using model::OpKind;
  switch (kind) {
    case OpKind::kMatMul:
      return OpKind::kFullyConnected;
    case OpKind::kTranspose:
    case OpKind::kReshape:
    case OpKind::kLayerNorm:
    case OpKind::kReduce:
    case OpKind::kDiv:
    case OpKind::kSlice:
      return OpKind::kAdd;
    default:
      return std::nullopt;
  }
}

}  // namespace

absl::StatusOr<AnalyticParams> AnalyticParamsFromJson(const json& j) {
  if (!j.is_object()) return absl::InvalidArgumentError("analytic params: expected an object");
  AnalyticParams out;
  if (const auto p = j.find("platform"); p != j.end() && p->is_string()) {
    out.platform = p->get<std::string>();
  }
  const auto devices = j.find("devices");
  if (devices == j.end() || !devices->is_array() || devices->empty()) {
    return absl::InvalidArgumentError("analytic params: 'devices' missing or empty");
  }
  for (size_t i = 0; i < devices->size(); ++i) {
    const json& d = (*devices)[i];
    auto bad = [i](std::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrCat("analytic params device ", i, ": ", std::string(why)));
    };
    if (!d.is_object()) return bad("expected an object");
    AnalyticDeviceParams p;
    const auto name = d.find("name");
    if (name == d.end() || !name->is_string() || name->get<std::string>().empty()) {
      return bad("'name' missing or empty");
    }
    p.name = name->get<std::string>();
    if (const auto gpu = d.find("gpu"); gpu != d.end()) {
      if (!gpu->is_boolean()) return bad("'gpu' must be true or false");
      p.gpu = gpu->get<bool>();
    }
    const auto gflops = d.find("gflops");
    if (gflops == d.end() || !gflops->is_object()) return bad("'gflops' missing or not an object");
    std::vector<bool> seen(model::kNumOpKinds, false);
    for (const auto& [kind_name, value] : gflops->items()) {
      const std::optional<model::OpKind> kind = model::OpKindFromName(kind_name);
      if (!kind.has_value())
        return bad(absl::StrCat("unknown op kind '", kind_name, "' in gflops"));
      if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() <= 0) {
        return bad(absl::StrCat("gflops of '", kind_name, "' must be a finite number > 0"));
      }
      p.gflops[static_cast<size_t>(*kind)] = value.get<double>();
      seen[static_cast<size_t>(*kind)] = true;
    }
    // Files written before transposed convolutions existed cost them as convolutions.
    const auto conv = static_cast<size_t>(model::OpKind::kConv2d);
    const auto conv_transpose = static_cast<size_t>(model::OpKind::kConvTranspose2d);
    if (!seen[conv_transpose] && seen[conv]) {
      p.gflops[conv_transpose] = p.gflops[conv];
      seen[conv_transpose] = true;
    }
    for (int k = 0; k < model::kNumOpKinds; ++k) {
      const std::optional<model::OpKind> stand_in = StandInKind(static_cast<model::OpKind>(k));
      if (!seen[static_cast<size_t>(k)] && stand_in.has_value() &&
          seen[static_cast<size_t>(*stand_in)]) {
        p.gflops[static_cast<size_t>(k)] = p.gflops[static_cast<size_t>(*stand_in)];
        continue;
      }
      if (!seen[static_cast<size_t>(k)]) {
        return bad(absl::StrCat("gflops lacks op kind '",
                                std::string(model::OpKindName(static_cast<model::OpKind>(k))),
                                "'"));
      }
    }
    struct Field {
      std::string_view name;
      double* value;
      bool allow_zero;
    };
    for (const Field& f :
         {Field{"depthwise_gflops", &p.depthwise_gflops, false},
          Field{"bandwidth_gbps", &p.bandwidth_gbps, false},
          Field{"overhead_us", &p.overhead_us, true}, Field{"dispatch_us", &p.dispatch_us, true},
          Field{"half_parallelism", &p.half_parallelism, true}}) {
      absl::StatusOr<double> v = ReadNumber(d, f.name, f.allow_zero, i);
      if (!v.ok()) return v.status();
      *f.value = *v;
    }
    // Fields added after the first calibration files; older files load with the values
    // that reproduce their predictions for every op but concat (now in place).
    p.pointwise_gflops = p.gflops[static_cast<size_t>(model::OpKind::kConv2d)];
    p.concat_us = p.overhead_us;
    for (const Field& f : {Field{"pointwise_gflops", &p.pointwise_gflops, false},
                           Field{"half_reduction", &p.half_reduction, true},
                           Field{"concat_us", &p.concat_us, true}}) {
      if (!d.contains(f.name)) continue;
      absl::StatusOr<double> v = ReadNumber(d, f.name, f.allow_zero, i);
      if (!v.ok()) return v.status();
      *f.value = *v;
    }
    out.devices.push_back(std::move(p));
  }
  return out;
}

}  // namespace psched::predictor::host_model
