// Callers: the caller of every live connection of pschedd, found from a call's peer string.
//
// gRPC C++ 1.51 gives a handler no credentials of a unix-socket peer (its auth context is
// empty and a connection it accepts itself has the peer string "unix:" for every client).
// pschedd therefore accepts connections itself, reads each one's credentials
// (SO_PEERCRED/SO_PEERGROUPS), records the caller here under the connection's fd and only
// then hands the fd to gRPC with grpc::AddInsecureChannelFromFd, whose connections carry
// the peer string "fd:<N>". A handler looks its caller up by that string.
//
// Why the lookup is right under concurrency: the entry for fd N is written before gRPC sees
// the connection, so before any call on it; and while a call is being handled, its stream
// holds the connection's transport and with it the open fd, so N cannot be reused by a new
// connection (whose Register would replace the entry) until that call has finished. Stale
// entries of closed connections are only ever replaced, never read, and there are at most as
// many as the process has fd numbers. A peer string that names no known connection gets a
// caller with no role (every RPC refused).
//
// Thread-safety: Register (accept thread) and Lookup (handlers) may run concurrently.
#pragma once

#include <unordered_map>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "daemon/access/access.h"
#include "sync/mutex.h"

namespace psched::daemon {

class Callers {
 public:
  explicit Callers(AccessPolicy policy) : policy_(std::move(policy)) {}

  // Records the caller of connection `fd` (replacing the entry of a closed connection that
  // had the same fd number) and returns it.
  Caller Register(int fd, const PeerCredentials& peer);
  // The caller of the connection whose gRPC peer string is `peer` ("fd:<N>").
  Caller Lookup(absl::string_view peer) const;

  const AccessPolicy& policy() const { return policy_; }

 private:
  const AccessPolicy policy_;
  mutable sync::Mutex mu_;
  std::unordered_map<int, Caller> by_fd_ ABSL_GUARDED_BY(mu_);
};

}  // namespace psched::daemon
