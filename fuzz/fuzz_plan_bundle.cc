// Plan bundle files from other boards (pschedctl plan import): any bytes must become a
// PlanBundle or a Status, and a parsed bundle must format and parse back to the same plans.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "absl/strings/string_view.h"
#include "daemon/engine/plan_bundle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<psched::daemon::PlanBundle> bundle = psched::daemon::ParseBundle(text);
  if (!bundle.ok()) return 0;
  absl::StatusOr<psched::daemon::PlanBundle> again =
      psched::daemon::ParseBundle(psched::daemon::FormatBundle(*bundle));
  if (!again.ok() || again->plans.size() != bundle->plans.size()) std::abort();
  if (again->calibration.has_value() != bundle->calibration.has_value() ||
      (bundle->calibration.has_value() &&
       again->calibration->params_json != bundle->calibration->params_json)) {
    std::abort();
  }
  for (size_t i = 0; i < bundle->plans.size(); ++i) {
    if (!(again->plans[i].key == bundle->plans[i].key) ||
        again->plans[i].schedule_json != bundle->plans[i].schedule_json) {
      std::abort();
    }
  }
  return 0;
}
