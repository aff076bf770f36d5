// Measurement CSVs psched-train reads (predictor/gbdt/training/measurements.h) and the phone
// data's own CSVs (mobile_benchmark.h): the same bytes through every reader.
#include <cstddef>
#include <cstdint>

#include "predictor/gbdt/training/measurements.h"
#include "predictor/gbdt/training/mobile_benchmark.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace training = psched::predictor::gbdt::training;
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  (void)training::ParseOpCsv(text, "fuzz.csv");
  (void)training::ParseTotalsCsv(text, "fuzz.csv");
  (void)training::ParseMobileBenchmarkOps(text, "fuzz.csv");
  (void)training::ParseMobileBenchmarkTotals(text, "fuzz.csv");
  return 0;
}
