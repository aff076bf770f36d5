// GBDT model files (predictor/gbdt/model_file.h): read from ProfileOptions::model_dir and
// psched-train's --model, so any bytes may arrive. A file that parses is written back and
// must parse again to the same text.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "predictor/gbdt/model_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<psched::predictor::gbdt::DeviceModel> model =
      psched::predictor::gbdt::ParseModelFile(text, "fuzz.gbdt");
  if (!model.ok()) return 0;
  const std::string formatted = psched::predictor::gbdt::FormatModelFile(*model);
  absl::StatusOr<psched::predictor::gbdt::DeviceModel> again =
      psched::predictor::gbdt::ParseModelFile(formatted, "formatted.gbdt");
  if (!again.ok() || psched::predictor::gbdt::FormatModelFile(*again) != formatted) std::abort();
  return 0;
}
