#include "predictor/gbdt/training/measurements.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace psched::predictor::gbdt::training {
namespace {

constexpr absl::string_view kUsSuffix = ":us";
constexpr absl::string_view kKernelSuffix = ":kernel";
constexpr absl::string_view kGeometryColumns[] = {
    "kernel_h", "kernel_w", "dilation_h", "dilation_w", "stride_h", "stride_w",
    "pad_top",  "pad_left", "pad_bottom", "pad_right",  "groups",   "accumulate"};

// One CSV file with its header, cells addressed by column name.
class CsvFile {
 public:
  using Row = CsvText::Row;

  static absl::StatusOr<CsvFile> Open(absl::string_view text, absl::string_view source) {
    absl::StatusOr<CsvText> csv = SplitCsv(text, source);
    if (!csv.ok()) return csv.status();
    CsvFile f;
    f.source_ = std::string(source);
    f.csv_ = *std::move(csv);
    for (size_t i = 0; i < f.csv_.header.size(); ++i) f.column_[f.csv_.header[i]] = i;
    return f;
  }

  bool Has(absl::string_view name) const { return column_.contains(std::string(name)); }
  absl::Status Require(std::initializer_list<absl::string_view> names) const {
    for (absl::string_view name : names) {
      if (!column_.contains(std::string(name))) {
        return absl::InvalidArgumentError(
            absl::StrCat(source_, ":", csv_.header_line, ": missing column '", name, "'"));
      }
    }
    return absl::OkStatus();
  }

  const std::vector<Row>& rows() const { return csv_.rows; }
  const std::string& source() const { return source_; }

  // The devices of the "<device>:us" columns; at least one.
  absl::StatusOr<std::vector<std::string>> Devices() const {
    std::vector<std::string> devices;
    for (const std::string& h : csv_.header) {
      if (absl::EndsWith(h, kUsSuffix)) devices.push_back(h.substr(0, h.size() - kUsSuffix.size()));
    }
    if (devices.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          source_, ":", csv_.header_line, ": no '<device>:us' column: nothing was measured"));
    }
    return devices;
  }

  const std::string& Cell(const Row& row, absl::string_view column) const {
    return row.cells[column_.at(std::string(column))];
  }
  absl::Status Bad(const Row& row, absl::string_view column, absl::string_view why) const {
    return absl::InvalidArgumentError(
        absl::StrCat(source_, ":", row.line, ": column '", column, "': ", why));
  }
  absl::StatusOr<int64_t> Int(const Row& row, absl::string_view column, int64_t min) const {
    const std::string& cell = Cell(row, column);
    int64_t v = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(cell), &v)) {
      return Bad(row, column, absl::StrCat("'", cell, "' is not an integer"));
    }
    if (v < min) return Bad(row, column, absl::StrCat(v, " is below ", min));
    return v;
  }
  // nullopt for an empty cell.
  absl::StatusOr<std::optional<double>> Latency(const Row& row, absl::string_view column) const {
    const absl::string_view cell = absl::StripAsciiWhitespace(Cell(row, column));
    if (cell.empty()) return std::nullopt;
    double v = 0;
    if (!absl::SimpleAtod(cell, &v)) {
      return Bad(row, column, absl::StrCat("'", cell, "' is not a number"));
    }
    if (!std::isfinite(v) || v <= 0) {
      return Bad(row, column, absl::StrCat(v, " is not a latency (finite, > 0)"));
    }
    return v;
  }

 private:
  std::string source_;
  CsvText csv_;
  std::map<std::string, size_t> column_;
};

absl::StatusOr<model::Shape> ParseShape(const CsvFile& f, const CsvFile::Row& row,
                                        absl::string_view column, absl::string_view text) {
  const std::vector<absl::string_view> parts = absl::StrSplit(text, 'x');
  int64_t v[3];
  if (parts.size() != 3) {
    return f.Bad(row, column, absl::StrCat("'", text, "' is not a shape HxWxC"));
  }
  for (size_t i = 0; i < 3; ++i) {
    if (!absl::SimpleAtoi(parts[i], &v[i]) || v[i] < 1 || v[i] > (int64_t{1} << 24)) {
      return f.Bad(row, column,
                   absl::StrCat("'", text, "' is not a shape HxWxC of positive sizes"));
    }
  }
  return model::Shape{v[0], v[1], v[2]};
}

// Enough digits for a measured latency to survive a write and read.
std::string Number(double v) { return absl::StrFormat("%.10g", v); }

std::string ShapeText(const model::Shape& s) { return absl::StrCat(s.h, "x", s.w, "x", s.c); }

