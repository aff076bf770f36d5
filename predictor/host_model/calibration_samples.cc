#include "predictor/host_model/calibration_samples.h"

#include <array>
#include <cmath>
#include <optional>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace psched::predictor::host_model {
namespace {

using nlohmann::json;

constexpr std::array<std::pair<model::ActivationKind, std::string_view>, 17> kActivationNames = {{
    {model::ActivationKind::kNone, "none"},
    {model::ActivationKind::kRelu, "relu"},
    {model::ActivationKind::kClip, "clip"},
    {model::ActivationKind::kSigmoid, "sigmoid"},
    {model::ActivationKind::kHardSigmoid, "hard_sigmoid"},
    {model::ActivationKind::kHardSwish, "hard_swish"},
    {model::ActivationKind::kSilu, "silu"},
    {model::ActivationKind::kGelu, "gelu"},
    {model::ActivationKind::kTanh, "tanh"},
    {model::ActivationKind::kErf, "erf"},
    {model::ActivationKind::kExp, "exp"},
    {model::ActivationKind::kLog, "log"},
    {model::ActivationKind::kSqrt, "sqrt"},
    {model::ActivationKind::kReciprocal, "reciprocal"},
    {model::ActivationKind::kNeg, "neg"},
    {model::ActivationKind::kAbs, "abs"},
    {model::ActivationKind::kPow, "pow"},
}};

std::string_view ActivationName(model::ActivationKind kind) {
  for (const auto& [k, name] : kActivationNames) {
    if (k == kind) return name;
  }
  return "none";
}

std::optional<model::ActivationKind> ActivationFromName(std::string_view name) {
  for (const auto& [k, n] : kActivationNames) {
    if (n == name) return k;
  }
  return std::nullopt;
}

json ShapeToJson(const model::Shape& s) { return json::array({s.h, s.w, s.c}); }

absl::Status Bad(std::string_view field, std::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("op config field '", std::string(field), "': ", std::string(why)));
}

absl::StatusOr<model::Shape> ShapeFromJson(const json& j, std::string_view field) {
  if (!j.is_array() || j.size() != 3) return Bad(field, "expected [h, w, c]");
  int64_t v[3];
  for (size_t i = 0; i < 3; ++i) {
    if (!j[i].is_number_integer() || j[i].get<int64_t>() < 1) {
      return Bad(field, "dimensions must be integers >= 1");
    }
    v[i] = j[i].get<int64_t>();
  }
  return model::Shape{v[0], v[1], v[2]};
}

// Reads the optional integer array `field` (values in [min, 2^20]) into `out`; absent keeps
// the defaults.
absl::Status ReadInts(const json& j, std::string_view field, int32_t min,
                      std::initializer_list<int32_t*> out) {
  const auto it = j.find(field);
  if (it == j.end()) return absl::OkStatus();
  if (!it->is_array() || it->size() != out.size()) {
    return Bad(field, absl::StrCat("expected an array of ", out.size(), " integers"));
  }
  size_t i = 0;
  for (int32_t* o : out) {
    const json& v = (*it)[i++];
    if (!v.is_number_integer() || v.get<int64_t>() < min || v.get<int64_t>() > (1 << 20)) {
      return Bad(field, absl::StrCat("values must be integers in [", min, ", 2^20]"));
    }
    *o = static_cast<int32_t>(v.get<int64_t>());
  }
  return absl::OkStatus();
}

}  // namespace

json OpConfigToJson(const OpConfig& c) {
  json inputs = json::array();
  for (const model::Shape& s : c.inputs) inputs.push_back(ShapeToJson(s));
  const model::Window2d& w = c.window;
  json j{{"kind", std::string(model::OpKindName(c.kind))},
         {"inputs", std::move(inputs)},
         {"output", ShapeToJson(c.output)},
         {"kernel", {w.kernel_h, w.kernel_w}},
         {"stride", {w.stride_h, w.stride_w}},
         {"dilation", {w.dilation_h, w.dilation_w}},
         {"pads", {w.pad_top, w.pad_left, w.pad_bottom, w.pad_right}},
         {"groups", c.groups},
         {"activation", std::string(ActivationName(c.activation))},
         {"accumulate", c.accumulate},
         {"flops", c.flops},
         {"bytes", c.bytes}};
  // Only when strided, so configurations stored before the field existed keep their keys.
  if (c.output_pixel_stride != 0) j["output_pixel_stride"] = c.output_pixel_stride;
  if (c.kind == model::OpKind::kMatMul) {
    const MatMulDims& d = c.matmul;
    j["matmul"] = {d.batch, d.m, d.n, d.k, d.lhs_batch, d.rhs_batch};
  }
  if (c.concat_copies) j["concat_copies"] = true;
  return j;
}

