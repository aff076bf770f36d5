// Writing a rendered timeline (an SVG chart, a trace JSON) to a file, with one error form
// for every writer. A plain function; thread-safe for distinct paths.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace psched::timeline {

// Writes `text` to `path`, replacing the file. kUnavailable names `what` ("Gantt chart"),
// the path and the OS reason when the file cannot be opened or written.
absl::Status WriteTextFile(const std::string& path, std::string_view text, std::string_view what);

}  // namespace psched::timeline