std::string CsvCell(absl::string_view s) {
  if (s.find_first_of(",\"") == absl::string_view::npos) return std::string(s);
  return absl::StrCat("\"", absl::StrReplaceAll(s, {{"\"", "\"\""}}), "\"");
}

}  // namespace

absl::StatusOr<std::vector<std::string>> SplitCsvLine(absl::string_view line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (quoted) {
      if (ch != '"') {
        cells.back() += ch;
      } else if (i + 1 < line.size() && line[i + 1] == '"') {
        cells.back() += '"';
        ++i;
      } else {
        quoted = false;
      }
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      cells.emplace_back();
    } else {
      cells.back() += ch;
    }
  }
  if (quoted) return absl::InvalidArgumentError("unterminated quoted cell");
  return cells;
}

absl::StatusOr<CsvText> SplitCsv(absl::string_view text, absl::string_view source) {
  CsvText csv;
  int number = 0;
  bool header = true;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    line = absl::StripSuffix(line, "\r");
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    absl::StatusOr<std::vector<std::string>> cells = SplitCsvLine(line);
    if (!cells.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ":", number, ": ", cells.status().message()));
    }
    if (header) {
      csv.header = *std::move(cells);
      csv.header_line = number;
      header = false;
      continue;
    }
    if (cells->size() < csv.header.size()) {
      return absl::InvalidArgumentError(absl::StrCat(source, ":", number, ": ", cells->size(),
                                                     " cells, the header has ", csv.header.size()));
    }
    csv.rows.push_back({number, *std::move(cells)});
  }
  if (header) {
    return absl::InvalidArgumentError(absl::StrCat(source, ":1: empty file, expected a header"));
  }
  return csv;
}

absl::StatusOr<OpTable> ParseOpCsv(absl::string_view text, absl::string_view source) {
  absl::StatusOr<CsvFile> f = CsvFile::Open(text, source);
  if (!f.ok()) return f.status();
  if (absl::Status s = f->Require({"group", "kind", "inputs", "output"}); !s.ok()) return s;
  for (absl::string_view column : kGeometryColumns) {
    if (absl::Status s = f->Require({column}); !s.ok()) return s;
  }
  absl::StatusOr<std::vector<std::string>> devices = f->Devices();
  if (!devices.ok()) return devices.status();
  OpTable table;
  table.source = std::string(source);
  table.devices = *std::move(devices);
  for (const CsvFile::Row& row : f->rows()) {
    OpRow op;
    op.line = row.line;
    op.group = f->Cell(row, "group");
    const std::optional<model::OpKind> kind = model::OpKindFromName(f->Cell(row, "kind"));
    if (!kind.has_value()) {
      return f->Bad(row, "kind", absl::StrCat("unknown op kind '", f->Cell(row, "kind"), "'"));
    }
    OpConfig& c = op.config;
    c.kind = *kind;
    for (absl::string_view part : absl::StrSplit(f->Cell(row, "inputs"), ';')) {
      absl::StatusOr<model::Shape> s = ParseShape(*f, row, "inputs", part);
      if (!s.ok()) return s.status();
      c.inputs.push_back(*s);
    }
    absl::StatusOr<model::Shape> out = ParseShape(*f, row, "output", f->Cell(row, "output"));
    if (!out.ok()) return out.status();
    c.output = *out;
    int64_t g[std::size(kGeometryColumns)];
    for (size_t i = 0; i < std::size(kGeometryColumns); ++i) {
      const bool padding = absl::StartsWith(kGeometryColumns[i], "pad_");
      const bool flag = kGeometryColumns[i] == "accumulate";
      absl::StatusOr<int64_t> v = f->Int(row, kGeometryColumns[i], padding || flag ? 0 : 1);
      if (!v.ok()) return v.status();
      if (*v > (flag ? 1 : (int64_t{1} << 20))) {
        return f->Bad(row, kGeometryColumns[i], absl::StrCat(*v, " is out of range"));
      }
      g[i] = *v;
    }
    c.window = model::Window2d{static_cast<int32_t>(g[0]), static_cast<int32_t>(g[1]),
                               static_cast<int32_t>(g[4]), static_cast<int32_t>(g[5]),
                               static_cast<int32_t>(g[2]), static_cast<int32_t>(g[3]),
                               static_cast<int32_t>(g[6]), static_cast<int32_t>(g[7]),
                               static_cast<int32_t>(g[8]), static_cast<int32_t>(g[9])};
    c.groups = static_cast<int32_t>(g[10]);
    c.accumulate = g[11] == 1;
    if (c.kind == model::OpKind::kConv2d &&
        (c.inputs[0].c % c.groups != 0 || c.output.c % c.groups != 0)) {
      return f->Bad(row, "groups",
                    absl::StrCat(c.groups, " groups do not divide ", c.inputs[0].c, " input and ",
                                 c.output.c, " output channels"));
    }
    ComputeCost(c);
    for (const std::string& device : table.devices) {
      const std::string column = absl::StrCat(device, kUsSuffix);
      absl::StatusOr<std::optional<double>> us = f->Latency(row, column);
      if (!us.ok()) return us.status();
      if (!us->has_value()) continue;
      Measurement m{**us, ""};
      if (f->Has(absl::StrCat(device, kKernelSuffix))) {
        m.kernel = f->Cell(row, absl::StrCat(device, kKernelSuffix));
      }
      op.measured.emplace(device, std::move(m));
    }
    table.rows.push_back(std::move(op));
  }
  return table;
}