absl::StatusOr<OpConfig> OpConfigFromJson(const json& j) {
  if (!j.is_object()) return Bad("(config)", "expected an object");
  OpConfig c;
  const auto kind = j.find("kind");
  if (kind == j.end() || !kind->is_string()) return Bad("kind", "missing or not a string");
  const std::optional<model::OpKind> k = model::OpKindFromName(kind->get<std::string>());
  if (!k.has_value()) {
    return Bad("kind", absl::StrCat("unknown op kind '", kind->get<std::string>(), "'"));
  }
  c.kind = *k;
  const auto inputs = j.find("inputs");
  if (inputs == j.end() || !inputs->is_array()) return Bad("inputs", "missing or not an array");
  for (const json& s : *inputs) {
    absl::StatusOr<model::Shape> shape = ShapeFromJson(s, "inputs");
    if (!shape.ok()) return shape.status();
    c.inputs.push_back(*shape);
  }
  const auto output = j.find("output");
  if (output == j.end()) return Bad("output", "missing");
  absl::StatusOr<model::Shape> out = ShapeFromJson(*output, "output");
  if (!out.ok()) return out.status();
  c.output = *out;
  model::Window2d& w = c.window;
  if (absl::Status s = ReadInts(j, "kernel", 1, {&w.kernel_h, &w.kernel_w}); !s.ok()) return s;
  if (absl::Status s = ReadInts(j, "stride", 1, {&w.stride_h, &w.stride_w}); !s.ok()) return s;
  if (absl::Status s = ReadInts(j, "dilation", 1, {&w.dilation_h, &w.dilation_w}); !s.ok()) {
    return s;
  }
  if (absl::Status s =
          ReadInts(j, "pads", 0, {&w.pad_top, &w.pad_left, &w.pad_bottom, &w.pad_right});
      !s.ok()) {
    return s;
  }
  if (const auto g = j.find("groups"); g != j.end()) {
    if (!g->is_number_integer() || g->get<int64_t>() < 1 || g->get<int64_t>() > (1 << 20)) {
      return Bad("groups", "expected an integer in [1, 2^20]");
    }
    c.groups = static_cast<int32_t>(g->get<int64_t>());
  }
  if (c.kind == model::OpKind::kConv2d &&
      (c.inputs.size() != 1 || c.inputs[0].c % c.groups != 0 || c.output.c % c.groups != 0)) {
    return Bad("groups", "a conv needs one input and channel counts divisible by groups");
  }
  if (const auto a = j.find("activation"); a != j.end()) {
    const std::optional<model::ActivationKind> act =
        a->is_string() ? ActivationFromName(a->get<std::string>()) : std::nullopt;
    if (!act.has_value()) return Bad("activation", "unknown activation");
    c.activation = *act;
  }
  if (const auto a = j.find("accumulate"); a != j.end()) {
    if (!a->is_boolean()) return Bad("accumulate", "expected true or false");
    c.accumulate = a->get<bool>();
  }
  if (const auto s = j.find("output_pixel_stride"); s != j.end()) {
    if (!s->is_number_integer() || (s->get<int64_t>() != 0 && s->get<int64_t>() <= c.output.c) ||
        s->get<int64_t>() > (int64_t{1} << 24)) {
      return Bad("output_pixel_stride",
                 absl::StrCat("expected 0 or an integer in (", c.output.c,
                              ", 2^24]: the channels of the wider tensor the output is written "
                              "inside"));
    }
    c.output_pixel_stride = s->get<int64_t>();
  }
  if (const auto m = j.find("matmul"); m != j.end()) {
    if (c.kind != model::OpKind::kMatMul) return Bad("matmul", "only a matmul has GEMM extents");
    constexpr int64_t kMax = int64_t{1} << 24;
    if (!m->is_array() || m->size() != 6) {
      return Bad("matmul", "expected [batch, m, n, k, lhs_batch, rhs_batch]");
    }
    int64_t v[6];
    for (size_t i = 0; i < 6; ++i) {
      if (!(*m)[i].is_number_integer() || (*m)[i].get<int64_t>() < 1 ||
          (*m)[i].get<int64_t>() > kMax) {
        return Bad("matmul", "extents must be integers in [1, 2^24]");
      }
      v[i] = (*m)[i].get<int64_t>();
    }
    // In doubles: the product of three extents up to 2^24 overflows an int64.
    if (v[4] > v[0] || v[5] > v[0] ||
        static_cast<double>(v[0]) * static_cast<double>(v[1]) * static_cast<double>(v[2]) !=
            static_cast<double>(c.output.Elements())) {
      return Bad("matmul", "extents do not match the output");
    }
    c.matmul = MatMulDims{v[0], v[1], v[2], v[3], v[4], v[5]};
  }
  if (const auto a = j.find("concat_copies"); a != j.end()) {
    if (!a->is_boolean()) return Bad("concat_copies", "expected true or false");
    c.concat_copies = a->get<bool>() && c.kind == model::OpKind::kConcat;
  }
  ComputeCost(c);
  return c;
}

