// WithContext: an absl::Status with what was being done put before its message, keeping its
// code ("cannot import model: <importer's message>"). The engine's errors read this way.
#pragma once

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace psched::daemon {

// `status` with "`context`: " before its message; OK stays OK.
inline absl::Status WithContext(const absl::Status& status, absl::string_view context) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(context, ": ", status.message()));
}

}  // namespace psched::daemon