absl::StatusOr<TotalsTable> ParseTotalsCsv(absl::string_view text, absl::string_view source) {
  absl::StatusOr<CsvFile> f = CsvFile::Open(text, source);
  if (!f.ok()) return f.status();
  if (absl::Status s = f->Require({"group"}); !s.ok()) return s;
  absl::StatusOr<std::vector<std::string>> devices = f->Devices();
  if (!devices.ok()) return devices.status();
  TotalsTable table;
  table.source = std::string(source);
  table.devices = *std::move(devices);
  for (const CsvFile::Row& row : f->rows()) {
    const std::string& group = f->Cell(row, "group");
    if (table.totals.contains(group)) {
      return f->Bad(row, "group", absl::StrCat("group '", group, "' appears twice"));
    }
    auto& per_device = table.totals[group];
    for (const std::string& device : table.devices) {
      absl::StatusOr<std::optional<double>> us = f->Latency(row, absl::StrCat(device, kUsSuffix));
      if (!us.ok()) return us.status();
      if (us->has_value()) per_device[device] = **us;
    }
  }
  return table;
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) return absl::UnavailableError(absl::StrCat("reading ", path, " failed"));
  return bytes.str();
}

absl::Status WriteFile(const std::string& path, absl::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  out.close();
  if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

absl::StatusOr<OpTable> ReadOpCsv(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  return ParseOpCsv(*text, path);
}

absl::StatusOr<TotalsTable> ReadTotalsCsv(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  return ParseTotalsCsv(*text, path);
}

std::string FormatOpCsv(const OpTable& table) {
  std::vector<std::string> header = {"group", "kind", "inputs", "output"};
  for (absl::string_view column : kGeometryColumns) header.emplace_back(column);
  for (const std::string& d : table.devices) {
    header.push_back(absl::StrCat(d, kUsSuffix));
    header.push_back(absl::StrCat(d, kKernelSuffix));
  }
  std::string out = absl::StrCat(absl::StrJoin(header, ","), "\n");
  for (const OpRow& row : table.rows) {
    const OpConfig& c = row.config;
    std::vector<std::string> inputs;
    for (const model::Shape& s : c.inputs) inputs.push_back(ShapeText(s));
    const model::Window2d& w = c.window;
    std::vector<std::string> cells = {CsvCell(row.group), std::string(model::OpKindName(c.kind)),
                                      absl::StrJoin(inputs, ";"), ShapeText(c.output)};
    for (int64_t v : {w.kernel_h, w.kernel_w, w.dilation_h, w.dilation_w, w.stride_h, w.stride_w,
                      w.pad_top, w.pad_left, w.pad_bottom, w.pad_right, c.groups}) {
      cells.push_back(absl::StrCat(v));
    }
    cells.push_back(c.accumulate ? "1" : "0");
    for (const std::string& d : table.devices) {
      auto it = row.measured.find(d);
      cells.push_back(it == row.measured.end() ? "" : Number(it->second.us));
      cells.push_back(it == row.measured.end() ? "" : CsvCell(it->second.kernel));
    }
    absl::StrAppend(&out, absl::StrJoin(cells, ","), "\n");
  }
  return out;
}

std::string FormatTotalsCsv(const TotalsTable& table) {
  std::vector<std::string> header = {"group"};
  for (const std::string& d : table.devices) header.push_back(absl::StrCat(d, kUsSuffix));
  std::string out = absl::StrCat(absl::StrJoin(header, ","), "\n");
  for (const auto& [group, per_device] : table.totals) {
    std::vector<std::string> cells = {CsvCell(group)};
    for (const std::string& d : table.devices) {
      auto it = per_device.find(d);
      cells.push_back(it == per_device.end() ? "" : Number(it->second));
    }
    absl::StrAppend(&out, absl::StrJoin(cells, ","), "\n");
  }
  return out;
}

}  // namespace psched::predictor::gbdt::training
