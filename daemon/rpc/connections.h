// Connections: every connection pschedd accepted and handed to gRPC, so that Server::Stop can
// hang up the idle ones (server.h).
//
// gRPC owns a connection's fd once it has it and closes it when the connection ends, after
// which the number may be reused. Each entry therefore keeps the socket's device and inode:
// HangUpAll touches an fd only while it still is that socket, and then only shuts it down
// (shutdown(2), not close): gRPC sees the connection end and closes the fd itself.
//
// Thread-safety: Add (accept thread) and HangUpAll (Stop) may run concurrently.
#pragma once

#include <sys/types.h>

#include <unordered_map>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "sync/mutex.h"

namespace psched::daemon {

class Connections {
 public:
  // Records connection `fd` (replacing the entry of a closed connection that had its number).
  void Add(int fd);
  // Shuts every recorded connection that is still open down for reading and writing; returns
  // how many it shut down.
  int HangUpAll();

 private:
  sync::Mutex mu_;
  std::unordered_map<int, std::pair<dev_t, ino_t>> socket_by_fd_ ABSL_GUARDED_BY(mu_);
};

}  // namespace psched::daemon