json SamplesToJson(const CalibrationSamples& samples) {
  json list = json::array();
  for (const CalibrationSample& s : samples.samples) {
    list.push_back(json{{"device", s.device},
                        {"config", OpConfigToJson(s.config)},
                        {"measured_us", s.measured_us},
                        {"runs", s.runs},
                        {"source", s.source},
                        {"threads", s.threads},
                        {"kernel", s.kernel},
                        {"co_running", s.co_running}});
  }
  return json{{"platform", samples.platform}, {"samples", std::move(list)}};
}

absl::StatusOr<CalibrationSamples> SamplesFromJson(const json& j) {
  if (!j.is_object()) return absl::InvalidArgumentError("calibration samples: expected an object");
  CalibrationSamples out;
  if (const auto p = j.find("platform"); p != j.end() && p->is_string()) {
    out.platform = p->get<std::string>();
  }
  const auto list = j.find("samples");
  if (list == j.end() || !list->is_array()) {
    return absl::InvalidArgumentError("calibration samples: 'samples' missing or not an array");
  }
  for (size_t i = 0; i < list->size(); ++i) {
    const json& s = (*list)[i];
    auto bad = [i](std::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrCat("calibration sample ", i, ": ", std::string(why)));
    };
    if (!s.is_object()) return bad("expected an object");
    CalibrationSample sample;
    const auto device = s.find("device");
    if (device == s.end() || !device->is_string() || device->get<std::string>().empty()) {
      return bad("'device' missing or empty");
    }
    sample.device = device->get<std::string>();
    const auto config = s.find("config");
    if (config == s.end()) return bad("'config' missing");
    absl::StatusOr<OpConfig> c = OpConfigFromJson(*config);
    if (!c.ok()) return bad(std::string(c.status().message()));
    sample.config = std::move(*c);
    const auto us = s.find("measured_us");
    if (us == s.end() || !us->is_number() || !std::isfinite(us->get<double>()) ||
        us->get<double>() <= 0) {
      return bad("'measured_us' must be a finite number > 0");
    }
    sample.measured_us = us->get<double>();
    if (const auto runs = s.find("runs"); runs != s.end() && runs->is_number_integer()) {
      sample.runs = runs->get<int>();
    }
    if (const auto src = s.find("source"); src != s.end() && src->is_string()) {
      sample.source = src->get<std::string>();
    }
    if (const auto threads = s.find("threads"); threads != s.end()) {
      if (!threads->is_number_integer() || threads->get<int>() < 1) {
        return bad("'threads' must be an integer >= 1");
      }
      sample.threads = threads->get<int>();
    }
    if (const auto kernel = s.find("kernel"); kernel != s.end() && kernel->is_string()) {
      sample.kernel = kernel->get<std::string>();
    }
    if (const auto co = s.find("co_running"); co != s.end()) {
      if (!co->is_boolean()) return bad("'co_running' must be true or false");
      sample.co_running = co->get<bool>();
    }
    out.samples.push_back(std::move(sample));
  }
  return out;
}

}  // namespace psched::predictor::host_model
