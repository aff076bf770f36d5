// Measured latencies that GBDT models are trained from, and their CSV form.
//
// Two tables. An *op table* has one row per measured op configuration: the group it belongs
// to (the model it came from; cross-validation never splits a group), the configuration, and
// per device the measured latency and optionally the kernel the backend chose. A *totals
// table* has one row per group with whole-model latencies per device, for devices whose
// per-op times were not measured (the phones' CPU clusters): their models are fitted so that
// a group's per-op predictions sum to its total.
//
// Op CSV columns (header required, any order, extra columns ignored):
//   group, kind (model/op_kinds.inc name), inputs ("HxWxC" or several joined by ';'),
//   output ("HxWxC"), kernel_h, kernel_w, stride_h, stride_w, dilation_h, dilation_w,
//   pad_top, pad_left, pad_bottom, pad_right, groups, accumulate (0/1),
//   and per device "<device>:us" (microseconds; empty: not measured) and optionally
//   "<device>:kernel" (the backend's kernel name).
// Totals CSV columns: group, then "<device>:us" per device.
// Device ids are free text without ':' or ',', e.g. "pixel4/gpu", "pixel4/1large".
//
// Every reader error names the file and line and says what is wrong (a missing column, a
// cell that is not a number, a row with too few cells, an inconsistent shape). Plain value
// types; functions are pure apart from file I/O.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "predictor/op_config.h"

namespace psched::predictor::gbdt::training {

struct Measurement {
  double us = 0;
  std::string kernel;  // empty when not recorded
};

struct OpRow {
  std::string group;
  OpConfig config;
  std::map<std::string, Measurement, std::less<>> measured;  // by device id
  int line = 0;                                              // in the source file, for messages
};

struct OpTable {
  std::string source;  // file name, for messages
  std::vector<OpRow> rows;
  std::vector<std::string> devices;  // in column order
};

struct TotalsTable {
  std::string source;
  // group -> device id -> microseconds
  std::map<std::string, std::map<std::string, double, std::less<>>, std::less<>> totals;
  std::vector<std::string> devices;
};

// `source` names the text in errors.
absl::StatusOr<OpTable> ParseOpCsv(absl::string_view text, absl::string_view source);
absl::StatusOr<TotalsTable> ParseTotalsCsv(absl::string_view text, absl::string_view source);
absl::StatusOr<OpTable> ReadOpCsv(const std::string& path);
absl::StatusOr<TotalsTable> ReadTotalsCsv(const std::string& path);

std::string FormatOpCsv(const OpTable& table);
std::string FormatTotalsCsv(const TotalsTable& table);

// Splits one CSV line into cells ("..." quoting with "" escapes). InvalidArgument for an
// unterminated quote.
absl::StatusOr<std::vector<std::string>> SplitCsvLine(absl::string_view line);

// A CSV text as cells: its header and every non-blank row after it, with line numbers.
struct CsvText {
  struct Row {
    int line = 0;
    std::vector<std::string> cells;
  };
  int header_line = 1;
  std::vector<std::string> header;
  std::vector<Row> rows;
};
// InvalidArgument naming `source` and the line for an empty text, an unterminated quote or
// a row with fewer cells than the header.
absl::StatusOr<CsvText> SplitCsv(absl::string_view text, absl::string_view source);

// Reads a whole file; NotFound / Unavailable naming the path.
absl::StatusOr<std::string> ReadFile(const std::string& path);
absl::Status WriteFile(const std::string& path, absl::string_view bytes);

}  // namespace psched::predictor::gbdt::training
