#include "predictor/gbdt/training/mobile_benchmark.h"

#include <cmath>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace psched::predictor::gbdt::training {
namespace {

using model::OpKind;
using model::Shape;

// {'Input_shape': '224', 'Input_channel': 3, ...} -> key -> value text ('-' for absent).
absl::StatusOr<std::map<std::string, std::string>> ParseDict(absl::string_view text) {
  std::map<std::string, std::string> out;
  absl::string_view rest = absl::StripAsciiWhitespace(text);
  if (!absl::ConsumePrefix(&rest, "{") || !absl::ConsumeSuffix(&rest, "}")) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "' is not a {...} dict"));
  }
  for (absl::string_view item : absl::StrSplit(rest, ',', absl::SkipWhitespace())) {
    const std::vector<absl::string_view> kv = absl::StrSplit(item, absl::MaxSplits(':', 1));
    if (kv.size() != 2)
      return absl::InvalidArgumentError(absl::StrCat("'", item, "' is not key: value"));
    absl::string_view key = absl::StripAsciiWhitespace(kv[0]);
    absl::string_view value = absl::StripAsciiWhitespace(kv[1]);
    for (absl::string_view* s : {&key, &value}) {
      if (s->size() >= 2 && s->front() == '\'' && s->back() == '\'')
        *s = s->substr(1, s->size() - 2);
    }
    out[std::string(key)] = std::string(value);
  }
  return out;
}

class Feature {
 public:
  Feature(const std::map<std::string, std::string>& dict, absl::string_view where)
      : dict_(dict), where_(where) {}
  absl::StatusOr<int64_t> Get(const std::string& key) const {
    auto it = dict_.find(key);
    int64_t v = 0;
    if (it == dict_.end() || !absl::SimpleAtoi(it->second, &v) || v < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          where_, ": feature '", key, "' is ",
          it == dict_.end() ? "missing" : "'" + it->second + "'", ", expected a positive integer"));
    }
    return v;
  }

 private:
  const std::map<std::string, std::string>& dict_;
  std::string where_;
};

// Converts one operator row; `where` prefixes errors.
absl::StatusOr<OpConfig> ConfigOf(absl::string_view operation, const Feature& f) {
  OpConfig c;
  const auto get = [&](const char* key) { return f.Get(key); };
  absl::StatusOr<int64_t> cin = get("Input_channel");
  if (!cin.ok()) return cin.status();
  if (operation == "FULLY_CONNECTED") {
    absl::StatusOr<int64_t> cout = get("Filter");
    if (!cout.ok()) return cout.status();
    c.kind = OpKind::kFullyConnected;
    c.inputs = {Shape{1, 1, *cin}};
    c.output = Shape{1, 1, *cout};
    return c;
  }
  absl::StatusOr<int64_t> hin = get("Input_shape");
  if (!hin.ok()) return hin.status();
  if (operation == "MEAN") {
    c.kind = OpKind::kGlobalAvgPool;
    c.inputs = {Shape{*hin, *hin, *cin}};
    c.output = Shape{1, 1, *cin};
    return c;
  }
  absl::StatusOr<int64_t> hout = get("Output_shape");
  if (!hout.ok()) return hout.status();
  absl::StatusOr<int64_t> kernel = get("Kernel");
  if (!kernel.ok()) return kernel.status();
  if (operation == "CONCATENATION") {
    absl::StatusOr<int64_t> cout = get("Filter");
    if (!cout.ok()) return cout.status();
    const int64_t n = *kernel;
    if (n < 2 || *cout < *cin + n - 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          n, " inputs of ", *cin, " channels cannot make ", *cout, " output channels"));
    }
    c.kind = OpKind::kConcat;
    c.inputs = {Shape{*hin, *hin, *cin}};
    const int64_t rest = *cout - *cin;
    for (int64_t i = 1; i < n; ++i) {
      const int64_t share = rest / (n - 1) + (i <= rest % (n - 1) ? 1 : 0);
      c.inputs.push_back(Shape{*hin, *hin, share});
    }
    c.output = Shape{*hout, *hout, *cout};
    return c;
  }
  absl::StatusOr<int64_t> stride = get("Stride");
  if (!stride.ok()) return stride.status();
  c.window.kernel_h = c.window.kernel_w = static_cast<int32_t>(*kernel);
  c.window.stride_h = c.window.stride_w = static_cast<int32_t>(*stride);
  c.inputs = {Shape{*hin, *hin, *cin}};
  if (operation == "MAX_POOL_2D" || operation == "AVERAGE_POOL_2D") {
    c.kind = operation == "MAX_POOL_2D" ? OpKind::kMaxPool : OpKind::kAvgPool;
    c.output = Shape{*hout, *hout, *cin};
    return c;
  }
  absl::StatusOr<int64_t> filter = get("Filter");
  if (!filter.ok()) return filter.status();
  c.kind = OpKind::kConv2d;
  if (operation == "DEPTHWISE_CONV_2D") {
    c.groups = static_cast<int32_t>(*cin);
    c.output = Shape{*hout, *hout, *cin * *filter};
  } else if (operation == "CONV_2D" || operation == "CONV_2D_GROUP") {
    absl::StatusOr<int64_t> groups = get("Group");
    if (!groups.ok()) return groups.status();
    if (*cin % *groups != 0 || *filter % *groups != 0) {
      return absl::InvalidArgumentError(absl::StrCat(*groups, " groups do not divide ", *cin,
                                                     " input and ", *filter, " output channels"));
    }
    c.groups = static_cast<int32_t>(*groups);
    c.output = Shape{*hout, *hout, *filter};
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unknown operation '", operation, "'"));
  }
  return c;
}

}  // namespace

