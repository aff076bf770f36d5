// What every pschedctl command shares: the global flags, the connection to pschedd, and the
// one way a command fails - a CommandError, which main turns into "pschedctl: <message>" and
// exit status 1. Internal to pschedctl; single-threaded.
#pragma once

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/client.h"

namespace psched::pschedctl {

// Thrown inside command handlers only; main turns it into "pschedctl: <message>".
struct CommandError {
  std::string message;
};

// Throws CommandError with the status's message (prefixed "permission denied: " for a
// missing role) unless it is OK.
void CheckStatus(const absl::Status& status);

template <typename T>
T Check(absl::StatusOr<T> result) {
  CheckStatus(result.status());
  return std::move(*result);
}

// The file's bytes; CommandError naming the path and the OS reason when it cannot be read.
std::string ReadFile(const std::string& path);

struct Globals {
  std::string socket;
  double timeout_s = 60;
  std::string output = "table";
  bool json() const { return output == "json"; }
};

client::Client Connect(const Globals& globals);

}  // namespace psched::pschedctl
