#include "timeline/text_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace psched::timeline {

absl::Status WriteTextFile(const std::string& path, std::string_view text, std::string_view what) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    return absl::UnavailableError(
        absl::StrCat("cannot write ", std::string(what), " ", path, ": ", std::strerror(errno)));
  }
  out << text;
  out.close();
  if (!out) {
    return absl::UnavailableError(
        absl::StrCat("writing ", std::string(what), " ", path, " failed: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace psched::timeline