absl::StatusOr<OpTable> ParseMobileBenchmarkOps(absl::string_view text, absl::string_view source) {
  absl::StatusOr<CsvText> csv = SplitCsv(text, source);
  if (!csv.ok()) return csv.status();
  const std::vector<std::string>& header = csv->header;
  std::map<std::string, size_t> column;
  for (size_t i = 0; i < header.size(); ++i) column[header[i]] = i;
  for (const char* required : {"model", "operation", "feature"}) {
    if (!column.contains(required)) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ":", csv->header_line, ": missing column '", required, "'"));
    }
  }
  OpTable table;
  table.source = std::string(source);
  // "<phone>|gpu|float" columns, each with its "<phone>|gpu|kernel" if present.
  std::vector<std::pair<size_t, std::optional<size_t>>> device_columns;
  for (size_t i = 0; i < header.size(); ++i) {
    const std::vector<absl::string_view> parts = absl::StrSplit(header[i], '|');
    if (parts.size() != 3 || parts[2] != "float") continue;
    table.devices.push_back(absl::StrCat(parts[0], "/", parts[1]));
    auto kernel = column.find(absl::StrCat(parts[0], "|", parts[1], "|kernel"));
    device_columns.emplace_back(
        i, kernel == column.end() ? std::nullopt : std::optional<size_t>(kernel->second));
  }
  if (table.devices.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ":", csv->header_line, ": no '<phone>|gpu|float' latency column"));
  }
  for (const CsvText::Row& line : csv->rows) {
    const std::string where = absl::StrCat(source, ":", line.line);
    absl::StatusOr<std::map<std::string, std::string>> dict =
        ParseDict(line.cells[column["feature"]]);
    if (!dict.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": column 'feature': ", dict.status().message()));
    }
    absl::StatusOr<OpConfig> config =
        ConfigOf(line.cells[column["operation"]], Feature(*dict, where));
    if (!config.ok()) {
      const bool located = absl::StartsWith(config.status().message(), where);
      return absl::InvalidArgumentError(located
                                            ? std::string(config.status().message())
                                            : absl::StrCat(where, ": ", config.status().message()));
    }
    OpRow row;
    row.group = line.cells[column["model"]];
    row.line = line.line;
    row.config = *std::move(config);
    ComputeCost(row.config);
    for (size_t d = 0; d < device_columns.size(); ++d) {
      const std::string& cell = line.cells[device_columns[d].first];
      if (absl::StripAsciiWhitespace(cell).empty()) continue;
      double us = 0;
      if (!absl::SimpleAtod(cell, &us) || !std::isfinite(us) || us <= 0) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": column '",
                                                       header[device_columns[d].first], "': '",
                                                       cell, "' is not a latency"));
      }
      Measurement m{us, ""};
      if (device_columns[d].second.has_value()) m.kernel = line.cells[*device_columns[d].second];
      row.measured.emplace(table.devices[d], std::move(m));
    }
    table.rows.push_back(std::move(row));
  }
  return table;
}

absl::StatusOr<TotalsTable> ParseMobileBenchmarkTotals(absl::string_view text,
                                                       absl::string_view source) {
  absl::StatusOr<CsvText> csv = SplitCsv(text, source);
  if (!csv.ok()) return csv.status();
  const std::vector<std::string>& header = csv->header;
  if (header.empty() || header[0] != "model") {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ":", csv->header_line, ": missing column 'model' (first)"));
  }
  TotalsTable table;
  table.source = std::string(source);
  std::vector<size_t> columns;
  for (size_t i = 0; i < header.size(); ++i) {
    const std::vector<absl::string_view> parts = absl::StrSplit(header[i], '|');
    if (parts.size() != 4 || parts[2] != "float" || parts[3] != "mean") continue;
    table.devices.push_back(absl::StrCat(parts[0], "/", parts[1]));
    columns.push_back(i);
  }
  if (table.devices.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ":", csv->header_line, ": no '<phone>|<cores>|float|mean' column"));
  }
  for (const CsvText::Row& line : csv->rows) {
    auto& per_device = table.totals[line.cells[0]];
    for (size_t d = 0; d < columns.size(); ++d) {
      const std::string& cell = line.cells[columns[d]];
      if (absl::StripAsciiWhitespace(cell).empty()) continue;
      double us = 0;
      if (!absl::SimpleAtod(cell, &us) || !std::isfinite(us) || us <= 0) {
        return absl::InvalidArgumentError(absl::StrCat(source, ":", line.line, ": column '",
                                                       header[columns[d]], "': '", cell,
                                                       "' is not a latency"));
      }
      per_device[table.devices[d]] = us;
    }
  }
  return table;
}

absl::StatusOr<MobileBenchmarkData> ImportMobileBenchmark(const std::string& dir) {
  MobileBenchmarkData data;
  const std::string ops_path = dir + "/tflite_cnn_ops_gpu.csv";
  const std::string e2e_path = dir + "/tflite_cnn_e2e.csv";
  absl::StatusOr<std::string> ops = ReadFile(ops_path);
  if (!ops.ok()) return ops.status();
  absl::StatusOr<OpTable> op_table = ParseMobileBenchmarkOps(*ops, ops_path);
  if (!op_table.ok()) return op_table.status();
  absl::StatusOr<std::string> e2e = ReadFile(e2e_path);
  if (!e2e.ok()) return e2e.status();
  absl::StatusOr<TotalsTable> totals = ParseMobileBenchmarkTotals(*e2e, e2e_path);
  if (!totals.ok()) return totals.status();
  data.ops = *std::move(op_table);
  data.totals = *std::move(totals);
  return data;
}

}  // namespace psched::predictor::gbdt::training
