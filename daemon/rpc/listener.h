// Listener: the unix stream socket pschedd accepts clients on, and the thread that accepts.
//
// gRPC 1.51 cannot adopt an already-listening fd (as socket activation hands over), so
// pschedd always accepts connections itself; the server reads each connection's credentials
// and then passes the connected fd to gRPC (see callers.h). One code path serves both a
// socket the daemon binds and one systemd passes in.
//
// Bind() creates the socket's directory, replaces a stale socket file (nobody answers on it)
// but refuses when another server answers, and sets mode 0660 so the socket's group can
// connect. Thread-safety: Start/Stop from one thread; the callback runs on the accept thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace psched::daemon {

class Listener {
 public:
  // Called with (listening fd, connected fd); the callee owns the connected fd.
  using ConnectionFn = std::function<void(int, int)>;

  static absl::StatusOr<std::unique_ptr<Listener>> Bind(const std::string& path);
  // Takes a listening AF_UNIX stream socket passed by systemd. It is not unlinked at exit:
  // systemd owns the socket file.
  static absl::StatusOr<std::unique_ptr<Listener>> Adopt(int fd);

  ~Listener();

  void Start(ConnectionFn on_connection);
  // Stops accepting and closes the socket; a bound socket file is removed.
  void Stop();

  // The socket path ("" if unknown).
  const std::string& path() const { return path_; }
  bool activated() const { return !owns_path_; }

 private:
  Listener(int fd, std::string path, bool owns_path);
  void AcceptLoop(ConnectionFn on_connection);

  int fd_;
  int wake_[2] = {-1, -1};
  std::string path_;
  bool owns_path_;
  std::thread thread_;
};

}  // namespace psched::daemon
