#include "client/pschedctl/command_context.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace psched::pschedctl {

void CheckStatus(const absl::Status& status) {
  if (status.ok()) return;
  // The daemon's message names the RPC, the role it needs and who asked.
  throw CommandError{absl::StrCat(
      status.code() == absl::StatusCode::kPermissionDenied ? "permission denied: " : "",
      status.message())};
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CommandError{absl::StrCat("cannot read ", path, ": ", std::strerror(errno))};
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

client::Client Connect(const Globals& globals) {
  client::ClientOptions options;
  options.socket = globals.socket;
  options.timeout = absl::Seconds(globals.timeout_s);
  return client::Client(options);
}

}  // namespace psched::pschedctl
