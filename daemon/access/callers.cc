#include "daemon/access/callers.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace psched::daemon {

Caller Callers::Register(int fd, const PeerCredentials& peer) {
  Caller caller = policy_.Identify(peer);
  sync::MutexLock lock(&mu_);
  by_fd_[fd] = caller;
  return caller;
}

Caller Callers::Lookup(absl::string_view peer) const {
  absl::string_view number = peer;
  int fd = -1;
  if (absl::ConsumePrefix(&number, "fd:") && absl::SimpleAtoi(number, &fd)) {
    sync::MutexLock lock(&mu_);
    auto it = by_fd_.find(fd);
    if (it != by_fd_.end()) return it->second;
  }
  Caller unknown;
  unknown.description = absl::StrCat("an unidentified peer (", peer, ")");
  return unknown;
}

}  // namespace psched::daemon
