// Imports the phone measurements of mobile-ml-benchmark (../shared/data/mobile-ml-benchmark,
// MIT licence, from the paper's authors) into psched's measurement tables.
//
// tflite_cnn_ops_gpu.csv has one row per operator of 102 CNNs with its configuration as a
// Python-dict literal and, per phone, the TFLite GPU delegate's latency and kernel name. Each
// row becomes an OpRow of group <model> with device "<phone>/gpu". Convolutions are recorded
// after an explicit PAD op, so their input is the padded one (padding 0); a depthwise conv's
// "Filter" is its channel multiplier; a concat records its first input's channels, the input
// count ("Kernel") and the output channels, and the other inputs share the rest evenly (the
// models only see the sum); MEAN is a global average pool.
//
// tflite_cnn_e2e.csv has whole-model float latencies per core configuration; each
// "<phone>|<config>|float|mean" column becomes device "<phone>/<config>" (e.g.
// "pixel4/1large", "pixel4/2med") of a TotalsTable keyed by model.
//
// Errors name the file and line. Pure apart from reading the two files.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "predictor/gbdt/training/measurements.h"

namespace psched::predictor::gbdt::training {

struct MobileBenchmarkData {
  OpTable ops;
  TotalsTable totals;
};

absl::StatusOr<OpTable> ParseMobileBenchmarkOps(absl::string_view text, absl::string_view source);
absl::StatusOr<TotalsTable> ParseMobileBenchmarkTotals(absl::string_view text,
                                                       absl::string_view source);
// Reads <dir>/tflite_cnn_ops_gpu.csv and <dir>/tflite_cnn_e2e.csv.
absl::StatusOr<MobileBenchmarkData> ImportMobileBenchmark(const std::string& dir);

}  // namespace psched::predictor::gbdt::training
